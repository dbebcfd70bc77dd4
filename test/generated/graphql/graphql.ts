/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type AuditStatus =
  /** Closed by the run's end or a lease expiry without a terminal event of its own. */
  | 'ABANDONED'
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED'
  | 'RUNNING';

export type ClaimRunInput = {
  /**
   * The worker's idempotency key for this claim (at most 256 characters). A retry by the same
   * worker with the same claimId, while the lease it got is still current, returns that same
   * lease instead of INVALID_TRANSITION.
   */
  claimId?: string | null | undefined;
  /** Lease length; the server clamps it to its configured bounds. */
  leaseSeconds?: number | null | undefined;
  runId: string | number;
};

/** One reading of a monotonic clock. Durations are computed only between readings of the same clockId. */
export type ClockReadingInput = {
  clockId: string;
  nanos: string;
};

export type DeclaredToolCallInput = {
  args?: unknown;
  id: string;
  name: string;
};

export type FinishRunInput = {
  error?: unknown;
  lease: LeaseInput;
  /** The final state's messages (the full checkpoint), used only to complete bare tool errors. */
  stateMessages?: Array<unknown> | null | undefined;
  status: RunTerminalStatus;
};

/** Proof that the caller holds the run's current lease. The owner is the authenticated worker. */
export type LeaseInput = {
  epoch: number;
  runId: string | number;
};

export type MessageRole =
  | 'ASSISTANT'
  | 'SYSTEM'
  | 'TOOL'
  | 'USER';

export type ModelFinishedInput = {
  clock?: ClockReadingInput | null | undefined;
  error?: unknown;
  lease: LeaseInput;
  observedAt: string;
  operationId: string;
  output?: unknown;
  sequence?: string | null | undefined;
  /** COMPLETED or FAILED. */
  status: AuditStatus;
  /** The tool calls the model declared; each becomes a PENDING ToolCall. */
  toolCalls?: Array<DeclaredToolCallInput> | null | undefined;
  usage?: unknown;
};

export type ModelStartedInput = {
  clock?: ClockReadingInput | null | undefined;
  input?: unknown;
  lease: LeaseInput;
  model?: string | null | undefined;
  observedAt: string;
  operationId: string;
  sequence: string;
};

export type RunStatus =
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED'
  | 'QUEUED'
  | 'RUNNING';

/** The terminal statuses an agent runtime may report in finishRun. */
export type RunTerminalStatus =
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED';

export type ToolCallStatus =
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'PENDING'
  | 'RUNNING';

export type ToolErrorInput = {
  clock?: ClockReadingInput | null | undefined;
  error: unknown;
  lease: LeaseInput;
  namespace?: Array<string> | null | undefined;
  observedAt: string;
  sequence?: string | null | undefined;
  toolCallId: string;
};

export type ToolFinishedInput = {
  clock?: ClockReadingInput | null | undefined;
  lease: LeaseInput;
  namespace?: Array<string> | null | undefined;
  observedAt: string;
  /** The raw tool message envelope, e.g. {content, status, id, name, artifact}. */
  output: unknown;
  sequence?: string | null | undefined;
  toolCallId: string;
};

export type ToolStartedInput = {
  clock?: ClockReadingInput | null | undefined;
  effectiveInput?: unknown;
  lease: LeaseInput;
  name: string;
  /** The runtime namespace the event came from; only the root namespace (empty) is accepted. */
  namespace?: Array<string> | null | undefined;
  observedAt: string;
  sequence: string;
  toolCallId: string;
};

