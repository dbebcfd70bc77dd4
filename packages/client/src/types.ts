// TypeScript shapes of the contract as the client sends and receives them: BigInt travels as a
// decimal string, DateTime as an ISO 8601 string. The results and enums are generated from
// schema.graphql (npm run codegen), so a schema change the client depends on breaks its build;
// the inputs below are the client's conveniences, checked against the generated variables
// wherever the client sends them.
import type * as Generated from './generated/graphql/graphql.js';
import type { JsonValue } from './json-value.js';

export type { JsonObject, JsonValue } from './json-value.js';
export type RunStatus = Generated.RunStatus;
export type RunTerminalStatus = Generated.RunTerminalStatus;
export type AuditStatus = Generated.AuditStatus;
export type ToolCallStatus = Generated.ToolCallStatus;
export type MessageRole = Generated.MessageRole;
/** How a model call ends: the server refuses any other status in recordModelFinished. */
export type ModelFinishedStatus = Extract<AuditStatus, 'COMPLETED' | 'FAILED'>;

/** A 64-bit integer: the client converts bigint and number to the decimal string the API expects. */
export type BigIntLike = string | bigint | number;
/** An RFC 3339 timestamp; a Date is converted with toISOString(). */
export type DateTimeLike = string | Date;

// ---- Results: the shapes the client's documents select, generated from the schema ----

export type Thread = Generated.ThreadFieldsFragment;
export type Message = Generated.MessageFieldsFragment;
export type Run = Generated.RunFieldsFragment;
/** A run as its owner reads it with `AuditClient.run`. */
export type RunDetails = NonNullable<Generated.RunQuery['run']>;
export type RunLease = Generated.RunLeaseFieldsFragment;
/** What a deletion removed, and when a read after it found nothing of the thread left (docs/deletion.md). */
export type DeletionReceipt = Generated.DeleteThreadMutation['deleteThread'];
export type ToolCall = Generated.ToolCallFieldsFragment;
export type ModelAudit = Generated.ModelAuditFieldsFragment;
export type ToolAudit = Generated.ToolAuditFieldsFragment;
export type ThreadAudits = Generated.ThreadAuditsQuery['threadAudits'];
export type ThreadAuditItem = ThreadAudits['items'][number];
/** A tool audit as `threadAudits` returns it, with its projection and declaring model call. */
export type ToolAuditWithLinks = Extract<ThreadAuditItem, { __typename: 'ToolAudit' }>;

// ---- Inputs ----
// A payload (`unknown` or `object`) may be any value: the client converts it with toJson and
// replaces one over `maxJsonBytes` by a marker (README, "Payloads") before sending it.

/** Proof of the lease; a `RunLease` from claimRun/renewLease fits (extra fields are dropped). */
export interface LeaseInput {
  runId: string;
  epoch: number;
}

export interface ClockReadingInput {
  clockId: string;
  nanos: BigIntLike;
}

/**
 * When the event was observed. Omitted: the client fills `observedAt` with now and `clock`
 * with a reading of this process's monotonic clock. `clock: null` sends no reading.
 */
export interface Observation {
  observedAt?: DateTimeLike;
  clock?: ClockReadingInput | null;
}

export interface CreateThreadInput {
  title?: string | null;
  /**
   * The creation's idempotency key (1 to 256 characters): the same key sent again gets the thread
   * it created. A fresh UUID unless given; give your own to resend a creation across restarts.
   */
  createId?: string;
}

export interface AppendMessageInput {
  threadId: string;
  role: MessageRole;
  content: JsonValue;
}

export interface CreateRunInput {
  threadId: string;
  resumeFromRunId?: string | null;
  /**
   * The creation's idempotency key in the thread (1 to 256 characters): the same key sent again
   * gets the run it created. A fresh UUID unless given; give your own to resend a creation across restarts.
   */
  createId?: string;
}

export interface DeclaredToolCallInput {
  id: string;
  name: string;
  args?: unknown;
}

export interface ModelStartedInput extends Observation {
  lease: LeaseInput;
  operationId: string;
  sequence: BigIntLike;
  model?: string | null;
  input?: unknown;
}

export interface ModelFinishedInput extends Observation {
  lease: LeaseInput;
  operationId: string;
  status: ModelFinishedStatus;
  output?: unknown;
  error?: unknown;
  usage?: unknown;
  toolCalls?: DeclaredToolCallInput[];
  sequence?: BigIntLike | null;
}

export interface ToolStartedInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  name: string;
  /** An object (the arguments the tool really received). */
  effectiveInput?: object | null;
  sequence: BigIntLike;
  namespace?: string[];
}

export interface ToolFinishedInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  /** The raw tool message envelope, an object, e.g. {content, status, id, name, artifact}. */
  output: object;
  sequence?: BigIntLike | null;
  namespace?: string[];
}

export interface ToolErrorInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  error: unknown;
  sequence?: BigIntLike | null;
  namespace?: string[];
}

export interface FinishRunInput {
  lease: LeaseInput;
  status: RunTerminalStatus;
  error?: unknown;
  /** The final state's messages (the whole checkpoint may be given): only those that can settle a bare error are sent, per tool call id the last, when its status is "error". */
  stateMessages?: unknown[];
}
