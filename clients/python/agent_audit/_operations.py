"""Every GraphQL document the client sends, and whether it may be sent again after a transport failure."""

from __future__ import annotations

from dataclasses import dataclass

TOOL_CALL_FIELDS = """
fragment ToolCallFields on ToolCall {
  id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs
}"""

AUDIT_FIELDS = """
fragment AuditFields on Audit {
  __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs
}"""

MODEL_AUDIT_FIELDS = """
fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model input output error usage
  toolCalls { ...ToolCallFields }
}"""

TOOL_AUDIT_FIELDS = """
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId name effectiveInput output error awaitingRunTerminal
}"""

# Scalars only: a worker reads the run it just finished, and nested objects may not be its to read.
RUN_FIELDS = """
fragment RunFields on Run {
  id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error
}"""

RUN_LEASE_FIELDS = "fragment RunLeaseFields on RunLease { runId owner epoch expiresAt grantedAt }"
THREAD_FIELDS = "fragment ThreadFields on Thread { id title ownerId createdAt }"
MESSAGE_FIELDS = "fragment MessageFields on Message { id role content createdAt }"


@dataclass(frozen=True)
class Operation:
    """``replayable``: sending the identical request twice has the effect of sending it once (the
    server takes an identical lifecycle event as a replay, a claim is retried with its claimId and
    a thread's or run's creation with its createId, reads change nothing), so it is retried after
    transport failures. A message or a cancel is not: a message sent again is a second one."""

    name: str
    field: str
    document: str
    replayable: bool


def _operation(name: str, field: str, replayable: bool, body: str, *fragments: str) -> Operation:
    return Operation(name, field, "\n".join((body, *fragments)), replayable)


_MODEL_AUDIT = (MODEL_AUDIT_FIELDS, AUDIT_FIELDS, TOOL_CALL_FIELDS)
_TOOL_AUDIT = (TOOL_AUDIT_FIELDS, AUDIT_FIELDS)

CREATE_THREAD = _operation("CreateThread", "createThread", True,
    "mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }",
    THREAD_FIELDS)
APPEND_MESSAGE = _operation("AppendMessage", "appendMessage", False,
    "mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }",
    MESSAGE_FIELDS)
CREATE_RUN = _operation("CreateRun", "createRun", True,
    "mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }",
    RUN_FIELDS)
CANCEL_RUN = _operation("CancelRun", "cancelRun", False,
    "mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }",
    RUN_FIELDS)
# Not sent again: a deletion that committed unseen answers NOT_FOUND the second time.
DELETE_THREAD = _operation("DeleteThread", "deleteThread", False,
    "mutation DeleteThread($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }")
CLAIM_RUN = _operation("ClaimRun", "claimRun", True,
    "mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }",
    RUN_LEASE_FIELDS)
RENEW_LEASE = _operation("RenewLease", "renewLease", True,
    "mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {"
    " renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields } }",
    RUN_LEASE_FIELDS)
RECORD_MODEL_STARTED = _operation("RecordModelStarted", "recordModelStarted", True,
    "mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }",
    *_MODEL_AUDIT)
RECORD_MODEL_FINISHED = _operation("RecordModelFinished", "recordModelFinished", True,
    "mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }",
    *_MODEL_AUDIT)
RECORD_TOOL_STARTED = _operation("RecordToolStarted", "recordToolStarted", True,
    "mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }",
    *_TOOL_AUDIT)
RECORD_TOOL_FINISHED = _operation("RecordToolFinished", "recordToolFinished", True,
    "mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }",
    *_TOOL_AUDIT)
RECORD_TOOL_ERROR = _operation("RecordToolError", "recordToolError", True,
    "mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }",
    *_TOOL_AUDIT)
# Retried like the other lifecycle calls; a retry of one that committed unseen answers LEASE_LOST.
FINISH_RUN = _operation("FinishRun", "finishRun", True,
    "mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }",
    RUN_FIELDS)
THREAD_AUDITS = _operation("ThreadAudits", "threadAudits", True, """
query ThreadAudits($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    threadId
    cursor
    truncated
    items {
      ... on ModelAudit { ...ModelAuditFields }
      ... on ToolAudit {
        ...ToolAuditFields
        toolCall { ...ToolCallFields }
        declaredBy { id operationId }
      }
    }
  }
}""", *_MODEL_AUDIT, TOOL_AUDIT_FIELDS)
RUN = _operation("Run", "run", True, """
query Run($id: ID!) {
  run(id: $id) {
    ...RunFields
    thread { id }
    resumedFrom { id }
    toolCalls { ...ToolCallFields }
  }
}""", RUN_FIELDS, TOOL_CALL_FIELDS)

# A batch of lifecycle events (event_writer.py): sending it again replays every applied event.
RECORD_EVENTS = _operation("RecordEvents", "recordEvents", True,
    "mutation RecordEvents($events: [LifecycleEventInput!]!) { recordEvents(events: $events) {"
    " index audit { ... on ModelAudit { ...ModelAuditFields } ... on ToolAudit { ...ToolAuditFields } }"
    " run { ...RunFields } lease { ...RunLeaseFields } error { code message runStatus } } }",
    MODEL_AUDIT_FIELDS, TOOL_AUDIT_FIELDS, AUDIT_FIELDS, TOOL_CALL_FIELDS, RUN_FIELDS, RUN_LEASE_FIELDS)
