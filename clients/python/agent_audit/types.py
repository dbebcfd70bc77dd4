"""The API's shapes, as the client sends and returns them.

Results are read from the server's JSON: ``BigInt`` values (sequences) become ``int``,
``DateTime`` values stay RFC 3339 strings, ``JSON`` values are plain Python values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Union, cast

#: Any JSON value (inputs, outputs, errors).
JSON = Any

#: How a worker may end a run (finishRun).
RunTerminalStatus = Literal["COMPLETED", "FAILED", "CANCELLED", "INTERRUPTED"]
#: How a model call may end (recordModelFinished).
ModelFinishedStatus = Literal["COMPLETED", "FAILED"]
#: The role of an ordinary message (appendMessage).
MessageRole = Literal["USER", "ASSISTANT", "SYSTEM", "TOOL"]


def _int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _id_of(data: Mapping[str, Any], key: str) -> Optional[str]:
    """The ``id`` of a nested object, e.g. ``thread { id }``, or None."""
    nested: Optional[Mapping[str, Any]] = data.get(key)
    return None if nested is None else nested.get("id")


def _tool_calls(data: Mapping[str, Any]) -> List["ToolCall"]:
    calls: List[Mapping[str, Any]] = data.get("toolCalls") or []
    return [ToolCall.from_json(call) for call in calls]


@dataclass(frozen=True)
class ClockReading:
    """One reading of a monotonic clock; durations are computed only between readings of one ``clock_id``."""

    clock_id: str
    nanos: int


@dataclass(frozen=True)
class DeclaredToolCall:
    """A tool call a model response declared: the model's id for it, the tool's name and arguments."""

    id: str
    name: str
    args: JSON = None


@dataclass(frozen=True)
class RunLease:
    """Proof of holding a run's lease: pass it (or a session) to every lifecycle call."""

    run_id: str
    epoch: int
    owner: str
    expires_at: str
    #: When the database took or last extended the lease, on the clock ``expires_at`` is read on:
    #: ``expires_at - granted_at`` is its length, whatever this machine's clock says.
    granted_at: Optional[str] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunLease":
        return cls(run_id=data["runId"], epoch=data["epoch"], owner=data["owner"], expires_at=data["expiresAt"],
                   granted_at=data.get("grantedAt"))


@dataclass(frozen=True)
class Thread:
    id: str
    title: Optional[str]
    owner_id: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Thread":
        return cls(id=data["id"], title=data.get("title"), owner_id=data["ownerId"], created_at=data["createdAt"])


@dataclass(frozen=True)
class DeletionReceipt:
    """What a deletion removed, and when a read after it found nothing of the thread left (docs/deletion.md)."""

    thread_id: str
    runs: int
    audits: int
    tool_calls: int
    messages: int
    verified_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "DeletionReceipt":
        return cls(
            thread_id=data["threadId"], runs=data["runs"], audits=data["audits"], tool_calls=data["toolCalls"],
            messages=data["messages"], verified_at=data["verifiedAt"],
        )


@dataclass(frozen=True)
class Message:
    id: str
    role: str
    content: JSON
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Message":
        return cls(id=data["id"], role=data["role"], content=data.get("content"), created_at=data["createdAt"])


@dataclass(frozen=True)
class ToolCall:
    """The read model of one declared tool call: PENDING until its tool starts, then mirroring its audit."""

    id: str
    tool_call_id: str
    name: str
    status: str
    declared_input: JSON = None
    effective_input: JSON = None
    output: JSON = None
    error: JSON = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    duration_ms: Optional[int] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ToolCall":
        return cls(
            id=data["id"],
            tool_call_id=data["toolCallId"],
            name=data["name"],
            status=data["status"],
            declared_input=data.get("declaredInput"),
            effective_input=data.get("effectiveInput"),
            output=data.get("output"),
            error=data.get("error"),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            duration_ms=data.get("durationMs"),
        )


@dataclass(frozen=True)
class Run:
    id: str
    status: str
    lease_epoch: int
    created_at: str
    lease_owner: Optional[str] = None
    lease_expires_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    error: JSON = None
    #: Set by ``AuditClient.run`` only.
    thread_id: Optional[str] = None
    resumed_from_id: Optional[str] = None
    tool_calls: List[ToolCall] = field(default_factory=lambda: [])

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Run":
        return cls(
            id=data["id"],
            status=data["status"],
            lease_epoch=data["leaseEpoch"],
            created_at=data["createdAt"],
            lease_owner=data.get("leaseOwner"),
            lease_expires_at=data.get("leaseExpiresAt"),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            error=data.get("error"),
            thread_id=_id_of(data, "thread"),
            resumed_from_id=_id_of(data, "resumedFrom"),
            tool_calls=_tool_calls(data),
        )


