"""The client's own thread: stopped by close (or leaving a ``with`` block), and replaced in a
forked child, whose calls then work instead of waiting forever for a thread that is not there."""

from __future__ import annotations

import os
import signal
import threading
import time
import unittest
import uuid
import warnings

from agent_audit import AuditApiError, AuditClient

from .support import LiveTestCase


class ClientThreadsTest(LiveTestCase):
    def test_closed_clients_leave_no_thread_behind(self) -> None:
        before = threading.active_count()
        for _ in range(20):
            client = AuditClient(self.server.url, self.server.token(self.worker_sub, "worker"))
            with self.assertRaises(AuditApiError) as refused:  # a lifecycle call: through the writer
                client.claim_run(str(uuid.uuid4()), 30)
            self.assertEqual(refused.exception.code, "NOT_FOUND")
            client.close()
        self.assertLessEqual(threading.active_count(), before)

    def test_a_client_used_as_a_context_manager_records_then_refuses_calls_after_it(self) -> None:
        _, run_id = self.queued_run()
        with AuditClient(self.server.url, self.server.token(self.worker_sub, "worker")) as client:
            lease = client.claim_run(run_id, 30)
            client.record_model_started(lease, "m1", 1, model="m")
            client.finish_run(lease, "COMPLETED")
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        with self.assertRaisesRegex(RuntimeError, "closed"):
            client.record_model_started(lease, "m2", 2)
        with self.assertRaisesRegex(RuntimeError, "closed"):
            client.run(run_id)
        client.close()  # closing again changes nothing

    @unittest.skipUnless(hasattr(os, "fork"), "os.fork is POSIX only")
    def test_a_forked_child_records_through_the_client_its_parent_used(self) -> None:
        _, run_id = self.queued_run()
        _, parent_run_id = self.queued_run()
        parent_lease = self.worker.claim_run(parent_run_id, 30)  # the parent's writer thread runs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, use of fork()"
            pid = os.fork()
        if pid == 0:  # the child: exit 0 once its run is recorded, never return into unittest
            code = 1
            try:
                lease = self.worker.claim_run(run_id, 30)
                self.worker.record_model_started(lease, "child-model", 1, model="m")
                self.worker.finish_run(lease, "COMPLETED")
                code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.fail("the forked child's calls hung")
        self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the child failed ({status})")
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        # The parent's client still works too.
        self.assertEqual(self.worker.finish_run(parent_lease, "COMPLETED").status, "COMPLETED")
