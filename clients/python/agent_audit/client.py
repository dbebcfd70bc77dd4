"""A typed client of the audit server: the run lifecycle for workers, threads and runs for owners."""

from __future__ import annotations

import uuid
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Type, Union, cast

from . import _operations as ops
from .clock import PROCESS_CLOCK_ID, now_rfc3339, read_clock, to_rfc3339
from .errors import AuditApiError, LeaseLostError
from .event_writer import EventWriter
from .payloads import DEFAULT_MAX_JSON_BYTES, cap_json, storable
from .transport import Resolver, RetryPolicy, TokenProvider, Transport, encode_json
from .types import (
    JSON,
    ClockReading,
    DeletionReceipt,
    ToolCallLike,
    Message,
    MessageRole,
    ModelAudit,
    ModelFinishedStatus,
    Run,
    RunLease,
    RunTerminalStatus,
    Thread,
    ThreadAudits,
    ToolAudit,
    tool_calls_json,
)

if TYPE_CHECKING:
    from .session import RunSession, StartingRun

#: A lease as lifecycle calls take it: a RunLease, or anything with ``run_id`` and ``epoch``.
LeaseLike = Union[RunLease, Any]

# "Read now": the default of observed_at and clock, so that None can still send "no reading".
READ_NOW: Any = object()

#: What ``observed_at`` takes: an RFC 3339 string, an aware datetime, or None (read now).
ObservedAt = Union[str, datetime, None]


def settling_messages(messages: Sequence[Any]) -> List[Dict[str, Any]]:
    """The messages of a run's final state that can settle its bare tool errors (the server's
    final-state reconciliation): for each ``tool_call_id`` the last message, when its ``status``
    is ``"error"``. The server reads nothing else of the state, and a whole checkpoint can
    outgrow the request's body limit."""
    last: Dict[str, Dict[str, Any]] = {}
    for message in messages:
        if isinstance(message, Mapping):
            fields = cast(Mapping[str, Any], message)
            call_id: Any = fields.get("tool_call_id")
            if isinstance(call_id, (str, int)) and not isinstance(call_id, bool):
                last.pop(str(call_id), None)
                last[str(call_id)] = dict(fields)
    return [message for message in last.values() if message.get("status") == "error"]


def check_values(operation: ops.Operation, json_fields: Mapping[str, Any], observed_at: Any = READ_NOW) -> None:
    """Raises ``AuditApiError`` (BAD_USER_INPUT, not retryable), before anything is sent, for a
    value no request can carry: one JSON cannot encode (a datetime, bytes, a set, a Decimal, NaN,
    nesting too deep) or an ``observed_at`` that is neither an RFC 3339 string nor an aware
    datetime. The message names the field and the value's type."""

    def refused(reason: str) -> AuditApiError:
        return AuditApiError(f"{operation.name}: {reason}", code="BAD_USER_INPUT", operation=operation.name, retryable=False)

    for name, value in json_fields.items():
        try:
            encode_json(value)
        except (TypeError, ValueError, RecursionError) as error:
            raise refused(f"{name} ({type(value).__name__}) cannot be sent as JSON: {error}") from None
    if not (observed_at is READ_NOW or observed_at is None or isinstance(observed_at, str)):
        if not isinstance(observed_at, datetime) or observed_at.tzinfo is None:
            raise refused(f"observed_at ({type(observed_at).__name__}) must be an RFC 3339 string or a datetime with a time zone")