@dataclass(frozen=True)
class ModelAudit:
    """One model call of a run's timeline."""

    id: str
    run_id: str
    operation_id: str
    sequence: int
    status: str
    finished_sequence: Optional[int] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    duration_ms: Optional[int] = None
    model: Optional[str] = None
    input: JSON = None
    output: JSON = None
    error: JSON = None
    usage: JSON = None
    tool_calls: List[ToolCall] = field(default_factory=lambda: [])

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ModelAudit":
        return cls(
            id=data["id"],
            run_id=data["runId"],
            operation_id=data["operationId"],
            sequence=int(data["sequence"]),
            status=data["status"],
            finished_sequence=_int(data.get("finishedSequence")),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            duration_ms=data.get("durationMs"),
            model=data.get("model"),
            input=data.get("input"),
            output=data.get("output"),
            error=data.get("error"),
            usage=data.get("usage"),
            tool_calls=_tool_calls(data),
        )


@dataclass(frozen=True)
class ToolAudit:
    """One tool execution of a run's timeline."""

    id: str
    run_id: str
    #: The tool_call_id, as on every audit.
    operation_id: str
    tool_call_id: str
    name: str
    sequence: int
    status: str
    awaiting_run_terminal: bool
    finished_sequence: Optional[int] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    duration_ms: Optional[int] = None
    effective_input: JSON = None
    output: JSON = None
    error: JSON = None
    #: Set in ``thread_audits`` results only.
    tool_call: Optional[ToolCall] = None
    declared_by_operation_id: Optional[str] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ToolAudit":
        return cls(
            id=data["id"],
            run_id=data["runId"],
            operation_id=data["operationId"],
            tool_call_id=data["toolCallId"],
            name=data["name"],
            sequence=int(data["sequence"]),
            status=data["status"],
            awaiting_run_terminal=data["awaitingRunTerminal"],
            finished_sequence=_int(data.get("finishedSequence")),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            duration_ms=data.get("durationMs"),
            effective_input=data.get("effectiveInput"),
            output=data.get("output"),
            error=data.get("error"),
            tool_call=ToolCall.from_json(data["toolCall"]) if data.get("toolCall") else None,
            declared_by_operation_id=(data.get("declaredBy") or {"operationId": None})["operationId"],
        )


Audit = Union[ModelAudit, ToolAudit]


@dataclass(frozen=True)
class ThreadAudits:
    """The newest audits of a thread, oldest first; ``truncated`` when more exist. ``cursor`` is
    the thread's latest change in this read: ``threadChanges(after: cursor)`` continues it live."""

    thread_id: str
    cursor: str
    truncated: bool
    items: List[Audit]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ThreadAudits":
        items: List[Audit] = [
            ModelAudit.from_json(item) if item["__typename"] == "ModelAudit" else ToolAudit.from_json(item)
            for item in data["items"]
        ]
        return cls(thread_id=data["threadId"], cursor=data["cursor"], truncated=data["truncated"], items=items)


#: A declared tool call: a DeclaredToolCall, or a mapping with "id", "name" and optionally "args"
#: (the shape of LangChain's ``AIMessage.tool_calls``; other keys, such as its "type", are ignored).
ToolCallLike = Union[DeclaredToolCall, Mapping[str, Any]]


def tool_calls_json(calls: Optional[List[ToolCallLike]]) -> List[Dict[str, Any]]:
    return [_tool_call_json(index, call) for index, call in enumerate(calls or [])]


def _tool_call_json(index: int, call: object) -> Dict[str, Any]:
    if isinstance(call, DeclaredToolCall):
        return {"id": call.id, "name": call.name, "args": call.args}
    shape, kind = "", type(call).__name__
    if isinstance(call, Mapping):
        fields = cast("Mapping[str, Any]", call)
        if "id" in fields and "name" in fields:
            return {"id": fields["id"], "name": fields["name"], "args": fields.get("args")}
        shape = ' without "id"' if "id" not in fields else ' without "name"'
    raise TypeError(f"tool_calls[{index}] is a {kind}{shape}: declare DeclaredToolCall(id, name, args) "
                    'or a mapping {"id": ..., "name": ..., "args": ...}')
