// Every GraphQL document the client sends, and whether it may be sent again after a transport
// failure. The selection sets live here only. `graphql()` is generated from schema.graphql
// (npm run codegen): each document is a typed string whose result and variables types follow.
import { graphql } from './generated/graphql/index.js';
import type { TypedDocumentString } from './generated/graphql/graphql.js';

export const TOOL_CALL_FIELDS = graphql(`
  fragment ToolCallFields on ToolCall {
    id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs
  }`);

export const AUDIT_FIELDS = graphql(`
  fragment AuditFields on Audit {
    __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs
  }`);

export const MODEL_AUDIT_FIELDS = graphql(`
  fragment ModelAuditFields on ModelAudit {
    ...AuditFields
    model input output error usage
    toolCalls { ...ToolCallFields }
  }`);

export const TOOL_AUDIT_FIELDS = graphql(`
  fragment ToolAuditFields on ToolAudit {
    ...AuditFields
    toolCallId name effectiveInput output error awaitingRunTerminal
  }`);

// Scalars only: a worker reads the run it just finished, and nested objects may not be its to read.
export const RUN_FIELDS = graphql(`
  fragment RunFields on Run {
    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error
  }`);

export const RUN_LEASE_FIELDS = graphql(`
  fragment RunLeaseFields on RunLease { runId owner epoch expiresAt grantedAt }`);

export const THREAD_FIELDS = graphql(`
  fragment ThreadFields on Thread { id title ownerId createdAt }`);

export const MESSAGE_FIELDS = graphql(`
  fragment MessageFields on Message { id role content createdAt }`);

/**
 * `replayable`: sending the identical request twice has the effect of sending it once (the
 * server treats an identical lifecycle replay as a no-op, a claim or a thread's or run's creation
 * sent again with its claimId or createId gets what the first got, reads change nothing), so the
 * client may retry it after a transport failure. A message or a cancel is not: a message sent
 * again is a second message.
 */
export interface Operation<Result = unknown, Variables = unknown> {
  name: string;
  /** The root field whose value is the result. */
  field: string;
  /** The operation with the fragments it spreads. */
  document: string;
  replayable: boolean;
  /** Types only: what the root field returns and the variables the document takes. */
  readonly types?: { result: Result; variables: Variables };
}

function operation<Data, Variables, Field extends keyof Data & string>(
  name: string,
  field: Field,
  replayable: boolean,
  document: TypedDocumentString<Data, Variables>,
): Operation<Data[Field], Variables> {
  return { name, field, replayable, document: document.toString() };
}

export const OPERATIONS = {
  createThread: operation('CreateThread', 'createThread', true, graphql(`
    mutation CreateThread($input: CreateThreadInput!) { createThread(input: $input) { ...ThreadFields } }`),),
  appendMessage: operation('AppendMessage', 'appendMessage', false, graphql(`
    mutation AppendMessage($input: AppendMessageInput!) { appendMessage(input: $input) { ...MessageFields } }`),),
  createRun: operation('CreateRun', 'createRun', true, graphql(`
    mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { ...RunFields } }`),),
  cancelRun: operation('CancelRun', 'cancelRun', false, graphql(`
    mutation CancelRun($runId: ID!) { cancelRun(runId: $runId) { ...RunFields } }`),),
  // Not sent again: a deletion that committed unseen answers NOT_FOUND the second time.
  deleteThread: operation('DeleteThread', 'deleteThread', false, graphql(`
    mutation DeleteThread($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }`),),
  claimRun: operation('ClaimRun', 'claimRun', true, graphql(`
    mutation ClaimRun($input: ClaimRunInput!) { claimRun(input: $input) { ...RunLeaseFields } }`),),
  renewLease: operation('RenewLease', 'renewLease', true, graphql(`
    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {
      renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { ...RunLeaseFields }
    }`),),
  recordModelStarted: operation('RecordModelStarted', 'recordModelStarted', true, graphql(`
    mutation RecordModelStarted($input: ModelStartedInput!) { recordModelStarted(input: $input) { ...ModelAuditFields } }`),),
  recordModelFinished: operation('RecordModelFinished', 'recordModelFinished', true, graphql(`
    mutation RecordModelFinished($input: ModelFinishedInput!) { recordModelFinished(input: $input) { ...ModelAuditFields } }`),),
  recordToolStarted: operation('RecordToolStarted', 'recordToolStarted', true, graphql(`
    mutation RecordToolStarted($input: ToolStartedInput!) { recordToolStarted(input: $input) { ...ToolAuditFields } }`),),
  recordToolFinished: operation('RecordToolFinished', 'recordToolFinished', true, graphql(`
    mutation RecordToolFinished($input: ToolFinishedInput!) { recordToolFinished(input: $input) { ...ToolAuditFields } }`),),
  recordToolError: operation('RecordToolError', 'recordToolError', true, graphql(`
    mutation RecordToolError($input: ToolErrorInput!) { recordToolError(input: $input) { ...ToolAuditFields } }`),),
  finishRun: operation('FinishRun', 'finishRun', true, graphql(`
    mutation FinishRun($input: FinishRunInput!) { finishRun(input: $input) { ...RunFields } }`),),
  // A batch of lifecycle events (event-writer.ts): sending it again replays every applied event.
  recordEvents: operation('RecordEvents', 'recordEvents', true, graphql(`
    mutation RecordEvents($events: [LifecycleEventInput!]!) {
      recordEvents(events: $events) {
        index
        audit { ... on ModelAudit { ...ModelAuditFields } ... on ToolAudit { ...ToolAuditFields } }
        run { ...RunFields }
        lease { ...RunLeaseFields }
        error { code message runStatus }
      }
    }`),),
  threadAudits: operation('ThreadAudits', 'threadAudits', true, graphql(`
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
    }`),),
  run: operation('Run', 'run', true, graphql(`
    query Run($id: ID!) {
      run(id: $id) {
        ...RunFields
        thread { id }
        resumedFrom { id }
        toolCalls { ...ToolCallFields }
      }
    }`),),
};
