// Every GraphQL document the client sends, and whether it may be sent again after a transport
// failure. The selection sets live here only.

const TOOL_CALL_FIELDS = /* GraphQL */ `
  fragment ToolCallFields on ToolCall {
    id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs
  }`;

const AUDIT_FIELDS = /* GraphQL */ `
  fragment AuditFields on Audit {
    __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs
  }`;

const MODEL_AUDIT_FIELDS = /* GraphQL */ `
  fragment ModelAuditFields on ModelAudit {
    ...AuditFields
    model input output error usage
    toolCalls { ...ToolCallFields }
  }`;

const TOOL_AUDIT_FIELDS = /* GraphQL */ `
  fragment ToolAuditFields on ToolAudit {
    ...AuditFields
    toolCallId name effectiveInput output error awaitingRunTerminal
  }`;

// Scalars only: a worker reads the run it just finished, and nested objects may not be its to read.
const RUN_FIELDS = /* GraphQL */ `
  fragment RunFields on Run {
    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error
  }`;

const RUN_LEASE_FIELDS = /* GraphQL */ `
  fragment RunLeaseFields on RunLease { runId owner epoch expiresAt }`;

const THREAD_FIELDS = /* GraphQL */ `
  fragment ThreadFields on Thread { id title ownerId createdAt }`;

const MESSAGE_FIELDS = /* GraphQL */ `
  fragment MessageFields on Message { id role content createdAt }`;

/**
 * `replayable`: sending the identical request twice has the effect of sending it once (the
 * server treats an identical lifecycle replay as a no-op, a second claim of a run is refused,
 * reads change nothing), so the client may retry it after a transport failure. Creations are
 * not: a replay would create a second thread, run or message.
 */
export interface Operation {
  name: string;
  /** The root field whose value is the result. */
  field: string;
  document: string;
  replayable: boolean;
}

function operation(name: string, field: string, replayable: boolean, body: string, fragments: string[]): Operation {
  return { name, field, replayable, document: [body, ...fragments].join('\n') };
}

const MODEL_AUDIT = [MODEL_AUDIT_FIELDS, AUDIT_FIELDS, TOOL_CALL_FIELDS];
const TOOL_AUDIT = [TOOL_AUDIT_FIELDS, AUDIT_FIELDS];

export const OPERATIONS = {
  createThread: operation('CreateThread', 'createThread', false, /* GraphQL */ `
    mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }`,
    [THREAD_FIELDS]),
  appendMessage: operation('AppendMessage', 'appendMessage', false, /* GraphQL */ `
    mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }`,
    [MESSAGE_FIELDS]),
  createRun: operation('CreateRun', 'createRun', false, /* GraphQL */ `
    mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }`,
    [RUN_FIELDS]),
  cancelRun: operation('CancelRun', 'cancelRun', false, /* GraphQL */ `
    mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }`,
    [RUN_FIELDS]),
  claimRun: operation('ClaimRun', 'claimRun', true, /* GraphQL */ `
    mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }`,
    [RUN_LEASE_FIELDS]),
  renewLease: operation('RenewLease', 'renewLease', true, /* GraphQL */ `
    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {
      renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields }
    }`,
    [RUN_LEASE_FIELDS]),
  recordModelStarted: operation('RecordModelStarted', 'recordModelStarted', true, /* GraphQL */ `
    mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }`,
    MODEL_AUDIT),
  recordModelFinished: operation('RecordModelFinished', 'recordModelFinished', true, /* GraphQL */ `
    mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }`,
    MODEL_AUDIT),
  recordToolStarted: operation('RecordToolStarted', 'recordToolStarted', true, /* GraphQL */ `
    mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }`,
    TOOL_AUDIT),
  recordToolFinished: operation('RecordToolFinished', 'recordToolFinished', true, /* GraphQL */ `
    mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }`,
    TOOL_AUDIT),
  recordToolError: operation('RecordToolError', 'recordToolError', true, /* GraphQL */ `
    mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }`,
    TOOL_AUDIT),
  finishRun: operation('FinishRun', 'finishRun', true, /* GraphQL */ `
    mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }`,
    [RUN_FIELDS]),
  threadAudits: operation('ThreadAudits', 'threadAudits', true, /* GraphQL */ `
    query ThreadAudits($threadId: ID!, $limit: Int) {
      threadAudits(threadId: $threadId, limit: $limit) {
        threadId
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
    }`,
    [...MODEL_AUDIT, TOOL_AUDIT_FIELDS]),
  run: operation('Run', 'run', true, /* GraphQL */ `
    query Run($id: ID!) {
      run(id: $id) {
        ...RunFields
        thread { id }
        resumedFrom { id }
        toolCalls { ...ToolCallFields }
      }
    }`,
    [RUN_FIELDS, TOOL_CALL_FIELDS]),
} satisfies Record<string, Operation>;
