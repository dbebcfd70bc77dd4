/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Where a model or tool audit is: RUNNING until its own terminal event or its run's end closes it. */
export type AuditStatus =
  /** Closed by the run's end or a lease expiry without a terminal event of its own. */
  | 'ABANDONED'
  /** Closed by the run being cancelled (cancelRun or finishRun CANCELLED). */
  | 'CANCELLED'
  /** Closed by its own finish: a model call finished COMPLETED, a tool output without `status: "error"`. */
  | 'COMPLETED'
  /** A model call finished FAILED, a tool output with `status: "error"`, or closed by a FAILED run (or a COMPLETED one whose final state holds the bare error). */
  | 'FAILED'
  /** Closed by finishRun INTERRUPTED; a resumed run may run the tool again, as a new audit. */
  | 'INTERRUPTED'
  /** Started and not closed yet; a tool audit with a bare error stays RUNNING (awaitingRunTerminal) until the run's verdict. */
  | 'RUNNING';

/** A claim of a QUEUED run: the lease length and an optional idempotency key. */
export type ClaimRunInput = {
  /**
   * The worker's idempotency key for this claim (at most 256 characters). A retry by the same
   * worker with the same claimId, while the lease it got is still current, returns that same
   * lease instead of INVALID_TRANSITION.
   */
  claimId?: string | null | undefined;
  /** Lease length; the server clamps it to its configured bounds. */
  leaseSeconds?: number | null | undefined;
  /** The QUEUED run to claim. */
  runId: string | number;
};

/** One reading of a monotonic clock. Durations are computed only between readings of the same clockId. */
export type ClockReadingInput = {
  /** Which monotonic clock was read (1 to 256 characters): one per process, e.g. host, pid and a random suffix. */
  clockId: string;
  /** The reading in nanoseconds, non-negative (e.g. process.hrtime.bigint()). */
  nanos: string;
};

/** A tool call the model's response declared. */
export type DeclaredToolCallInput = {
  /** The arguments the model declared: the ToolCall's declaredInput. */
  args?: unknown;
  /** The id the model gave the call: the toolCallId its recordToolStarted sends. */
  id: string;
  /** The tool's name. */
  name: string;
};

/** A run's end, from the worker holding its lease. */
export type FinishRunInput = {
  /** Why the run failed or was cancelled (any JSON): the run's `error`. */
  error?: unknown;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The final state's messages (the full checkpoint), used only to complete bare tool errors. */
  stateMessages?: Array<unknown> | null | undefined;
  /** How the run ended; what is still open in it closes accordingly (docs/semantics.md, "Run terminal convergence"). */
  status: RunTerminalStatus;
};

/** Proof that the caller holds the run's current lease. The owner is the authenticated worker. */
export type LeaseInput = {
  /** The epoch the claim returned (RunLease.epoch), the run's fencing token: a write with another epoch is LEASE_LOST. */
  epoch: number;
  /** The run whose lease the caller holds. */
  runId: string | number;
};

/** Who a message speaks for, as appended; a model audit's role is ASSISTANT, a tool audit's TOOL. */
export type MessageRole =
  /** The model's message; the role of every model audit. */
  | 'ASSISTANT'
  /** A system message. */
  | 'SYSTEM'
  /** A tool's result; the role of every tool audit. */
  | 'TOOL'
  /** A user's message. */
  | 'USER';

/** The end of a model call, with the tool calls it declared. */
export type ModelFinishedInput = {
  /** A monotonic clock reading at this event: durationMs when the start's reading has the same clockId, else null. */
  clock?: ClockReadingInput | null | undefined;
  /** Why it failed (any JSON). */
  error?: unknown;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** When the runtime saw this event, on its wall clock: the audit's finishedAt. */
  observedAt: string;
  /** The model call's id, as its start sent it. */
  operationId: string;
  /** The model's response (any JSON). */
  output?: unknown;
  /** The runtime's root stream sequence number of this event (non-negative): the audit's finishedSequence. */
  sequence?: string | null | undefined;
  /** COMPLETED or FAILED. */
  status: AuditStatus;
  /** The tool calls the model declared; each becomes a PENDING ToolCall. */
  toolCalls?: Array<DeclaredToolCallInput> | null | undefined;
  /** The token usage as the runtime reports it (any JSON); auditSummary reads its token counts. */
  usage?: unknown;
};

/** The start of a model call. */
export type ModelStartedInput = {
  /** A monotonic clock reading at the start: durationMs is measured from it to an end read on the same clockId. */
  clock?: ClockReadingInput | null | undefined;
  /** What was sent to the model (any JSON), e.g. its messages. */
  input?: unknown;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The model's name (at most 256 characters). */
  model?: string | null | undefined;
  /** When the runtime saw the start, on its wall clock: the audit's startedAt (a replay keeps the first). */
  observedAt: string;
  /** The model call's id, the runtime's, unique within the run (1 to 256 characters). */
  operationId: string;
  /** The runtime's root stream sequence number of the start (non-negative; its order is not checked): it orders the timeline. */
  sequence: string;
};