class AuditClient:
    """Every call of the contract, typed.

    Lifecycle calls and reads are retried, with the byte-identical request, after transport
    failures (``RetryPolicy``); GraphQL errors raise ``AuditApiError`` at once, never retried.
    ``observed_at`` (an RFC 3339 string or an aware datetime) and ``clock`` are read when the
    method is called unless given, once, before the first attempt; ``clock=None`` sends no
    reading (the duration is then unknown). Thread-safe: each call is its own HTTP request.
    ``token`` is a JWT, or a function giving one that is called before each request (short-lived
    tokens: cache it there and mint a new one near its ``exp``); a request refused as
    ``UNAUTHENTICATED`` asks it once more and is resent if it then gives another token.
    ``timeout`` (seconds: a shutdown's grace period), which every call takes, bounds the wait for
    the answer, from the host's lookup and the TLS handshake to its last byte, retries included:
    past it the call raises
    ``AuditApiError`` (``TRANSPORT_ERROR``), an event not yet sent is never sent, and one sent may
    still have been applied. ``close_timeout`` bounds the ``close`` made by leaving
    ``with AuditClient(...)`` as ``close(timeout=...)`` does. ``resolve(host, port)`` looks the
    server's host up (``socket.getaddrinfo``'s list; by default ``socket.getaddrinfo``), on a
    thread of its own that the attempt's bound does not wait for past it. A redirect is not
    followed: it raises ``TRANSPORT_ERROR`` naming where it points.
    """

    def __init__(
        self,
        url: str,
        token: Union[str, TokenProvider],
        *,
        clock_id: str = PROCESS_CLOCK_ID,
        retry: Optional[RetryPolicy] = None,
        batching: bool = True,
        max_json_bytes: int = DEFAULT_MAX_JSON_BYTES,
        close_timeout: Optional[float] = None,
        resolve: Optional[Resolver] = None,
    ) -> None:
        self.url = url
        # Bounds the close made by leaving ``with AuditClient(...)`` (seconds: a shutdown's grace period).
        self.close_timeout = close_timeout
        self.clock_id = clock_id
        # A payload larger than this as JSON is sent cut, with a visible marker (payloads.py).
        self.max_json_bytes = max_json_bytes
        self._transport = Transport(url, token, retry or RetryPolicy(), resolve)
        # Lifecycle events from every thread (not renewals, sent at once) go through one writer
        # that batches by itself (event_writer.py); ``batching=False`` sends each as its own request.
        self._writer = EventWriter(self._transport) if batching else None

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Returns once every lifecycle event written so far has been answered (True), or after
        ``timeout`` seconds (False; the events go on)."""
        return self._writer is None or self._writer.flush(timeout)

    def close(self, timeout: Optional[float] = None) -> None:
        """Flushes the lifecycle events still queued and stops the writer's thread; every later
        call raises RuntimeError. Closing again does nothing. Past ``timeout`` seconds (a
        shutdown's bound) what is not yet answered is given up: queued events are never sent and
        their callers raise ``AuditApiError`` (``TRANSPORT_ERROR``), so the process can exit."""
        if self._writer is not None:
            self._writer.close(timeout)
        self._transport.closed = True

    def __enter__(self) -> "AuditClient":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close(self.close_timeout)

    # ---- Worker: the run lifecycle ----

    def claim_run(
        self, run_id: str, lease_seconds: Optional[int] = None, claim_id: Optional[str] = None, *, timeout: Optional[float] = None,
    ) -> RunLease:
        """QUEUED -> RUNNING with this worker as the lease owner.

        The claim carries a ``claim_id`` (a fresh UUID unless given) and is retried with it after
        transport failures: a retry of a claim that won unseen gets the same lease back. It goes
        through the batching writer like every lifecycle call. ``timeout`` bounds the wait for its
        answer as it bounds ``finish_run``'s; a claim given up after it was sent may still have won,
        and its lease, renewed by no one, then expires.
        """
        claim = {"runId": run_id, "leaseSeconds": lease_seconds, "claimId": claim_id or str(uuid.uuid4())}
        return RunLease.from_json(self._event(ops.CLAIM_RUN, {"input": _without_none(claim)}, timeout))

    def start_run(
        self,
        run_id: str,
        lease_seconds: int = 30,
        *,
        claim_id: Optional[str] = None,
        first_sequence: int = 1,
        on_lost: Optional[Callable[[LeaseLostError], object]] = None,
        stop_timeout: Optional[float] = None,
        timeout: Optional[float] = None,
    ) -> "RunSession":
        """Claims the run and keeps its lease alive; use the returned session as a context
        manager, which ends the run on exit (see ``RunSession``). ``on_lost`` is called once the
        lease is gone, on the thread that found it gone: the keeper's, or the one whose call got
        the refusal; its value is ignored. ``stop_timeout`` bounds (seconds) the INTERRUPTED
        finish of a block left by a stop (SIGTERM's ``SystemExit``, Ctrl-C, a cancelled task);
        without it, that finish waits no longer than the lease lasts (past its expiry it could only
        be refused). ``timeout`` bounds the claim (``claim_run``)."""
        from .session import RunSession

        return RunSession.claim(
            self, run_id, lease_seconds, claim_id=claim_id, first_sequence=first_sequence, on_lost=on_lost, stop_timeout=stop_timeout,
            timeout=timeout)

    def start_run_async(
        self,
        run_id: str,
        lease_seconds: int = 30,
        *,
        claim_id: Optional[str] = None,
        first_sequence: int = 1,
        on_lost: Optional[Callable[[LeaseLostError], object]] = None,
        stop_timeout: Optional[float] = None,
        timeout: Optional[float] = None,
    ) -> "StartingRun":
        """For asyncio: ``async with worker.start_run_async(run_id) as run:`` claims the run from
        a worker thread and ends it on leaving the block, its finish sent from a worker thread
        too. A task cancelled while its claim is in flight hands the claimed run back
        INTERRUPTED (see ``StartingRun``). ``timeout`` bounds the claim (``claim_run``)."""
        from .session import StartingRun

        return StartingRun(lambda: self.start_run(
            run_id, lease_seconds, claim_id=claim_id, first_sequence=first_sequence, on_lost=on_lost, stop_timeout=stop_timeout,
            timeout=timeout))

    @property
    def retry(self) -> RetryPolicy:
        """How this client's requests are retried."""
        return self._transport.policy

    def renew_lease(
        self, lease: LeaseLike, lease_seconds: Optional[int] = None, *, retry: Optional[RetryPolicy] = None, timeout: Optional[float] = None,
    ) -> RunLease:
        """Extends an unexpired lease (same epoch); returns it with its new expiry.

        Sent at once as its own request, never queued behind the batching writer's request in
        flight: another run's slow request must not let this lease expire. A renewal replays
        harmlessly and its order against the run's events does not matter. ``retry`` replaces
        the client's policy for this renewal (``LeaseKeeper`` sends one attempt of at most a
        third of the lease); ``timeout`` bounds it, retries included, as it bounds ``claim_run``."""
        variables = _without_none({"lease": _lease(lease), "leaseSeconds": lease_seconds})
        return RunLease.from_json(self._transport.execute(ops.RENEW_LEASE, variables, retry, timeout))

    def record_model_started(
        self,
        lease: LeaseLike,
        operation_id: str,
        sequence: int,
        *,
        model: Optional[str] = None,
        input: JSON = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ModelAudit:
        fields = {"operationId": operation_id, "sequence": str(sequence), "model": model, "input": input}
        return ModelAudit.from_json(self._lifecycle(ops.RECORD_MODEL_STARTED, lease, fields, observed_at, clock, timeout))

    def record_model_finished(
        self,
        lease: LeaseLike,
        operation_id: str,
        *,
        status: ModelFinishedStatus = "COMPLETED",
        output: JSON = None,
        error: JSON = None,
        usage: JSON = None,
        tool_calls: Optional[Sequence[ToolCallLike]] = None,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ModelAudit:
        """Closes the model call (COMPLETED or FAILED); each declared tool call becomes a PENDING ToolCall."""
        fields = {
            "operationId": operation_id,
            "status": status,
            "output": output,
            "error": error,
            "usage": usage,
            "toolCalls": tool_calls_json(list(tool_calls or [])),
            "sequence": _big(sequence),
        }
        return ModelAudit.from_json(self._lifecycle(ops.RECORD_MODEL_FINISHED, lease, fields, observed_at, clock, timeout))

    def record_tool_started(
        self,
        lease: LeaseLike,
        tool_call_id: str,
        name: str,
        sequence: int,
        *,
        effective_input: JSON = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """Binds to the model call that declared ``tool_call_id`` (else MODEL_NOT_FOUND)."""
        fields = {"toolCallId": tool_call_id, "name": name, "effectiveInput": effective_input, "sequence": str(sequence)}
        return ToolAudit.from_json(self._lifecycle(ops.RECORD_TOOL_STARTED, lease, fields, observed_at, clock, timeout))

    def record_tool_finished(
        self,
        lease: LeaseLike,
        tool_call_id: str,
        output: JSON,
        *,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """``output`` is the raw tool message envelope; ``output["status"] == "error"`` records a controlled failure."""
        fields = {"toolCallId": tool_call_id, "output": output, "sequence": _big(sequence)}
        return ToolAudit.from_json(self._lifecycle(ops.RECORD_TOOL_FINISHED, lease, fields, observed_at, clock, timeout))

    def record_tool_error(
        self,
        lease: LeaseLike,
        tool_call_id: str,
        error: JSON,
        *,
        sequence: Optional[int] = None,
        observed_at: ObservedAt = READ_NOW,
        clock: Optional[ClockReading] = READ_NOW,
        timeout: Optional[float] = None,
    ) -> ToolAudit:
        """A bare error (an exception, a timeout, an interrupt): the audit waits for the run's verdict."""
        fields = {"toolCallId": tool_call_id, "error": error, "sequence": _big(sequence)}
        return ToolAudit.from_json(self._lifecycle(ops.RECORD_TOOL_ERROR, lease, fields, observed_at, clock, timeout))

    def finish_run(
        self,
        lease: LeaseLike,
        status: RunTerminalStatus,
        *,
        error: JSON = None,
        state_messages: Optional[List[JSON]] = None,
        timeout: Optional[float] = None,
    ) -> Run:
        """Ends the run (COMPLETED, FAILED, CANCELLED, INTERRUPTED) and closes what is open in it.

        ``timeout`` bounds the wait for its answer, retries included (seconds; a shutdown's grace
        period): past it the call raises ``AuditApiError`` (``TRANSPORT_ERROR``) and a finish not
        yet sent is never sent; one sent may still have ended the run.

        ``state_messages`` may be the whole final state: only the messages that can settle a bare
        error are sent (``settling_messages``).

        Retried after transport failures, but an ended run answers LEASE_LOST: a LEASE_LOST with
        ``attempts > 1`` may mean the first attempt ended the run, which its ``run_status`` (how
        the run ended) tells.
        """
        settling = settling_messages(state_messages or [])
        check_values(ops.FINISH_RUN, {"error": error, "stateMessages": settling})
        messages = [self._capped(message) for message in settling]
        finish = {"lease": _lease(lease), "status": status, "error": self._capped(error), "stateMessages": messages}
        return Run.from_json(self._event(ops.FINISH_RUN, {"input": _without_none(finish)}, timeout))

    # ---- Owners (creations are not retried: a resend would create a second one) ----

    def create_thread(self, title: Optional[str] = None, *, create_id: Optional[str] = None, timeout: Optional[float] = None) -> Thread:
        """The caller becomes the thread's owner.

        The creation carries a ``create_id`` (a fresh UUID unless given; 1 to 256 characters) and
        is retried with it after transport failures: a retry of a creation that committed unseen
        gets that thread, never a second one. Keep your own ``create_id`` to resend a creation
        after a restart.
        """
        thread = {"title": title, "createId": create_id or str(uuid.uuid4())}
        return Thread.from_json(self._transport.execute(ops.CREATE_THREAD, {"input": _without_none(thread)}, timeout=timeout))

    def append_message(self, thread_id: str, role: MessageRole, content: JSON, *, timeout: Optional[float] = None) -> Message:
        check_values(ops.APPEND_MESSAGE, {"content": content})
        message = {"threadId": thread_id, "role": role, "content": content}
        return Message.from_json(self._transport.execute(ops.APPEND_MESSAGE, {"input": message}, timeout=timeout))

    def create_run(
        self, thread_id: str, resume_from_run_id: Optional[str] = None, *, create_id: Optional[str] = None, timeout: Optional[float] = None,
    ) -> Run:
        """A QUEUED run; ``resume_from_run_id`` names an ended run of the same thread.

        Like ``create_thread``, it carries a ``create_id`` (a fresh UUID unless given; keys are per
        thread) and is retried with it: a lost answer never leaves a second run no one claims.
        """
        run = _without_none({"threadId": thread_id, "resumeFromRunId": resume_from_run_id,
                             "createId": create_id or str(uuid.uuid4())})
        return Run.from_json(self._transport.execute(ops.CREATE_RUN, {"input": run}, timeout=timeout))

    def cancel_run(self, run_id: str, *, timeout: Optional[float] = None) -> Run:
        """Ends a QUEUED or RUNNING run as CANCELLED and revokes its lease."""
        return Run.from_json(self._transport.execute(ops.CANCEL_RUN, {"runId": run_id}, timeout=timeout))

    def delete_thread(self, thread_id: str, *, timeout: Optional[float] = None) -> DeletionReceipt:
        """Deletes the thread and everything under it (its owner, an admin or a superadmin).

        Answers once it is gone, with the receipt. Not retried: a deletion whose answer was lost is
        NOT_FOUND when sent again, and its receipt is in the server's log.
        """
        return DeletionReceipt.from_json(self._transport.execute(ops.DELETE_THREAD, {"id": thread_id}, timeout=timeout))

    def thread_audits(self, thread_id: str, limit: Optional[int] = None, *, timeout: Optional[float] = None) -> ThreadAudits:
        """The newest ``limit`` (1 to 500) audits of a thread, oldest first. Superadmin owners only."""
        variables = _without_none({"threadId": thread_id, "limit": limit})
        return ThreadAudits.from_json(self._transport.execute(ops.THREAD_AUDITS, variables, timeout=timeout))

    def run(self, run_id: str, *, timeout: Optional[float] = None) -> Optional[Run]:
        """The run with its ToolCall projection; one that does not exist (or whose thread was deleted) is AuditApiError NOT_FOUND."""
        data = self._transport.execute(ops.RUN, {"id": run_id}, timeout=timeout)
        return None if data is None else Run.from_json(data)

    # Read once per call, before the first attempt, so that retries replay the same observation.
    def _lifecycle(
        self,
        operation: ops.Operation,
        lease: LeaseLike,
        fields: Dict[str, Any],
        observed_at: ObservedAt,
        clock: Optional[ClockReading],
        timeout: Optional[float] = None,
    ) -> Any:
        check_values(operation, {name: fields[name] for name in _JSON_FIELDS if name in fields}, observed_at)
        fields = {name: self._capped(value) if name in _PAYLOAD_FIELDS else value for name, value in fields.items()}
        if fields.get("toolCalls"):
            fields["toolCalls"] = [{**call, "args": self._capped(call["args"])} for call in fields["toolCalls"]]
        reading = read_clock(self.clock_id) if clock is READ_NOW else clock
        event = {
            "lease": _lease(lease),
            **fields,
            "observedAt": now_rfc3339() if observed_at is READ_NOW or observed_at is None else to_rfc3339(observed_at),
            "clock": None if reading is None else {"clockId": reading.clock_id, "nanos": str(reading.nanos)},
        }
        return self._event(operation, {"input": _without_none(event)}, timeout)

    def _capped(self, value: Any) -> Any:
        return None if value is None else cap_json(storable(value), self.max_json_bytes)

    def _event(self, operation: ops.Operation, variables: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        if self._writer is None:
            return self._transport.execute(operation, variables, timeout=timeout)
        return self._writer.write(_EVENT_KINDS[operation.name], operation, variables, timeout)


# The lifecycle events' fields that carry the caller's JSON values (check_values).
_JSON_FIELDS = ("input", "output", "error", "usage", "toolCalls", "effectiveInput")
# Those that are one payload each (a declared call's args are one each too).
_PAYLOAD_FIELDS = ("input", "output", "error", "usage", "effectiveInput")

# Each batched lifecycle mutation's key in LifecycleEventInput (renew_lease is sent on its own).
_EVENT_KINDS = {
    ops.CLAIM_RUN.name: "claimRun",
    ops.RECORD_MODEL_STARTED.name: "modelStarted",
    ops.RECORD_MODEL_FINISHED.name: "modelFinished",
    ops.RECORD_TOOL_STARTED.name: "toolStarted",
    ops.RECORD_TOOL_FINISHED.name: "toolFinished",
    ops.RECORD_TOOL_ERROR.name: "toolError",
    ops.FINISH_RUN.name: "finishRun",
}


def _lease(lease: LeaseLike) -> Dict[str, Any]:
    return {"runId": lease.run_id, "epoch": lease.epoch}


def _big(value: Optional[int]) -> Optional[str]:
    return None if value is None else str(value)


def _without_none(values: Dict[str, Any]) -> Dict[str, Any]:
    # An absent optional input, not an explicit null: the server's defaults apply.
    return {key: value for key, value in values.items() if value is not None}
