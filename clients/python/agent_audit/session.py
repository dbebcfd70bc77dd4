"""One claimed run: its lease kept alive, its sequence numbers, its events, and its end."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Type, TypeVar, cast

from . import _operations as ops
from .client import READ_NOW, ObservedAt, check_values
from .clock import SequenceCounter
from .errors import RUN_GONE_CODES, AuditApiError, LeaseLostError
from .lease import LeaseKeeper, seconds_left
from .types import (
    JSON,
    ClockReading,
    ToolCallLike,
    ModelAudit,
    ModelFinishedStatus,
    Run,
    RunLease,
    RunTerminalStatus,
    ToolAudit,
    tool_calls_json,
)

if TYPE_CHECKING:
    from .client import AuditClient


#: A stop, not a failure: the block ends the run INTERRUPTED (resumable). asyncio delivers a
#: task's ``cancel()`` (``asyncio.wait_for``'s timeout of it, Ctrl-C under ``asyncio.run``) to the
#: task's code as CancelledError; a process told to stop exits by SystemExit (``sys.exit()`` in a
#: SIGTERM handler, gunicorn's worker on SIGQUIT, Celery's WorkerShutdown); a generator whose
#: consumer stops reading it (``break``, ``close()``, collected) is left by GeneratorExit.
_STOPS = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)

_T = TypeVar("_T")


class RunSession:
    """A run this worker claimed, as a context manager that ends it.

    ``with worker.start_run(run_id) as run:`` claims the run (with a ``claimId``, so a lost answer
    is retried safely) and renews its lease in the background. On leaving the block the run is
    finished: COMPLETED on a normal exit (with ``run.state_messages``), INTERRUPTED on
    ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` (a generator its consumer closed) or
    ``asyncio.CancelledError`` (a cancelled task), FAILED with
    ``{"name", "message"}`` on any other exception, which is then re-raised. A run already
    ended by ``finish`` is left as it is, and so is the run when a child forked inside the block
    leaves it: the run is its parent's to end.

    When the lease is gone (the keeper's renewal or a write answered LEASE_LOST or
    LEASE_EXPIRED: the run was cancelled, expired, or is no longer this worker's; or NOT_FOUND:
    its thread was deleted), ``lost`` is
    set, ``on_lost`` is called once with a ``LeaseLostError`` (on the thread that found the lease
    gone: the keeper's, or the one whose call got the refusal) and every later call raises
    ``LeaseLostError``: stop the agent's work. The run is then not finished (it already ended, or
    is not this worker's to end).

    Each event method takes its sequence number from ``sequence`` and reads the wall clock and
    the monotonic clock when it is called, unless given, and bounds the wait for its answer by
    ``timeout`` (seconds) as ``AuditClient``'s calls do.
    """

    def __init__(
        self,
        client: "AuditClient",
        lease: RunLease,
        lease_seconds: int,
        *,
        first_sequence: int = 1,
        on_lost: Optional[Callable[[LeaseLostError], object]] = None,
        stop_timeout: Optional[float] = None,
    ) -> None:
        self.client = client
        #: Seconds the finish of a block left by a stop may take (a shutdown's grace period); at
        #: most what is left of the lease, the bound without it.
        self.stop_timeout = stop_timeout
        self.run_id = lease.run_id
        self.sequence = SequenceCounter(first_sequence)
        #: The final state's messages, sent with the COMPLETED or FAILED finish on exit.
        self.state_messages: List[JSON] = []
        #: Set when the lease is gone; the agent may poll it or wait on it.
        self.lost = threading.Event()
        self.lost_error: Optional[AuditApiError] = None
        #: The run as its finish returned it, once finished.
        self.finished: Optional[Run] = None
        #: Why the finish on leaving the block after an exception failed (that exception is kept).
        self.finish_error: Optional[Exception] = None
        self._ended = False
        #: Set while ``finish`` is sent and once it ended the run: later events are refused, and
        #: what they find is not a lost lease.
        self._ending = False
        self._on_lost = on_lost
        self._lost_lock = threading.Lock()
        # The process whose block ends the run: a child forked inside the block leaves it too
        # (sys.exit(), an exception), with the run still its parent's.
        self._pid = os.getpid()
        # The keeper's thread holds the session weakly: a session dropped unfinished (not used as a
        # ``with`` block) stops renewing once it is garbage, so its lease expires and the server's
        # sweep ends the run, where it would be renewed for the life of the process.
        lose = weakref.WeakMethod(self._lose)

        def on_keeper_lost(error: AuditApiError) -> None:
            session_lose = lose()
            if session_lose is not None:
                session_lose(error)

        try:
            self._keeper = LeaseKeeper(client, lease, lease_seconds, on_lost=on_keeper_lost)
        except RuntimeError as error:
            # No thread can start to renew the lease (Python 3.12 at interpreter shutdown, no
            # resources left): the claimed run is handed back rather than left RUNNING unrenewed,
            # within a stop's bound: past the lease's expiry the finish could only be refused.
            try:
                client.finish_run(lease, "INTERRUPTED", error={"name": type(error).__name__, "message": str(error)},
                                  timeout=self._stop_bound(seconds_left(lease)))
            except Exception:  # noqa: BLE001 - its lease, unrenewed, expires instead
                pass
            raise
        weakref.finalize(self, self._keeper.stop)

    @classmethod
    def claim(
        cls,
        client: "AuditClient",
        run_id: str,
        lease_seconds: int = 30,
        *,
        claim_id: Optional[str] = None,
        first_sequence: int = 1,
        on_lost: Optional[Callable[[LeaseLostError], object]] = None,
        stop_timeout: Optional[float] = None,
        timeout: Optional[float] = None,
    ) -> "RunSession":
        # Python 3.12 starts no thread at interpreter shutdown (in an atexit handler, or a thread
        # still running after the main one returned): found before the claim, the run stays
        # QUEUED for another worker, where the keeper's thread would fail after it.
        probe = threading.Thread(target=lambda: None, name="agent-audit-thread-check", daemon=True)
        probe.start()
        probe.join()
        lease = client.claim_run(run_id, lease_seconds, claim_id, timeout=timeout)
        return cls(client, lease, lease_seconds, first_sequence=first_sequence, on_lost=on_lost, stop_timeout=stop_timeout)

    @property
    def lease(self) -> RunLease:
        return self._keeper.lease

    def check(self) -> None:
        """Raises ``LeaseLostError`` if the lease is gone; call it between the agent's steps."""
        if self.lost_error is not None:
            raise LeaseLostError(self.run_id, self.lost_error)

    # ---- Events ----

    def model_started(
        self,
        operation_id: str,
        *,
        model: Optional[str] = None,
        input: JSON = None,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ModelAudit:
        """A model call starts; ``operation_id`` is unique within the run."""
        number = self._sequence(ops.RECORD_MODEL_STARTED, {"input": input}, observed_at, sequence)
        return self._write(lambda: self.client.record_model_started(
            self.lease, operation_id, number, model=model, input=input, observed_at=observed_at, clock=clock, timeout=timeout))

    def model_finished(
        self,
        operation_id: str,
        *,
        output: JSON = None,
        tool_calls: Optional[Sequence[ToolCallLike]] = None,
        status: ModelFinishedStatus = "COMPLETED",
        error: JSON = None,
        usage: JSON = None,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ModelAudit:
        """The model call ends, declaring its tool calls (record this before starting them)."""
        json_fields = {"output": output, "error": error, "usage": usage, "toolCalls": tool_calls_json(list(tool_calls or []))}
        number = self._sequence(ops.RECORD_MODEL_FINISHED, json_fields, observed_at, sequence)
        return self._write(lambda: self.client.record_model_finished(
            self.lease, operation_id, status=status, output=output, error=error, usage=usage,
            tool_calls=tool_calls, sequence=number, observed_at=observed_at, clock=clock, timeout=timeout))

    def tool_started(
        self,
        tool_call_id: str,
        name: str,
        *,
        effective_input: JSON = None,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """A declared tool call starts, with the input it really runs with."""
        number = self._sequence(ops.RECORD_TOOL_STARTED, {"effectiveInput": effective_input}, observed_at, sequence)
        return self._write(lambda: self.client.record_tool_started(
            self.lease, tool_call_id, name, number, effective_input=effective_input, observed_at=observed_at, clock=clock, timeout=timeout))

    def tool_finished(
        self,
        tool_call_id: str,
        output: JSON,
        *,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """The tool returned its message envelope (``status: "error"`` in it is a controlled failure)."""
        number = self._sequence(ops.RECORD_TOOL_FINISHED, {"output": output}, observed_at, sequence)
        return self._write(lambda: self.client.record_tool_finished(
            self.lease, tool_call_id, output, sequence=number, observed_at=observed_at, clock=clock, timeout=timeout))

    def tool_error(
        self,
        tool_call_id: str,
        error: JSON,
        *,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """The tool raised, timed out or was interrupted: a bare error, settled by the run's end."""
        number = self._sequence(ops.RECORD_TOOL_ERROR, {"error": error}, observed_at, sequence)
        return self._write(lambda: self.client.record_tool_error(
            self.lease, tool_call_id, error, sequence=number, observed_at=observed_at, clock=clock, timeout=timeout))

    def finish(
        self,
        status: RunTerminalStatus = "COMPLETED",
        *,
        error: JSON = None,
        state_messages: Optional[List[JSON]] = None,
        timeout: Optional[float] = None,
    ) -> Optional[Run]:
        """Ends the run now (e.g. INTERRUPTED after an interrupt) and stops renewing its lease.

        Returns the ended run, or None when the run had already ended as asked: the answer was
        lost and the retry found the run ended with ``status`` (the refusal's ``run_status``).
        A run ended otherwise meanwhile (a cancel, an expiry) raises ``LeaseLostError``. Once it is
        called, the session's event methods raise RuntimeError, and a refusal met by an event sent
        just before it is not a lost lease (``on_lost`` is not called for it). ``timeout`` bounds
        the wait for its answer (``AuditClient.finish_run``).
        """
        self._keeper.stop()
        self.check()
        self._ending = True
        messages = self.state_messages if state_messages is None else state_messages
        try:
            self.finished = self.client.finish_run(self.lease, status, error=error, state_messages=messages, timeout=timeout)
        except AuditApiError as refused:
            if refused.lease_gone and refused.run_status == status:
                # A retry of a finish that ended the run: ended as asked, by this session.
                self._ended = True
                return None
            if refused.code in RUN_GONE_CODES:
                self._lose(refused)
                raise LeaseLostError(self.run_id, refused) from refused
            self._ending = False  # not ended (or not known to be): the session goes on as it was
            raise
        self._ended = True
        return self.finished

    # ---- The context manager ----

    def __enter__(self) -> "RunSession":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:  # never swallows the exception
        if os.getpid() != self._pid:
            return
        self._keeper.stop()
        if self._ended or self.lost_error is not None:
            return
        if exc is None:
            self.finish("COMPLETED")
            return
        if isinstance(exc, AuditApiError) and exc.lease_gone:
            return
        stopped = isinstance(exc, _STOPS)
        try:
            self.finish("INTERRUPTED" if stopped else "FAILED", error={"name": type(exc).__name__, "message": str(exc)},
                        timeout=self._stop_bound(self._keeper.seconds_left()) if stopped else None)
        except Exception as error:  # noqa: BLE001 - the agent's own exception is the one to see
            self.finish_error = error

    async def __aenter__(self) -> "RunSession":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        """As leaving the ``with`` block, but the run's finish (a request, retried by the client's
        RetryPolicy) is sent from a thread of its own, so the loop runs on. A task cancelled (or a
        process told to exit) while that finish hangs does not wait for it: the thread is a daemon,
        and if the process exits first the lease's expiry ends the run."""
        await _on_daemon_thread(lambda: self.__exit__(exc_type, exc, traceback), f"agent-audit-finish-{self.run_id}")

    def _stop_bound(self, lease_left: float) -> float:
        # Nothing renews the lease once the finish is sent, and past its expiry the finish could
        # only be refused: without stop_timeout, a stop waits no longer than that.
        return lease_left if self.stop_timeout is None else min(self.stop_timeout, lease_left)

    def _sequence(self, operation: ops.Operation, json_fields: Dict[str, Any], observed_at: Any, given: Optional[int]) -> int:
        # The event's number is taken only once its values are known to be sendable: a refused
        # call leaves no gap in the run's sequence.
        check_values(operation, json_fields, observed_at)
        return self.sequence.next() if given is None else given

    def _write(self, call: Callable[[], Any]) -> Any:
        self.check()
        if self._ending:
            raise RuntimeError(f"run {self.run_id}: this session has finished the run; its events can no longer be recorded")
        try:
            return call()
        except AuditApiError as error:
            if error.code in RUN_GONE_CODES:
                if not self._ending:  # sent just before the finish and answered after it: not lost
                    self._lose(error)
                raise LeaseLostError(self.run_id, error) from error
            raise

    def _lose(self, error: AuditApiError) -> None:
        with self._lost_lock:
            if self.lost_error is not None:
                return
            self.lost_error = error
        self._keeper.stop()
        self.lost.set()
        if self._on_lost:
            self._on_lost(LeaseLostError(self.run_id, error))


class StartingRun:
    """``AuditClient.start_run_async``: ``async with`` claims the run from a worker thread (the
    loop runs on meanwhile) and gives its ``RunSession``, which ends the run on leaving the block
    as ``RunSession``'s own ``async with`` does.

    A task cancelled while the claim is in flight (a shutdown, a timeout around the agent) never
    enters the block: the run the claim takes is handed back at once, INTERRUPTED, as a block
    left by a cancellation would end it, instead of being kept RUNNING by its lease keeper. The
    claim's thread is a daemon, not the loop's executor: a claim that hangs (the server out of
    reach) does not hold ``asyncio.run``'s shutdown; if the process exits first and the claim won,
    the lease's expiry ends the run."""

    def __init__(self, claim: Callable[[], RunSession]) -> None:
        self._claim = claim
        self._lock = threading.Lock()
        self._abandoned = False
        self._session: Optional[RunSession] = None

    async def __aenter__(self) -> RunSession:
        try:
            return await _on_daemon_thread(self._claim_unless_abandoned, "agent-audit-claim")
        except asyncio.CancelledError:
            with self._lock:
                self._abandoned = True
                claimed = self._session
            if claimed is not None:  # answered, but the task was cancelled before it went on
                threading.Thread(target=_hand_back, args=(claimed,), name=f"hand-back-{claimed.run_id}").start()
            raise

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        assert self._session is not None  # __aenter__ returned it
        await self._session.__aexit__(exc_type, exc, traceback)

    def _claim_unless_abandoned(self) -> RunSession:
        session = self._claim()
        with self._lock:
            self._session = session
            abandoned = self._abandoned
        if abandoned:
            _hand_back(session)
        return session


async def to_thread(call: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``await to_thread(run.tool_started, ...)``: as ``asyncio.to_thread``, the call is made on a
    thread while the loop runs on, and its answer or error is returned to the awaiting task; but
    the thread is a daemon of its own, not the loop's executor, which ``asyncio.run``'s end and the
    interpreter's exit wait for: a call that hangs (the server out of reach, retried for the
    whole RetryPolicy, minutes) does not keep a stopped process alive. A call whose task was
    cancelled is still made, and answered on its thread; one cut off by the process's exit is
    not sent, or not answered."""
    context = contextvars.copy_context()  # as asyncio.to_thread: the task's context variables

    def in_context() -> _T:
        return context.run(call, *args, **kwargs)

    return await _on_daemon_thread(in_context, f"agent-audit-{getattr(call, '__name__', 'call')}")


async def _on_daemon_thread(call: Callable[[], _T], name: str) -> _T:
    # Not asyncio.to_thread: asyncio.run's shutdown and the interpreter's exit wait for the loop's
    # executor threads, so a call that hangs (the server out of reach, retried for the whole
    # policy) would hold the process after its task was cancelled. Its answer reaches the awaiting
    # task through the loop; a task that stopped awaiting it gets nothing.
    loop = asyncio.get_running_loop()
    answer: "asyncio.Future[_T]" = loop.create_future()

    def settle(result: Optional[_T], error: Optional[BaseException]) -> None:
        if answer.done():  # cancelled
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(cast(_T, result))

    def run() -> None:
        result, error = None, None
        try:
            result = call()
        except BaseException as failed:  # noqa: BLE001 - handed to the awaiting task
            error = failed
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: no task awaits it
            pass

    threading.Thread(target=run, name=name, daemon=True).start()
    return await answer


def _hand_back(session: RunSession) -> None:
    # The run ends as a block left by a cancellation ends it.
    session.__exit__(asyncio.CancelledError, asyncio.CancelledError(), None)