/** Where a run is: QUEUED until a worker claims it, RUNNING under its lease, then how it ended. */
export type RunStatus =
  /** Ended by cancelRun, or by its worker's finishRun CANCELLED. */
  | 'CANCELLED'
  /** Ended by its worker's finishRun COMPLETED. */
  | 'COMPLETED'
  /** Ended by its worker's finishRun FAILED, or by its lease expiring (error {code: "LEASE_EXPIRED"}). */
  | 'FAILED'
  /** Ended by its worker's finishRun INTERRUPTED (e.g. to wait for a human); a new run may resume it. */
  | 'INTERRUPTED'
  /** Created (createRun) and not claimed yet. */
  | 'QUEUED'
  /** Claimed by a worker, which holds its lease (leaseOwner, leaseEpoch, leaseExpiresAt). */
  | 'RUNNING';

/** The terminal statuses an agent runtime may report in finishRun. */
export type RunTerminalStatus =
  /** The run was cancelled. Audits still open close CANCELLED. */
  | 'CANCELLED'
  /** The run succeeded. Audits still open close ABANDONED (a bare error: FAILED when the final state says so). */
  | 'COMPLETED'
  /** The run failed. Audits still open close FAILED. */
  | 'FAILED'
  /** The run paused, for a resume. Audits still open close INTERRUPTED and their ToolCalls go back to PENDING. */
  | 'INTERRUPTED';

/** A ToolCall's status: PENDING as declared, then its latest execution's, mirrored from the tool audit. */
export type ToolCallStatus =
  /** Its tool audit ended CANCELLED. */
  | 'CANCELLED'
  /** Its tool audit ended COMPLETED. */
  | 'COMPLETED'
  /** Its tool audit ended FAILED or ABANDONED. */
  | 'FAILED'
  /** Declared and not started, or its execution was INTERRUPTED: a resume may start it. */
  | 'PENDING'
  /** Its tool audit is RUNNING (a bare error awaiting the run's verdict included). */
  | 'RUNNING';

/** A bare error of a running tool (an exception, a timeout, an interrupt): recorded, while the audit stays RUNNING until the run's verdict. */
export type ToolErrorInput = {
  /** A monotonic clock reading at this event: durationMs when the start's reading has the same clockId, else null. */
  clock?: ClockReadingInput | null | undefined;
  /** The error (any JSON): the audit's `error`. */
  error: unknown;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The runtime namespace the event came from; only the root namespace (empty) is accepted. */
  namespace?: Array<string> | null | undefined;
  /** When the runtime saw this event, on its wall clock: the audit's finishedAt. */
  observedAt: string;
  /** The runtime's root stream sequence number of this event (non-negative): the audit's finishedSequence. */
  sequence?: string | null | undefined;
  /** The tool call whose RUNNING audit in this run it concerns. */
  toolCallId: string;
};

/** The result of a tool's execution: FAILED when its output has `status: "error"`, else COMPLETED. */
export type ToolFinishedInput = {
  /** A monotonic clock reading at this event: durationMs when the start's reading has the same clockId, else null. */
  clock?: ClockReadingInput | null | undefined;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The runtime namespace the event came from; only the root namespace (empty) is accepted. */
  namespace?: Array<string> | null | undefined;
  /** When the runtime saw this event, on its wall clock: the audit's finishedAt. */
  observedAt: string;
  /** The raw tool message envelope, e.g. {content, status, id, name, artifact}. */
  output: unknown;
  /** The runtime's root stream sequence number of this event (non-negative): the audit's finishedSequence. */
  sequence?: string | null | undefined;
  /** The tool call whose audit in this run it closes (never started here: INVALID_TRANSITION). */
  toolCallId: string;
};

/** The start of a declared tool call's execution in this run. */
export type ToolStartedInput = {
  /** A monotonic clock reading at the start: durationMs is measured from it to an end read on the same clockId. */
  clock?: ClockReadingInput | null | undefined;
  /** What the tool actually runs with: a JSON object (null is taken as {}). */
  effectiveInput?: unknown;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The tool's name (1 to 256 characters). */
  name: string;
  /** The runtime namespace the event came from; only the root namespace (empty) is accepted. */
  namespace?: Array<string> | null | undefined;
  /** When the runtime saw the start, on its wall clock: the audit's startedAt (a replay keeps the first). */
  observedAt: string;
  /** The runtime's root stream sequence number of the start (non-negative; its order is not checked): it orders the timeline. */
  sequence: string;
  /** The id the model gave the call: it binds to the newest model call that declared it, in this run or a run it resumes (none: MODEL_NOT_FOUND). */
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