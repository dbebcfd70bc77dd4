"""A background thread that keeps a run's lease alive and says when it is gone."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Optional

from .clock import parse_rfc3339
from .errors import AuditApiError
from .transport import RetryPolicy
from .types import RunLease

if TYPE_CHECKING:
    from .client import AuditClient

#: Renewal answers after which the lease cannot come back: the run moved on without this worker.
#: Not UNAUTHENTICATED: a refused token (expired, most often) says nothing of the run, whose lease
#: stays this worker's until it expires.
RENEWAL_GONE_CODES = ("LEASE_LOST", "LEASE_EXPIRED", "INVALID_TRANSITION", "NOT_FOUND", "FORBIDDEN")

_log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews a run's lease at about a third of its length, so one or two failed renewals still
    leave time, on a daemon thread (it never keeps a process alive). Each renewal is one attempt
    of at most a third of the lease (or the client's ``RetryPolicy.timeout``, if shorter); after
    a failure the next comes at a third of the time left (at least 1 s later).

    When a renewal answers that the lease is gone (``RENEWAL_GONE_CODES``), it stops, sets
    ``lost`` (a ``threading.Event`` the agent may wait on or poll), keeps the error in
    ``lost_error`` and calls ``on_lost`` once, from its thread. Other failures (transport,
    internal errors) go to ``on_renew_error`` (without one, a warning on the ``agent_audit.lease``
    logger) and the next renewal comes as scheduled.

    When the server refuses the token (UNAUTHENTICATED, e.g. expired), the lease is not lost (it
    stays this worker's until ``lease.expires_at``) but the same token cannot renew it: the keeper
    stops, sets ``token_rejected``, keeps the error in ``token_rejected_error`` and calls
    ``on_token_rejected`` once (without it, as a failed renewal); keep the lease with a client holding a fresh token
    (``LeaseKeeper(fresh_client, keeper.lease, lease_seconds)``).
    """

    def __init__(
        self,
        client: "AuditClient",
        lease: RunLease,
        lease_seconds: int,
        *,
        on_lost: Optional[Callable[[AuditApiError], object]] = None,
        on_renew_error: Optional[Callable[[Exception], object]] = None,
        on_token_rejected: Optional[Callable[[AuditApiError], object]] = None,
    ) -> None:
        self._client = client
        self._lease = lease
        self._lease_seconds = lease_seconds
        # When the lease expires on this process's monotonic clock.
        self._expires_at = time.monotonic() + seconds_left(lease)
        self._on_lost = on_lost
        self._on_renew_error = on_renew_error
        self._on_token_rejected = on_token_rejected
        self._stopped = threading.Event()
        self.lost = threading.Event()
        self.lost_error: Optional[AuditApiError] = None
        self.token_rejected = threading.Event()
        self.token_rejected_error: Optional[AuditApiError] = None
        self._thread = threading.Thread(target=self._keep, name=f"lease-keeper-{lease.run_id}", daemon=True)
        self._thread.start()

    @property
    def lease(self) -> RunLease:
        """The newest lease (its epoch never changes; its expiry moves on)."""
        return self._lease

    def seconds_left(self) -> float:
        """How long the lease still lasts, on this process's monotonic clock (0 once expired)."""
        return max(0.0, self._expires_at - time.monotonic())

    def stop(self) -> None:
        """Stops renewing; the lease itself stays until it expires or the run ends. Does not wait
        for a renewal in flight: its answer is ignored."""
        self._stopped.set()

    def _delay(self) -> float:
        # A third of what is left: counted from the length the server granted (it may clamp the
        # request), read on the database's clock alone, on this process's monotonic clock; never
        # expires_at against this machine's clock, which may be minutes off.
        length = min(float(self._lease_seconds), self._expires_at - time.monotonic())
        return max(min(1.0, self._lease_seconds / 3), length / 3)

    def _renewal_policy(self) -> RetryPolicy:
        # One attempt, given up after a third of the lease: a renewal that hangs (packets dropped,
        # a stalled server) must not outlast the lease; the next comes on the keeper's schedule,
        # at a third of the time left, while the lease is still current.
        policy = self._client.retry
        return replace(policy, max_attempts=1, timeout=min(policy.timeout, max(1.0, self._lease_seconds / 3)))

    def _keep(self) -> None:
        while not self._stopped.wait(self._delay()):
            try:
                sent_at = time.monotonic()  # granted after it was sent: counted from then, it lasts no less
                renewed = self._client.renew_lease(self._lease, self._lease_seconds, retry=self._renewal_policy())
                if not self._stopped.is_set():
                    self._lease = renewed
                    self._expires_at = sent_at + _granted_seconds(renewed)
            except AuditApiError as error:
                if self._stopped.is_set():
                    return
                if error.code in RENEWAL_GONE_CODES:
                    self.lost_error = error
                    self.lost.set()
                    self._stopped.set()
                    if self._on_lost:
                        self._on_lost(error)
                    return
                if error.code == "UNAUTHENTICATED":
                    self.token_rejected_error = error
                    self.token_rejected.set()
                    self._stopped.set()
                    if self._on_token_rejected:
                        self._on_token_rejected(error)
                    else:
                        self._renew_failed(error)
                    return
                self._renew_failed(error)
            except Exception as error:  # noqa: BLE001 - a keeper must outlive an odd failure
                self._renew_failed(error)

    def _renew_failed(self, error: Exception) -> None:
        if self._on_renew_error:
            self._on_renew_error(error)
            return
        # Without a callback (a session's keeper) it would go unseen until the lease expired.
        _log.warning("run %s: renewing its lease failed: %s (the lease expires at %s if no renewal succeeds)",
                     self._lease.run_id, error, self._lease.expires_at,
                     exc_info=None if isinstance(error, AuditApiError) else error)


def seconds_left(lease: RunLease) -> float:
    """How long a lease just received still lasts: as granted, on the server's clock. It may have
    been granted a while ago (handed over after a refused token): this once, this machine's clock
    may say it has less left than it was granted."""
    return max(0.0, min(_granted_seconds(lease), _seconds_until(lease.expires_at)))


def _seconds_until(rfc3339: str) -> float:
    return (parse_rfc3339(rfc3339) - datetime.now(timezone.utc)).total_seconds()


def _granted_seconds(lease: RunLease) -> float:
    """How long the lease lasts from its grant, on the server's clock; by this machine's clock for a
    lease without ``granted_at``."""
    if lease.granted_at is None:
        return _seconds_until(lease.expires_at)
    return (parse_rfc3339(lease.expires_at) - parse_rfc3339(lease.granted_at)).total_seconds()
