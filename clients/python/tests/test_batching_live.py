"""The batching writer against the server: runs driven at once from several threads through one
client are recorded whole, in order, and a late call gets its own LEASE_LOST."""

from __future__ import annotations

import threading
from typing import Any, Dict, List

from agent_audit import AuditApiError, DeclaredToolCall

from .support import LiveTestCase


class BatchingLiveTest(LiveTestCase):
    def test_runs_driven_from_threads_through_one_client_are_recorded_whole(self) -> None:
        runs = [self.queued_run("batching") for _ in range(6)]
        outcomes: Dict[int, Any] = {}
        sent: List[str] = []
        execute = self.worker._transport.execute  # noqa: SLF001 - the test counts the requests

        def counting(operation: Any, variables: Any) -> Any:
            sent.append(operation.name)
            return execute(operation, variables)

        self.worker._transport.execute = counting  # type: ignore[method-assign]  # noqa: SLF001

        def drive(index: int, run_id: str) -> None:
            lease = self.worker.claim_run(run_id, 60)
            self.worker.record_model_started(lease, f"m{index}", 1)
            self.worker.record_model_finished(lease, f"m{index}", tool_calls=[DeclaredToolCall(f"c{index}", "search", {"q": index})])
            self.worker.record_tool_started(lease, f"c{index}", "search", 2, effective_input={"q": index})
            tool = self.worker.record_tool_finished(lease, f"c{index}", {"content": "found"})
            run = self.worker.finish_run(lease, "COMPLETED")
            try:
                self.worker.renew_lease(lease)
                late: Any = None
            except AuditApiError as error:
                late = error
            outcomes[index] = (tool, run, late)

        threads = [threading.Thread(target=drive, args=(index, run_id)) for index, (_, run_id) in enumerate(runs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.worker.close()

        for index, (tool, run, late) in outcomes.items():
            self.assertEqual((tool.tool_call_id, tool.status), (f"c{index}", "COMPLETED"))
            self.assertEqual(run.status, "COMPLETED")
            self.assertIsInstance(late, AuditApiError)
            self.assertEqual(late.code, "LEASE_LOST")
        self.assertEqual(len(outcomes), len(runs))
        # 36 lifecycle calls in fewer requests: those that met in flight went together.
        self.assertIn("RecordEvents", sent)
        self.assertLess(len([name for name in sent if name != "ClaimRun"]), 36)
        for thread_id, _ in runs:
            self.assertEqual([audit.status for audit in self.owner.thread_audits(thread_id).items], ["COMPLETED", "COMPLETED"])
