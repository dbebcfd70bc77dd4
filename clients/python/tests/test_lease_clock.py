"""The lease keeper on a worker whose clock is minutes off the database's, which stamps a lease's
``granted_at`` and ``expires_at``: offline, with a client that grants what a server would."""

from __future__ import annotations

import threading
import unittest
from datetime import datetime, timedelta, timezone
from typing import Any, List

from agent_audit import RetryPolicy, RunLease
from agent_audit.lease import LeaseKeeper

#: The database's clock is 5 minutes ahead of this machine's (this worker's clock is behind).
DATABASE_AHEAD = timedelta(minutes=5)


def rfc3339(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def granted(seconds: int) -> RunLease:
    """A lease the database granted now, on its clock, for ``seconds``."""
    now = datetime.now(timezone.utc) + DATABASE_AHEAD
    return RunLease(run_id="run-1", epoch=1, owner="worker-1", expires_at=rfc3339(now + timedelta(seconds=seconds)), granted_at=rfc3339(now))


class ClampingServer:
    """Grants at most 3 s, as a server with LEASE_MAX_SECONDS=3 does."""

    retry = RetryPolicy()

    def __init__(self) -> None:
        self.asked: List[Any] = []
        self.renewed_twice = threading.Event()

    def renew_lease(self, lease: Any, lease_seconds: Any = None, *, retry: Any = None) -> RunLease:
        self.asked.append(lease_seconds)
        if len(self.asked) >= 2:
            self.renewed_twice.set()
        return granted(min(3, lease_seconds))


class WorkerClockBehindTest(unittest.TestCase):
    def test_a_clamped_lease_is_renewed_within_its_granted_length(self) -> None:
        server = ClampingServer()
        # Asked for 600 s, granted 3: timed by expires_at against this machine's clock, the lease
        # looked 303 s long and the first renewal came 100 s after the lease had expired.
        keeper = LeaseKeeper(server, granted(3), 600)  # type: ignore[arg-type]
        try:
            self.assertTrue(server.renewed_twice.wait(10), "the keeper let the 3 s lease expire")
        finally:
            keeper.stop()
        self.assertEqual(server.asked[:2], [600, 600])


if __name__ == "__main__":
    unittest.main()
