/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
/** The typed-document interface of @graphql-typed-document-node/core, declared here so the client needs no package for it. */
interface DocumentTypeDecoration<TResult, TVariables> {
  __apiType?: (variables: TVariables) => TResult;
}
/** One ordinary message to append to a thread's history (never an audit). */
export type AppendMessageInput = {
  /** The content: any JSON value (at most MAX_JSON_BYTES). */
  content: import("../../json-value.js").JsonValue;
  /** Who the message speaks for. */
  role: MessageRole;
  /** The thread to append it to. */
  threadId: string | number;
};

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

/** A run to create: its thread and, for a resume, the ended run it continues. */
export type CreateRunInput = {
  /**
   * The caller's idempotency key for this creation (1 to 256 characters), one per thread. The
   * same createId again in the same thread gets the run the first send created, instead of a
   * second one; with another resumeFromRunId it is CONFLICT.
   */
  createId?: string | null | undefined;
  /** Resume an earlier run of the same thread; it must have ended. */
  resumeFromRunId?: string | number | null | undefined;
  /** The thread to create it in. */
  threadId: string | number;
};

/** A thread to create: an optional title and idempotency key. */
export type CreateThreadInput = {
  /**
   * The caller's idempotency key for this creation (1 to 256 characters). The same caller sending
   * the same createId again gets the thread the first send created, instead of a second one; with
   * another title it is CONFLICT. Keys are per caller, and a deleted thread's key is free again.
   */
  createId?: string | null | undefined;
  /** The thread's title (at most 1,000 characters); none leaves it null. */
  title?: string | null | undefined;
};

/** A tool call the model's response declared. */
export type DeclaredToolCallInput = {
  /** The arguments the model declared: the ToolCall's declaredInput. */
  args?: import("../../json-value.js").JsonValue | null | undefined;
  /** The id the model gave the call: the toolCallId its recordToolStarted sends. */
  id: string;
  /** The tool's name. */
  name: string;
};

/** A run's end, from the worker holding its lease. */
export type FinishRunInput = {
  /** Why the run failed or was cancelled (any JSON): the run's `error`. */
  error?: import("../../json-value.js").JsonValue | null | undefined;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The final state's messages (the full checkpoint), used only to complete bare tool errors. */
  stateMessages?: Array<import("../../json-value.js").JsonValue> | null | undefined;
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

/**
 * One lifecycle event of a batch (`recordEvents`): exactly one field is set. A claimRun is claimed
 * exactly as the claimRun mutation claims; the events that its lease fences need the epoch it
 * returns, so a client sends them in a later batch (docs/runtime-authors.md, "Batches").
 */
export type LifecycleEventInput =
  {   /** A claimRun mutation. */
  claimRun: ClaimRunInput; finishRun?: never; modelFinished?: never; modelStarted?: never; renewLease?: never; toolError?: never; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never;   /** A finishRun mutation. */
  finishRun: FinishRunInput; modelFinished?: never; modelStarted?: never; renewLease?: never; toolError?: never; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never;   /** A recordModelFinished mutation. */
  modelFinished: ModelFinishedInput; modelStarted?: never; renewLease?: never; toolError?: never; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never; modelFinished?: never;   /** A recordModelStarted mutation. */
  modelStarted: ModelStartedInput; renewLease?: never; toolError?: never; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never; modelFinished?: never; modelStarted?: never;   /** A renewLease mutation. */
  renewLease: RenewLeaseInput; toolError?: never; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never; modelFinished?: never; modelStarted?: never; renewLease?: never;   /** A recordToolError mutation. */
  toolError: ToolErrorInput; toolFinished?: never; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never; modelFinished?: never; modelStarted?: never; renewLease?: never; toolError?: never;   /** A recordToolFinished mutation. */
  toolFinished: ToolFinishedInput; toolStarted?: never; }
  |  { claimRun?: never; finishRun?: never; modelFinished?: never; modelStarted?: never; renewLease?: never; toolError?: never; toolFinished?: never;   /** A recordToolStarted mutation. */
  toolStarted: ToolStartedInput; };

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
  error?: import("../../json-value.js").JsonValue | null | undefined;
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** When the runtime saw this event, on its wall clock: the audit's finishedAt. */
  observedAt: string;
  /** The model call's id, as its start sent it. */
  operationId: string;
  /** The model's response (any JSON). */
  output?: import("../../json-value.js").JsonValue | null | undefined;
  /** The runtime's root stream sequence number of this event (non-negative): the audit's finishedSequence. */
  sequence?: string | null | undefined;
  /** COMPLETED or FAILED. */
  status: AuditStatus;
  /** The tool calls the model declared; each becomes a PENDING ToolCall. */
  toolCalls?: Array<DeclaredToolCallInput> | null | undefined;
  /** The token usage as the runtime reports it (any JSON); auditSummary reads its token counts. */
  usage?: import("../../json-value.js").JsonValue | null | undefined;
};

