"""Deleting a thread as its owner: the receipt, and NOT_FOUND for a second deletion (docs/deletion.md)."""

from __future__ import annotations

from agent_audit import AuditApiError, DeletionReceipt

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