type LifecycleAuditFields_ModelAudit_Fragment = { id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

type LifecycleAuditFields_ToolAudit_Fragment = { id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

export type LifecycleAuditFieldsFragment =
  | LifecycleAuditFields_ModelAudit_Fragment
  | LifecycleAuditFields_ToolAudit_Fragment
;

export type LifecycleToolAuditFieldsFragment = { toolCallId: string, name: string, effectiveInput: unknown, output: unknown, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCall: { id: string, toolCallId: string, status: ToolCallStatus, effectiveInput: unknown, output: unknown, error: unknown, durationMs: number | null } };

export type LifecycleModelAuditFieldsFragment = { model: string | null, input: unknown, output: unknown, error: unknown, usage: unknown, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus, declaredInput: unknown }> };

export type WorkerRunFieldsFragment = { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, startedAt: string | null, finishedAt: string | null, error: unknown };

export type LifecycleClaimRunMutationVariables = Exact<{
  input: ClaimRunInput;
}>;


export type LifecycleClaimRunMutation = { result: { runId: string, owner: string, epoch: number, expiresAt: string } };

export type LifecycleRenewLeaseMutationVariables = Exact<{
  lease: LeaseInput;
  leaseSeconds?: number | null | undefined;
}>;


export type LifecycleRenewLeaseMutation = { result: { runId: string, owner: string, epoch: number, expiresAt: string } };

export type LifecycleModelStartedMutationVariables = Exact<{
  input: ModelStartedInput;
}>;


export type LifecycleModelStartedMutation = { result: { model: string | null, input: unknown, output: unknown, error: unknown, usage: unknown, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus, declaredInput: unknown }> } };

export type LifecycleModelFinishedMutationVariables = Exact<{
  input: ModelFinishedInput;
}>;


export type LifecycleModelFinishedMutation = { result: { model: string | null, input: unknown, output: unknown, error: unknown, usage: unknown, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus, declaredInput: unknown }> } };

export type LifecycleToolStartedMutationVariables = Exact<{
  input: ToolStartedInput;
}>;


export type LifecycleToolStartedMutation = { result: { toolCallId: string, name: string, effectiveInput: unknown, output: unknown, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCall: { id: string, toolCallId: string, status: ToolCallStatus, effectiveInput: unknown, output: unknown, error: unknown, durationMs: number | null } } };

export type LifecycleToolFinishedMutationVariables = Exact<{
  input: ToolFinishedInput;
}>;


export type LifecycleToolFinishedMutation = { result: { toolCallId: string, name: string, effectiveInput: unknown, output: unknown, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCall: { id: string, toolCallId: string, status: ToolCallStatus, effectiveInput: unknown, output: unknown, error: unknown, durationMs: number | null } } };

export type LifecycleToolErrorMutationVariables = Exact<{
  input: ToolErrorInput;
}>;


export type LifecycleToolErrorMutation = { result: { toolCallId: string, name: string, effectiveInput: unknown, output: unknown, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCall: { id: string, toolCallId: string, status: ToolCallStatus, effectiveInput: unknown, output: unknown, error: unknown, durationMs: number | null } } };

export type LifecycleFinishRunMutationVariables = Exact<{
  input: FinishRunInput;
}>;


