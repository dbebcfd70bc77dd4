"""The client's own thread: stopped by close (or leaving a ``with`` block), and replaced in a
forked child, whose calls then work instead of waiting forever for a thread that is not there."""

from __future__ import annotations

import os
import sys
import threading
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
        self.wait_for_child(pid)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        # The parent's client still works too.
        self.assertEqual(self.worker.finish_run(parent_lease, "COMPLETED").status, "COMPLETED")

    @unittest.skipUnless(hasattr(os, "fork"), "os.fork is POSIX only")
    def test_a_child_forked_inside_a_run_leaves_the_run_to_its_parent(self) -> None:
        # A child forked inside the block (a tool run in a process of its own) that leaves the
        # block, by sys.exit(), an exception or its end, does not end its parent's run.
        _, run_id = self.queued_run()
        pid = -1
        try:
            with self.worker.start_run(run_id) as run:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, use of fork()"
                    pid = os.fork()
                if pid == 0:
                    sys.exit(0)
                self.wait_for_child(pid)
                during = self.owner.run(run_id)
                assert during is not None
                self.assertEqual(during.status, "RUNNING")
                run.model_started("after-the-child", model="m")
        finally:
            if pid == 0:  # the child, having left the block: never return into unittest
                os._exit(0)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