/** The start of a model call. */
export type ModelStartedInput = {
  /** A monotonic clock reading at the start: durationMs is measured from it to an end read on the same clockId. */
  clock?: ClockReadingInput | null | undefined;
  /** What was sent to the model (any JSON), e.g. its messages. */
  input?: import("../../json-value.js").JsonValue | null | undefined;
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

/** A renewal of the caller's unexpired lease, as the renewLease mutation takes it. */
export type RenewLeaseInput = {
  /** The caller's current lease of the run (RunLease.runId and epoch). */
  lease: LeaseInput;
  /** The lease lasts this long from now (a shorter one shortens it); the server clamps it to its configured bounds. */
  leaseSeconds?: number | null | undefined;
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
  error: import("../../json-value.js").JsonValue;
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
  output: import("../../json-value.js").JsonValue;
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
  effectiveInput?: import("../../json-value.js").JsonValue | null | undefined;
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

export type ToolCallFieldsFragment = { id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

type AuditFields_ModelAudit_Fragment = { __typename: 'ModelAudit', id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

type AuditFields_ToolAudit_Fragment = { __typename: 'ToolAudit', id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

export type AuditFieldsFragment =
  | AuditFields_ModelAudit_Fragment
  | AuditFields_ToolAudit_Fragment
;

export type ModelAuditFieldsFragment = { __typename: 'ModelAudit', model: string | null, input: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, usage: import("../../json-value.js").JsonValue | null, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> };

export type ToolAuditFieldsFragment = { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null };

export type RunFieldsFragment = { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null };

export type RunLeaseFieldsFragment = { runId: string, owner: string, epoch: number, expiresAt: string, grantedAt: string };

export type ThreadFieldsFragment = { id: string, title: string | null, ownerId: string, createdAt: string };

export type MessageFieldsFragment = { id: string, role: MessageRole, content: import("../../json-value.js").JsonValue | null, createdAt: string };

export type CreateThreadMutationVariables = Exact<{
  input: CreateThreadInput;
}>;


export type CreateThreadMutation = { createThread: { id: string, title: string | null, ownerId: string, createdAt: string } };

export type AppendMessageMutationVariables = Exact<{
  input: AppendMessageInput;
}>;


export type AppendMessageMutation = { appendMessage: { id: string, role: MessageRole, content: import("../../json-value.js").JsonValue | null, createdAt: string } };

export type CreateRunMutationVariables = Exact<{
  input: CreateRunInput;
}>;


export type CreateRunMutation = { createRun: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null } };

export type CancelRunMutationVariables = Exact<{
  runId: string | number;
}>;


export type CancelRunMutation = { cancelRun: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null } };

export type DeleteThreadMutationVariables = Exact<{
  id: string | number;
}>;


export type DeleteThreadMutation = { deleteThread: { threadId: string, runs: number, audits: number, toolCalls: number, messages: number, verifiedAt: string } };

export type ClaimRunMutationVariables = Exact<{
  input: ClaimRunInput;
}>;


export type ClaimRunMutation = { claimRun: { runId: string, owner: string, epoch: number, expiresAt: string, grantedAt: string } };

export type RenewLeaseMutationVariables = Exact<{
  lease: LeaseInput;
  leaseSeconds?: number | null | undefined;
}>;


export type RenewLeaseMutation = { renewLease: { runId: string, owner: string, epoch: number, expiresAt: string, grantedAt: string } };

export type RecordModelStartedMutationVariables = Exact<{
  input: ModelStartedInput;
}>;


export type RecordModelStartedMutation = { recordModelStarted: { __typename: 'ModelAudit', model: string | null, input: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, usage: import("../../json-value.js").JsonValue | null, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> } };

export type RecordModelFinishedMutationVariables = Exact<{
  input: ModelFinishedInput;
}>;


export type RecordModelFinishedMutation = { recordModelFinished: { __typename: 'ModelAudit', model: string | null, input: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, usage: import("../../json-value.js").JsonValue | null, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> } };

export type RecordToolStartedMutationVariables = Exact<{
  input: ToolStartedInput;
}>;


export type RecordToolStartedMutation = { recordToolStarted: { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null } };

export type RecordToolFinishedMutationVariables = Exact<{
  input: ToolFinishedInput;
}>;


export type RecordToolFinishedMutation = { recordToolFinished: { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null } };

export type RecordToolErrorMutationVariables = Exact<{
  input: ToolErrorInput;
}>;


export type RecordToolErrorMutation = { recordToolError: { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null } };

export type FinishRunMutationVariables = Exact<{
  input: FinishRunInput;
}>;


export type FinishRunMutation = { finishRun: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null } };

export type RecordEventsMutationVariables = Exact<{
  events: Array<LifecycleEventInput> | LifecycleEventInput;
}>;


export type RecordEventsMutation = { recordEvents: Array<{ index: number, audit:
      | { __typename: 'ModelAudit', model: string | null, input: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, usage: import("../../json-value.js").JsonValue | null, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> }
      | { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null }
     | null, run: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null } | null, lease: { runId: string, owner: string, epoch: number, expiresAt: string, grantedAt: string } | null, error: { code: string, message: string, runStatus: RunStatus | null } | null }> };

export type ThreadAuditsQueryVariables = Exact<{
  threadId: string | number;
  limit?: number | null | undefined;
}>;


export type ThreadAuditsQuery = { threadAudits: { threadId: string, cursor: string, truncated: boolean, items: Array<
      | { __typename: 'ModelAudit', model: string | null, input: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, usage: import("../../json-value.js").JsonValue | null, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> }
      | { __typename: 'ToolAudit', toolCallId: string, name: string, effectiveInput: import("../../json-value.js").JsonValue | null, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, awaitingRunTerminal: boolean, id: string, runId: string, role: MessageRole, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, toolCall: { id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }, declaredBy: { id: string, operationId: string } }
    > } };

export type RunQueryVariables = Exact<{
  id: string | number;
}>;


export type RunQuery = { run: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: import("../../json-value.js").JsonValue | null, thread: { id: string }, resumedFrom: { id: string } | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, declaredInput: import("../../json-value.js").JsonValue | null, effectiveInput: import("../../json-value.js").JsonValue | null, status: ToolCallStatus, output: import("../../json-value.js").JsonValue | null, error: import("../../json-value.js").JsonValue | null, startedAt: string | null, finishedAt: string | null, durationMs: number | null }> } | null };

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
export const AuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment AuditFields on Audit {
  __typename
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
    `, {"fragmentName":"AuditFields"}) as unknown as TypedDocumentString<AuditFieldsFragment, unknown>;
export const ToolCallFieldsFragmentDoc = new TypedDocumentString(`
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
    `, {"fragmentName":"ToolCallFields"}) as unknown as TypedDocumentString<ToolCallFieldsFragment, unknown>;
export const ModelAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    ...ToolCallFields
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment AuditFields on Audit {
  __typename
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
}`, {"fragmentName":"ModelAuditFields"}) as unknown as TypedDocumentString<ModelAuditFieldsFragment, unknown>;
export const ToolAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}
    fragment AuditFields on Audit {
  __typename
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
}`, {"fragmentName":"ToolAuditFields"}) as unknown as TypedDocumentString<ToolAuditFieldsFragment, unknown>;
export const RunFieldsFragmentDoc = new TypedDocumentString(`
    fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}
    `, {"fragmentName":"RunFields"}) as unknown as TypedDocumentString<RunFieldsFragment, unknown>;
export const RunLeaseFieldsFragmentDoc = new TypedDocumentString(`
    fragment RunLeaseFields on RunLease {
  runId
  owner
  epoch
  expiresAt
  grantedAt
}
    `, {"fragmentName":"RunLeaseFields"}) as unknown as TypedDocumentString<RunLeaseFieldsFragment, unknown>;
export const ThreadFieldsFragmentDoc = new TypedDocumentString(`
    fragment ThreadFields on Thread {
  id
  title
  ownerId
  createdAt
}
    `, {"fragmentName":"ThreadFields"}) as unknown as TypedDocumentString<ThreadFieldsFragment, unknown>;
export const MessageFieldsFragmentDoc = new TypedDocumentString(`
    fragment MessageFields on Message {
  id
  role
  content
  createdAt
}
    `, {"fragmentName":"MessageFields"}) as unknown as TypedDocumentString<MessageFieldsFragment, unknown>;
export const CreateThreadDocument = new TypedDocumentString(`
    mutation CreateThread($input: CreateThreadInput!) {
  createThread(input: $input) {
    ...ThreadFields
  }
}
    fragment ThreadFields on Thread {
  id
  title
  ownerId
  createdAt
}`) as unknown as TypedDocumentString<CreateThreadMutation, CreateThreadMutationVariables>;
export const AppendMessageDocument = new TypedDocumentString(`
    mutation AppendMessage($input: AppendMessageInput!) {
  appendMessage(input: $input) {
    ...MessageFields
  }
}
    fragment MessageFields on Message {
  id
  role
  content
  createdAt
}`) as unknown as TypedDocumentString<AppendMessageMutation, AppendMessageMutationVariables>;
export const CreateRunDocument = new TypedDocumentString(`
    mutation CreateRun($input: CreateRunInput!) {
  createRun(input: $input) {
    ...RunFields
  }
}
    fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}`) as unknown as TypedDocumentString<CreateRunMutation, CreateRunMutationVariables>;
export const CancelRunDocument = new TypedDocumentString(`
    mutation CancelRun($runId: ID!) {
  cancelRun(runId: $runId) {
    ...RunFields
  }
}
    fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}`) as unknown as TypedDocumentString<CancelRunMutation, CancelRunMutationVariables>;
export const DeleteThreadDocument = new TypedDocumentString(`
    mutation DeleteThread($id: ID!) {
  deleteThread(id: $id) {
    threadId
    runs
    audits
    toolCalls
    messages
    verifiedAt
  }
}
    `) as unknown as TypedDocumentString<DeleteThreadMutation, DeleteThreadMutationVariables>;
export const ClaimRunDocument = new TypedDocumentString(`
    mutation ClaimRun($input: ClaimRunInput!) {
  claimRun(input: $input) {
    ...RunLeaseFields
  }
}
    fragment RunLeaseFields on RunLease {
  runId
  owner
  epoch
  expiresAt
  grantedAt
}`) as unknown as TypedDocumentString<ClaimRunMutation, ClaimRunMutationVariables>;
export const RenewLeaseDocument = new TypedDocumentString(`
    mutation RenewLease($lease: LeaseInput!, $leaseSeconds: Int) {
  renewLease(lease: $lease, leaseSeconds: $leaseSeconds) {
    ...RunLeaseFields
  }
}
    fragment RunLeaseFields on RunLease {
  runId
  owner
  epoch
  expiresAt
  grantedAt
}`) as unknown as TypedDocumentString<RenewLeaseMutation, RenewLeaseMutationVariables>;
export const RecordModelStartedDocument = new TypedDocumentString(`
    mutation RecordModelStarted($input: ModelStartedInput!) {
  recordModelStarted(input: $input) {
    ...ModelAuditFields
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment AuditFields on Audit {
  __typename
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
fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    ...ToolCallFields
  }
}`) as unknown as TypedDocumentString<RecordModelStartedMutation, RecordModelStartedMutationVariables>;
export const RecordModelFinishedDocument = new TypedDocumentString(`
    mutation RecordModelFinished($input: ModelFinishedInput!) {
  recordModelFinished(input: $input) {
    ...ModelAuditFields
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment AuditFields on Audit {
  __typename
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
fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    ...ToolCallFields
  }
}`) as unknown as TypedDocumentString<RecordModelFinishedMutation, RecordModelFinishedMutationVariables>;
export const RecordToolStartedDocument = new TypedDocumentString(`
    mutation RecordToolStarted($input: ToolStartedInput!) {
  recordToolStarted(input: $input) {
    ...ToolAuditFields
  }
}
    fragment AuditFields on Audit {
  __typename
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
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}`) as unknown as TypedDocumentString<RecordToolStartedMutation, RecordToolStartedMutationVariables>;
export const RecordToolFinishedDocument = new TypedDocumentString(`
    mutation RecordToolFinished($input: ToolFinishedInput!) {
  recordToolFinished(input: $input) {
    ...ToolAuditFields
  }
}
    fragment AuditFields on Audit {
  __typename
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
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}`) as unknown as TypedDocumentString<RecordToolFinishedMutation, RecordToolFinishedMutationVariables>;
export const RecordToolErrorDocument = new TypedDocumentString(`
    mutation RecordToolError($input: ToolErrorInput!) {
  recordToolError(input: $input) {
    ...ToolAuditFields
  }
}
    fragment AuditFields on Audit {
  __typename
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
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}`) as unknown as TypedDocumentString<RecordToolErrorMutation, RecordToolErrorMutationVariables>;
export const FinishRunDocument = new TypedDocumentString(`
    mutation FinishRun($input: FinishRunInput!) {
  finishRun(input: $input) {
    ...RunFields
  }
}
    fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}`) as unknown as TypedDocumentString<FinishRunMutation, FinishRunMutationVariables>;
export const RecordEventsDocument = new TypedDocumentString(`
    mutation RecordEvents($events: [LifecycleEventInput!]!) {
  recordEvents(events: $events) {
    index
    audit {
      ... on ModelAudit {
        ...ModelAuditFields
      }
      ... on ToolAudit {
        ...ToolAuditFields
      }
    }
    run {
      ...RunFields
    }
    lease {
      ...RunLeaseFields
    }
    error {
      code
      message
      runStatus
    }
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment AuditFields on Audit {
  __typename
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
fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    ...ToolCallFields
  }
}
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}
fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}
fragment RunLeaseFields on RunLease {
  runId
  owner
  epoch
  expiresAt
  grantedAt
}`) as unknown as TypedDocumentString<RecordEventsMutation, RecordEventsMutationVariables>;
export const ThreadAuditsDocument = new TypedDocumentString(`
    query ThreadAudits($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    threadId
    cursor
    truncated
    items {
      ... on ModelAudit {
        ...ModelAuditFields
      }
      ... on ToolAudit {
        ...ToolAuditFields
        toolCall {
          ...ToolCallFields
        }
        declaredBy {
          id
          operationId
        }
      }
    }
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment AuditFields on Audit {
  __typename
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
fragment ModelAuditFields on ModelAudit {
  ...AuditFields
  model
  input
  output
  error
  usage
  toolCalls {
    ...ToolCallFields
  }
}
fragment ToolAuditFields on ToolAudit {
  ...AuditFields
  toolCallId
  name
  effectiveInput
  output
  error
  awaitingRunTerminal
}`) as unknown as TypedDocumentString<ThreadAuditsQuery, ThreadAuditsQueryVariables>;
export const RunDocument = new TypedDocumentString(`
    query Run($id: ID!) {
  run(id: $id) {
    ...RunFields
    thread {
      id
    }
    resumedFrom {
      id
    }
    toolCalls {
      ...ToolCallFields
    }
  }
}
    fragment ToolCallFields on ToolCall {
  id
  toolCallId
  name
  declaredInput
  effectiveInput
  status
  output
  error
  startedAt
  finishedAt
  durationMs
}
fragment RunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
}`) as unknown as TypedDocumentString<RunQuery, RunQueryVariables>;