export type LifecycleFinishRunMutation = { result: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, startedAt: string | null, finishedAt: string | null, error: unknown } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const LifecycleAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
    `, {"fragmentName":"LifecycleAuditFields"}) as unknown as TypedDocumentString<LifecycleAuditFieldsFragment, unknown>;
export const LifecycleToolAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment LifecycleToolAuditFields on ToolAudit {
  ...LifecycleAuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
  toolCall {
    id
    toolCallId
    status
    effectiveInput
    output
    error
    durationMs
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}`, {"fragmentName":"LifecycleToolAuditFields"}) as unknown as TypedDocumentString<LifecycleToolAuditFieldsFragment, unknown>;
export const LifecycleModelAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment LifecycleModelAuditFields on ModelAudit {
  ...LifecycleAuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    id
    toolCallId
    name
    status
    declaredInput
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}`, {"fragmentName":"LifecycleModelAuditFields"}) as unknown as TypedDocumentString<LifecycleModelAuditFieldsFragment, unknown>;
export const WorkerRunFieldsFragmentDoc = new TypedDocumentString(`
    fragment WorkerRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  startedAt
  finishedAt
  error
}
    `, {"fragmentName":"WorkerRunFields"}) as unknown as TypedDocumentString<WorkerRunFieldsFragment, unknown>;
export const LifecycleClaimRunDocument = new TypedDocumentString(`
    mutation LifecycleClaimRun($input: ClaimRunInput!) {
  result: claimRun(input: $input) {
    runId
    owner
    epoch
    expiresAt
  }
}
    `) as unknown as TypedDocumentString<LifecycleClaimRunMutation, LifecycleClaimRunMutationVariables>;
export const LifecycleRenewLeaseDocument = new TypedDocumentString(`
    mutation LifecycleRenewLease($lease: LeaseInput!, $leaseSeconds: Int) {
  result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) {
    runId
    owner
    epoch
    expiresAt
  }
}
    `) as unknown as TypedDocumentString<LifecycleRenewLeaseMutation, LifecycleRenewLeaseMutationVariables>;
export const LifecycleModelStartedDocument = new TypedDocumentString(`
    mutation LifecycleModelStarted($input: ModelStartedInput!) {
  result: recordModelStarted(input: $input) {
    ...LifecycleModelAuditFields
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
fragment LifecycleModelAuditFields on ModelAudit {
  ...LifecycleAuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    id
    toolCallId
    name
    status
    declaredInput
  }
}`) as unknown as TypedDocumentString<LifecycleModelStartedMutation, LifecycleModelStartedMutationVariables>;
export const LifecycleModelFinishedDocument = new TypedDocumentString(`
    mutation LifecycleModelFinished($input: ModelFinishedInput!) {
  result: recordModelFinished(input: $input) {
    ...LifecycleModelAuditFields
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
fragment LifecycleModelAuditFields on ModelAudit {
  ...LifecycleAuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    id
    toolCallId
    name
    status
    declaredInput
  }
}`) as unknown as TypedDocumentString<LifecycleModelFinishedMutation, LifecycleModelFinishedMutationVariables>;
export const LifecycleToolStartedDocument = new TypedDocumentString(`
    mutation LifecycleToolStarted($input: ToolStartedInput!) {
  result: recordToolStarted(input: $input) {
    ...LifecycleToolAuditFields
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
fragment LifecycleToolAuditFields on ToolAudit {
  ...LifecycleAuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
  toolCall {
    id
    toolCallId
    status
    effectiveInput
    output
    error
    durationMs
  }
}`) as unknown as TypedDocumentString<LifecycleToolStartedMutation, LifecycleToolStartedMutationVariables>;
export const LifecycleToolFinishedDocument = new TypedDocumentString(`
    mutation LifecycleToolFinished($input: ToolFinishedInput!) {
  result: recordToolFinished(input: $input) {
    ...LifecycleToolAuditFields
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
fragment LifecycleToolAuditFields on ToolAudit {
  ...LifecycleAuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
  toolCall {
    id
    toolCallId
    status
    effectiveInput
    output
    error
    durationMs
  }
}`) as unknown as TypedDocumentString<LifecycleToolFinishedMutation, LifecycleToolFinishedMutationVariables>;
export const LifecycleToolErrorDocument = new TypedDocumentString(`
    mutation LifecycleToolError($input: ToolErrorInput!) {
  result: recordToolError(input: $input) {
    ...LifecycleToolAuditFields
  }
}
    fragment LifecycleAuditFields on Audit {
  id
  runId
  role
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
}
fragment LifecycleToolAuditFields on ToolAudit {
  ...LifecycleAuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
  toolCall {
    id
    toolCallId
    status
    effectiveInput
    output
    error
    durationMs
  }
}`) as unknown as TypedDocumentString<LifecycleToolErrorMutation, LifecycleToolErrorMutationVariables>;
export const LifecycleFinishRunDocument = new TypedDocumentString(`
    mutation LifecycleFinishRun($input: FinishRunInput!) {
  result: finishRun(input: $input) {
    ...WorkerRunFields
  }
}
    fragment WorkerRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  startedAt
  finishedAt
  error
}`) as unknown as TypedDocumentString<LifecycleFinishRunMutation, LifecycleFinishRunMutationVariables>;