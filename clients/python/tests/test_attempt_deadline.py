"""A timeout bounds the whole attempt, its answer's body included: a server that sends its headers,
then trickles the body a byte at a time (each read quick, the answer never ending) is given up on
as a silent one is."""

from __future__ import annotations

import threading
import unittest
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, List

from agent_audit import AuditApiError, AuditClient, LeaseKeeper, RetryPolicy, RunLease

from .support import TricklingServer

# How long a test waits for a call that should give up after 1 s: generous for a loaded machine,
# while the server trickles until the test ends.
PATIENCE = 20.0


def _lease(seconds: int) -> RunLease:
    now = datetime.now(timezone.utc)
    return RunLease(run_id="run-1", epoch=1, owner="worker", expires_at=(now + timedelta(seconds=seconds)).isoformat(),
                    granted_at=now.isoformat())


class TricklingAnswerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = TricklingServer()
        self.addCleanup(self.server.close)
        self.client = AuditClient(self.server.url, "token", batching=False)

    def assert_gives_up(self, call: Callable[[], Any]) -> AuditApiError:
        """``call`` raises TRANSPORT_ERROR while the server still trickles its answer."""
        errors: List[BaseException] = []

        def run() -> None:
            try:
                call()
            except BaseException as error:  # noqa: BLE001 - handed to the test
                errors.append(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(PATIENCE)
        self.assertTrue(self.server.trickling.is_set())
        self.assertFalse(thread.is_alive(), "the call was still reading the trickled answer")
        self.assertEqual(len(errors), 1, errors)
        error = errors[0]
        assert isinstance(error, AuditApiError), error
        self.assertEqual(error.code, "TRANSPORT_ERROR")
        self.assertIn("no answer within 1 s", str(error))
        return error

    def test_finish_run_with_a_timeout_gives_up_on_a_trickled_answer(self) -> None:
        self.assert_gives_up(lambda: self.client.finish_run(_lease(60), "INTERRUPTED", timeout=1))

    def test_a_record_call_with_a_timeout_gives_up_on_a_trickled_answer(self) -> None:
        self.assert_gives_up(lambda: self.client.record_tool_error(_lease(60), "call-1", {"message": "stopped"}, timeout=1))

    def test_the_retry_policy_timeout_bounds_each_attempt_with_its_body(self) -> None:
        client = AuditClient(self.server.url, "token", retry=RetryPolicy(max_attempts=2, base_delay=0.01, timeout=1))
        error = self.assert_gives_up(lambda: client.finish_run(_lease(60), "INTERRUPTED"))
        self.assertEqual(error.attempts, 2)

    def test_a_lease_renewal_gives_up_before_the_lease_expires(self) -> None:
        # A 3 s lease: each renewal is one attempt of at most 1 s (a third of the lease).
        failures: List[Exception] = []
        failed = threading.Event()

        def on_renew_error(error: Exception) -> None:
            failures.append(error)
            failed.set()

        keeper = LeaseKeeper(self.client, _lease(3), 3, on_renew_error=on_renew_error)
        self.addCleanup(keeper.stop)
        self.assertTrue(failed.wait(PATIENCE), "the renewal was still reading the trickled answer")
        error = failures[0]
        assert isinstance(error, AuditApiError), error
        self.assertEqual(error.code, "TRANSPORT_ERROR")
        self.assertIn("no answer within 1 s", str(error))


if __name__ == "__main__":
    unittest.main()
