"""The lease keeper: renewing in the background, and telling the agent to stop when the lease is gone."""

from __future__ import annotations

import gc
import threading
import time
from typing import List, Tuple

from agent_audit import AuditApiError, AuditClient, LeaseLostError, parse_rfc3339

from .support import FAST_RETRY, LiveTestCase, LossyProxy, carries


class LeaseTest(LiveTestCase):
    def test_the_keeper_renews_a_short_lease_past_its_length(self) -> None:
        _, run_id = self.queued_run()
        # Renewed every 3.3 s, each renewal with 6.7 s to commit before the lease expires: room for a
        # loaded machine (a 4 s lease left 2.7 s).
        with self.worker.start_run(run_id, lease_seconds=10) as run:
            first_expiry = run.lease.expires_at
            time.sleep(11.5)  # past the lease's length, and past a sweep (every second)
            run.model_started("model-1", model="gpt-x", input={})
            run.model_finished("model-1")
            self.assertFalse(run.lost.is_set())
            self.assertGreater(parse_rfc3339(run.lease.expires_at), parse_rfc3339(first_expiry))
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_a_cancelled_run_sets_lost_and_every_later_call_raises(self) -> None:
        _, run_id = self.queued_run()
        told: list = []
        reported = threading.Event()

        def on_lost(error: AuditApiError) -> None:
            told.append(error.code)
            reported.set()

        with self.assertRaises(LeaseLostError) as raised:
            # Renewed every 5 s: long enough that the lease cannot expire before the cancel on a
            # loaded machine (a 3 s lease left 2 s), and the next renewal finds the run cancelled.
            with self.worker.start_run(run_id, lease_seconds=15, on_lost=on_lost) as run:
                run.model_started("model-1", model="gpt-x", input={})
                self.owner.cancel_run(run_id)
                # The agent waits on the session's event, as a tool would between steps.
                self.assertTrue(run.lost.wait(timeout=30), "the keeper did not notice the cancel")
                run.model_finished("model-1")
        self.assertEqual(raised.exception.code, "LEASE_LOST")
        self.assertFalse(raised.exception.retryable)
        self.assertTrue(reported.wait(timeout=1))
        self.assertEqual(told, ["LEASE_LOST"])
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "CANCELLED")  # leaving the block did not try to finish it

    def test_a_write_that_finds_the_run_cancelled_raises_lease_lost(self) -> None:
        _, run_id = self.queued_run()
        with self.worker.start_run(run_id, lease_seconds=60) as run:
            self.owner.cancel_run(run_id)
            with self.assertRaises(LeaseLostError) as raised:
                run.model_started("model-1", model="gpt-x", input={})
            self.assertEqual(raised.exception.code, "LEASE_LOST")
            self.assertEqual(raised.exception.attempts, 1)
            self.assertTrue(run.lost.is_set())
            with self.assertRaises(LeaseLostError):
                run.check()

    def test_on_lost_runs_once_on_the_thread_whose_write_found_the_lease_gone(self) -> None:
        _, run_id = self.queued_run()
        told: List[Tuple[str, str, str]] = []

        # Its value is ignored: a bridge such as ``loop.call_soon_threadsafe`` returns a Handle.
        def on_lost(error: LeaseLostError) -> bool:
            told.append((threading.current_thread().name, error.run_id, error.code))
            return True

        with self.worker.start_run(run_id, lease_seconds=60, on_lost=on_lost) as run:
            self.owner.cancel_run(run_id)
            with self.assertRaises(LeaseLostError):
                run.model_started("model-1", model="gpt-x", input={})
            with self.assertRaises(LeaseLostError):
                run.model_started("model-2", model="gpt-x", input={})
        self.assertEqual(told, [(threading.current_thread().name, run_id, "LEASE_LOST")])

    def test_a_renewal_that_hangs_is_given_up_in_time_for_the_next_to_keep_the_lease(self) -> None:
        # A renewal whose answer never comes (packets dropped, a server stalled) waits at most a
        # third of the lease, not the client's 30 s per attempt: the next renewal, sent while the
        # lease is still current, keeps it.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        release = threading.Event()
        self.addCleanup(release.set)  # before the proxy closes (cleanups run last first)
        held = threading.Event()

        def hold(body: bytes) -> None:
            if carries(body, "RenewLease"):  # the first renewal only: the next are the same body
                held.set()
                release.wait(90)

        proxy.on_first_send = hold
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)
        self.addCleanup(worker.close)
        with worker.start_run(run_id, lease_seconds=12) as run:
            claimed_expiry = run.lease.expires_at
            self.assertTrue(held.wait(30), "no renewal was sent")
            for _ in range(600):
                if run.lease.expires_at != claimed_expiry or run.lost.is_set():
                    break
                time.sleep(0.1)
            self.assertFalse(run.lost.is_set(), f"the lease was lost: {run.lost_error}")
            self.assertNotEqual(run.lease.expires_at, claimed_expiry)
            run.model_started("model-1", model="gpt-x", input={})
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_a_failed_renewal_is_logged_not_swallowed(self) -> None:
        # The session's keeper has no on_renew_error: a renewal that failed (here a gateway's 503,
        # once) went unseen, and a worker whose renewals all failed learned of it only from the
        # LEASE_EXPIRED that followed.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="gateway_first")
        self.addCleanup(proxy.close)
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)
        with self.assertLogs("agent_audit", "WARNING") as logged:
            # Renewed every 5 s: the lease outlives the failed renewal and the next one on a loaded
            # machine (a 3 s lease left 2 s for both).
            with worker.start_run(run_id, lease_seconds=15):
                deadline = time.monotonic() + 30
                while not logged.records and time.monotonic() < deadline:
                    time.sleep(0.1)
        self.assertIn(run_id, logged.output[0])
        self.assertIn("HTTP 503", logged.output[0])
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_a_session_dropped_unfinished_stops_renewing_so_its_run_expires(self) -> None:
        # A session neither finished nor used as a ``with`` block was held by its keeper's thread
        # and renewed for the life of the process (a long-lived prefork worker): its run never ended.
        _, run_id = self.queued_run()
        run = self.worker.start_run(run_id, lease_seconds=2)
        run.model_started("model-1", model="gpt-x", input={})
        del run
        gc.collect()
        after = self.run_once_ended(run_id)
        self.assertEqual(after.status, "FAILED")
        self.assertEqual((after.error or {}).get("code"), "LEASE_EXPIRED")
