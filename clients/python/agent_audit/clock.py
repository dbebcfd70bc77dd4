"""Observation times, monotonic clock readings and sequence numbers, read when an event happens."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Union

from .types import ClockReading

#: Identifies this process's monotonic clock: the server computes a duration only between two
#: readings of one clock id (monotonic readings mean nothing across hosts or reboots).
PROCESS_CLOCK_ID = f"python-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def read_clock(clock_id: str = PROCESS_CLOCK_ID) -> ClockReading:
    """Reads the monotonic clock now."""
    return ClockReading(clock_id=clock_id, nanos=time.monotonic_ns())


def to_rfc3339(moment: Union[str, datetime]) -> str:
    """A DateTime as the server takes it: an RFC 3339 string with a time zone (a naive datetime is refused)."""
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is None:
        raise ValueError("observed_at needs a time zone, e.g. datetime.now(timezone.utc)")
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_rfc3339() -> str:
    """The wall-clock time now, as the server's DateTime wants it (UTC, milliseconds, ``Z``)."""
    return to_rfc3339(datetime.now(timezone.utc))


def parse_rfc3339(value: str) -> datetime:
    # datetime.fromisoformat reads a trailing "Z" only from Python 3.11 on.
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class SequenceCounter:
    """The runtime's root stream sequence of one run: strictly increasing from ``start``.

    Take a number when the event happens, not when it is sent, so that parallel tool calls keep
    their real order. Safe to share between threads.
    """

    def __init__(self, start: int = 1) -> None:
        self._next = start
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value
