"""A refused worker token (UNAUTHENTICATED, e.g. expired) is not a lost lease: offline, with a
client whose renewals the server refuses for its token."""

from __future__ import annotations

import threading
import unittest
from datetime import datetime, timedelta, timezone
from typing import Any, List

from agent_audit import AuditApiError, RetryPolicy, RunLease
from agent_audit.lease import LeaseKeeper


class TokenRefused:
    retry = RetryPolicy()

    def __init__(self) -> None:
        self.renewals = 0

    def renew_lease(self, lease: Any, lease_seconds: Any = None, *, retry: Any = None) -> RunLease:
        self.renewals += 1
        raise AuditApiError("RenewLease: the token expired at 2026-12-05T13:00:00.000Z", code="UNAUTHENTICATED",
                            operation="RenewLease", retryable=False, http_status=401)


class TokenRejectedTest(unittest.TestCase):
    def test_a_refused_token_stops_the_keeper_without_losing_the_lease(self) -> None:
        expires = (datetime.now(timezone.utc) + timedelta(seconds=3)).isoformat().replace("+00:00", "Z")
        lease = RunLease(run_id="run-1", epoch=1, owner="worker-1", expires_at=expires)
        client = TokenRefused()
        lost: List[AuditApiError] = []
        rejected: List[AuditApiError] = []
        called = threading.Event()

        def on_token_rejected(error: AuditApiError) -> None:
            rejected.append(error)
            called.set()

        keeper = LeaseKeeper(client, lease, 3, on_lost=lost.append, on_token_rejected=on_token_rejected)  # type: ignore[arg-type]
        self.assertTrue(called.wait(5))
        self.assertFalse(keeper.lost.is_set())
        self.assertEqual(lost, [])
        self.assertTrue(keeper.token_rejected.is_set())
        self.assertIs(keeper.token_rejected_error, rejected[0])
        self.assertEqual((rejected[0].code, rejected[0].http_status), ("UNAUTHENTICATED", 401))
        # The same token cannot renew: the keeper stopped after the one refusal.
        threading.Event().wait(1.5)
        self.assertEqual(client.renewals, 1)


if __name__ == "__main__":
    unittest.main()
