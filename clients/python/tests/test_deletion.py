"""Deleting a thread as its owner: the receipt, NOT_FOUND for a second deletion, and a worker
writing to the thread's run when it goes (docs/deletion.md)."""

from __future__ import annotations

from typing import List

from agent_audit import AuditApiError, DeletionReceipt, LeaseLostError

from .support import LiveTestCase


class DeletionTest(LiveTestCase):
    def test_delete_thread_returns_the_receipt_and_a_second_deletion_is_not_found(self) -> None:
        thread_id, run_id = self.queued_run()
        self.owner.append_message(thread_id, "USER", {"text": "forget me"})
        receipt = self.owner.delete_thread(thread_id)
        self.assertIsInstance(receipt, DeletionReceipt)
        self.assertEqual((receipt.thread_id, receipt.runs, receipt.audits, receipt.tool_calls, receipt.messages), (thread_id, 1, 0, 0, 1))
        self.assertRegex(receipt.verified_at, r"^\d{4}-\d\d-\d\dT")
        for gone in (lambda: self.owner.run(run_id), lambda: self.owner.delete_thread(thread_id)):
            with self.assertRaises(AuditApiError) as refused:
                gone()
            self.assertEqual(refused.exception.code, "NOT_FOUND")

    def test_a_write_after_the_thread_was_deleted_loses_the_lease_and_the_block_leaves_the_run_alone(self) -> None:
        thread_id, run_id = self.queued_run()
        told: List[str] = []
        with self.worker.start_run(run_id, lease_seconds=60, on_lost=lambda error: told.append(error.code)) as run:
            run.model_started("model-1", model="gpt-x", input={})
            self.owner.delete_thread(thread_id)
            with self.assertRaises(LeaseLostError) as raised:
                run.model_finished("model-1", output={"text": "gone"})
            self.assertEqual((raised.exception.code, raised.exception.attempts), ("NOT_FOUND", 1))
            self.assertTrue(run.lost.is_set())
            with self.assertRaises(LeaseLostError):
                run.check()
        self.assertEqual(told, ["NOT_FOUND"])
        # Leaving the block did not try to finish a run that no longer exists.
        self.assertIsNone(run.finish_error)
