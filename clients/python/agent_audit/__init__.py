"""Python client of the agent-run audit server (standard library only).

A worker claims a run, reports each model call and tool execution as it happens, and ends the
run; see README.md. ``AuditClient`` makes every call of the API, ``RunSession`` (from
``AuditClient.start_run``) keeps one claimed run's lease and ends it as a context manager.
"""

__version__ = "0.1.0"

from .client import AuditClient
from .clock import PROCESS_CLOCK_ID, SequenceCounter, now_rfc3339, parse_rfc3339, read_clock
from .errors import AUDIT_ERROR_CODES, LEASE_GONE_CODES, TRANSPORT_ERROR, AuditApiError, LeaseLostError
from .lease import LeaseKeeper
from .session import RunSession, StartingRun, to_thread
from .transport import Resolver, RetryPolicy
from .types import (
    JSON,
    Audit,
    ClockReading,
    DeclaredToolCall,
    DeletionReceipt,
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
    ToolCall,
    ToolCallLike,
)

__all__ = [
    "AUDIT_ERROR_CODES",
    "JSON",
    "LEASE_GONE_CODES",
    "PROCESS_CLOCK_ID",
    "TRANSPORT_ERROR",
    "Audit",
    "AuditApiError",
    "AuditClient",
    "ClockReading",
    "DeclaredToolCall",
    "DeletionReceipt",
    "LeaseKeeper",
    "LeaseLostError",
    "Message",
    "MessageRole",
    "ModelAudit",
    "ModelFinishedStatus",
    "Resolver",
    "RetryPolicy",
    "Run",
    "RunLease",
    "RunSession",
    "RunTerminalStatus",
    "SequenceCounter",
    "StartingRun",
    "Thread",
    "ThreadAudits",
    "ToolAudit",
    "ToolCall",
    "ToolCallLike",
    "now_rfc3339",
    "parse_rfc3339",
    "read_clock",
    "to_thread",
]
