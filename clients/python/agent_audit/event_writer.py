"""One writer of lifecycle events per client, batching by itself (docs/semantics.md, "Batches").

Idle, an event goes at once as its own mutation (no timer); the events written while a request
is in flight go together in the next one (``recordEvents``), in the order they were written, as
many as fit in ``MAX_BATCH_BYTES``; an event that alone is larger goes as its own mutation. Each
call gets its own result or the ``AuditApiError`` its own mutation would have raised. A full
queue makes writers wait for room; ``flush`` waits until every event written is answered.
A claim is an event too: its run's later calls carry the epoch it returns, so they are written
after it answers and go in a later request, while other threads' calls share its.
Lease renewals do not come here (``AuditClient.renew_lease`` sends them at once): queued behind
another run's slow request, a short lease would expire.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, cast

from . import _operations as ops
from .errors import TRANSPORT_ERROR, AuditApiError, no_answer_within
from .transport import Transport, encode_json

#: The most bytes of events (as JSON) one ``recordEvents`` request carries. The server refuses a
#: body over max(8 MiB, 4 × MAX_JSON_BYTES) (README, "Limits"), so never one under 8 MiB; the
#: 2 MiB left over covers the request's query text and envelope many times.
MAX_BATCH_BYTES = 6 * 1024 * 1024


class _Pending:
    __slots__ = ("kind", "operation", "variables", "size", "done", "collected", "result", "error", "failure")

    def __init__(self, kind: str, operation: ops.Operation, variables: Mapping[str, Any]) -> None:
        self.kind = kind
        self.operation = operation
        self.variables = variables
        self.size = len(encode_json({kind: variables["input"]}))  # in a batch (MAX_BATCH_BYTES)
        self.done = False
        self.collected = False  # its caller has its answer (or gave up waiting)
        self.result: Any = None
        self.error: Optional[BaseException] = None
        #: Its request's last failed attempt, named to a caller that gives up waiting (its timeout).
        self.failure: Optional[AuditApiError] = None

    def failed(self, error: AuditApiError) -> None:
        self.failure = error


class EventWriter:
    """A background thread sends the queue; callers block on their own event's answer. The thread
    starts with the first write and ends with ``close``; a forked child starts its own. Where no
    thread can start (Python 3.12 at interpreter shutdown), each write is sent by its caller."""

    def __init__(self, transport: Transport, *, max_batch: int = 500, max_queued: int = 2000) -> None:
        self._transport = transport
        self._max_batch = min(500, max(1, max_batch))
        self._max_queued = max(1, max_queued)
        self._closed = False
        self._reset()
        _WRITERS.add(self)

    def _reset(self) -> None:
        # Also in a forked child: the parent's thread does not exist there, its queued events are
        # the parent's to send, and the lock may have been held by a thread that is gone.
        self._queue: Deque[_Pending] = deque()
        self._sending: List[_Pending] = []  # the request in flight
        self._lock = threading.Condition()
        self._thread: Optional[threading.Thread] = None

    def write(self, kind: str, operation: ops.Operation, variables: Mapping[str, Any], timeout: Optional[float] = None) -> Any:
        """``kind`` is the event's key in ``LifecycleEventInput``; ``variables`` its own mutation's
        (``{"input": event}``). Past ``timeout`` seconds the caller stops waiting
        (``no_answer_within``): an event still queued is then never sent; one in flight may still
        be applied."""
        event = _Pending(kind, operation, variables)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._queue) < self._max_queued, _left(deadline)):
                raise no_answer_within(operation.name, cast(float, timeout))  # not sent: no failure of its own
            if self._closed:
                raise RuntimeError(f"{operation.name}: the AuditClient is closed")
            if self._thread is not None or self._start_thread():
                # Inside the try: a Ctrl-C between queueing and waiting must still mark the event
                # collected, which the writer thread waits for before it sends the next batch.
                try:
                    self._queue.append(event)
                    self._lock.notify_all()
                    if not self._lock.wait_for(lambda: event.done, _left(deadline)):
                        raise no_answer_within(operation.name, cast(float, timeout), event.failure)
                finally:
                    # A caller that stopped waiting (its timeout, or a stop: SystemExit, Ctrl-C)
                    # before its event was sent: it is never sent, nor waited for by flush or close.
                    if not event.done and event in self._queue:
                        self._queue.remove(event)
                    event.collected = True
                    self._lock.notify_all()
        if not event.done:  # no writer thread could start: sent from the caller's, alone, within its timeout
            self._send_alone(event, deadline, timeout)
        if event.error is not None:
            raise event.error
        return event.result

    def _start_thread(self) -> bool:
        thread = threading.Thread(target=self._run, name="agent-audit-event-writer", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            # Python 3.12 starts no thread at interpreter shutdown: a client's first call from an
            # atexit handler, or from a thread still running after the main one returned.
            return False
        self._thread = thread
        return True

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Returns once every event written so far has been answered (True), or after ``timeout``
        seconds (False). An event whose caller stopped waiting (its ``timeout``, a stop) is not
        waited for: its request may go on retrying for the whole policy."""
        with self._lock:
            return self._lock.wait_for(self._answered, timeout)

    def _answered(self) -> bool:
        return not self._queue and all(event.collected for event in self._sending)

    def close(self, timeout: Optional[float] = None) -> None:
        """Flushes, then ends the thread; later writes raise RuntimeError. Past ``timeout`` seconds
        (a shutdown's bound) the events not yet answered are given up: those queued are never
        sent, their callers raise ``no_answer_within``, and the thread (a daemon) is not waited for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            answered = self._lock.wait_for(self._answered, timeout)
            for event in self._queue:
                event.error = no_answer_within(event.operation.name, cast(float, timeout))
                event.done = True
            self._queue.clear()
            self._closed = True
            self._lock.notify_all()
            # A request whose callers all gave up is not waited for (nor its thread, a daemon).
            thread = None if self._sending else self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(None if answered else _left(deadline))

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: bool(self._queue) or self._closed)
                if not self._queue:
                    return
                batch = self._next_batch()
                self._sending = batch
                self._lock.notify_all()  # room for waiting writers
            self._send(batch)
            with self._lock:
                for event in batch:
                    event.done = True
                self._sending = []
                self._lock.notify_all()
                self._let_answered_callers_write(batch)

    def _next_batch(self) -> List[_Pending]:
        # At least one event, at most max_batch, within MAX_BATCH_BYTES.
        batch = [self._queue.popleft()]
        size = batch[0].size
        while self._queue and len(batch) < self._max_batch and size + self._queue[0].size <= MAX_BATCH_BYTES:
            size += self._queue[0].size
            batch.append(self._queue.popleft())
        return batch

    def _let_answered_callers_write(self, batch: List[_Pending]) -> None:
        # The callers just answered write their next events as soon as they run (a run's next
        # event waits for its previous one): once each has its answer, letting them run until the
        # queue stops growing puts those events in the next request together, where taking the
        # queue at once would send the first alone. A caller busy elsewhere is not waited for.
        self._lock.wait_for(lambda: all(event.collected for event in batch))
        while True:
            queued = len(self._queue)
            self._lock.release()
            try:
                time.sleep(0)
            finally:
                self._lock.acquire()
            if len(self._queue) == queued:
                return

    def _send_alone(self, event: _Pending, deadline: Optional[float] = None, timeout: Optional[float] = None) -> None:
        try:
            if deadline is None:
                event.result = self._transport.execute(event.operation, event.variables, on_failure=event.failed)
                return
            try:
                event.result = self._transport.execute(event.operation, event.variables, timeout=_left(deadline), on_failure=event.failed)
            except AuditApiError as error:
                if error.code == TRANSPORT_ERROR and _left(deadline) == 0:  # named by the caller's bound
                    raise no_answer_within(event.operation.name, cast(float, timeout), event.failure)
                raise
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            event.error = error

    def _send(self, batch: List[_Pending]) -> None:
        if len(batch) == 1:
            self._send_alone(batch[0])
            return
        events = [{event.kind: event.variables["input"]} for event in batch]
        try:
            results, attempts, status = self._transport.execute_answered(ops.RECORD_EVENTS, {"events": events}, _each_failed(batch))
        except AuditApiError as error:
            if error.code != "BAD_USER_INPUT":
                for event in batch:  # the whole request failed: each event gets its error
                    event.error = error
                return
            # A value its type refuses (an observed_at the DateTime scalar does not take) makes
            # the server refuse the whole request before applying any event. Sent alone, each
            # event gets its own mutation's answer, so one caller's bad value fails only its own
            # call; one at a time, in the order written, so each run's events keep their order.
            for event in batch:
                self._send_alone(event)
            return
        except BaseException as error:  # noqa: BLE001 - the whole request failed: each event gets it
            for event in batch:
                event.error = error
            return
        unapplied: List[_Pending] = []
        for event, result in zip(batch, results):
            refusal: Optional[Dict[str, Optional[str]]] = result.get("error")
            if refusal and refusal["code"] == "UNAVAILABLE":
                unapplied.append(event)
            elif refusal:
                # With the batch request's sends and HTTP status: a LEASE_LOST after more than
                # one send may mean the first one committed. The result carries what its own
                # mutation's extensions would.
                code, message, run_status = str(refusal["code"]), str(refusal["message"]), refusal.get("runStatus")
                extensions = {"code": code, **({"runStatus": run_status} if run_status else {})}
                refused = AuditApiError(
                    f"{event.operation.name}: {message}",
                    code=code,
                    operation=event.operation.name,
                    retryable=False,
                    http_status=status,
                    errors=[{"message": message, "extensions": extensions}],
                )
                refused.attempts = attempts
                event.error = refused
            else:
                event.result = result.get("audit") or result.get("run") or result.get("lease")
        # The batch's tail the server left unapplied (a later call of it failed for the moment
        # after earlier ones committed) goes again, before anything written since.
        if unapplied:
            self._send(unapplied)


def _each_failed(batch: List[_Pending]) -> Callable[[AuditApiError], None]:
    def failed(error: AuditApiError) -> None:
        for event in batch:
            event.failed(error)
    return failed


def _left(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


# Every live writer, so that a forked child resets each (a weak set: a writer is not kept alive).
_WRITERS: "weakref.WeakSet[EventWriter]" = weakref.WeakSet()


def _reset_writers_in_child() -> None:
    for writer in list(_WRITERS):
        writer._reset()  # pyright: ignore[reportPrivateUsage]  # the writer's own state


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_reset_writers_in_child)
