// TypeScript shapes of the contract (../../shared/contract/schema.graphql) as the client sends
// and receives them: BigInt travels as a decimal string, DateTime as an ISO 8601 string.

export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
/** `undefined` members are allowed because JSON.stringify drops them. */
export type JsonObject = { [key: string]: JsonValue | undefined };

export type RunStatus = 'QUEUED' | 'RUNNING' | 'INTERRUPTED' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type RunTerminalStatus = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';
export type AuditStatus = 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED' | 'ABANDONED';
export type ToolCallStatus = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type MessageRole = 'USER' | 'ASSISTANT' | 'TOOL' | 'SYSTEM';

/** A 64-bit integer: the client converts bigint and number to the decimal string the API expects. */
export type BigIntLike = string | bigint | number;
/** An RFC 3339 timestamp; a Date is converted with toISOString(). */
export type DateTimeLike = string | Date;

// ---- Results ----

export interface Thread {
  id: string;
  title: string | null;
  ownerId: string;
  createdAt: string;
}

export interface Message {
  id: string;
  role: MessageRole;
  content: JsonValue;
  createdAt: string;
}

export interface Run {
  id: string;
  status: RunStatus;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: JsonValue;
}

/** A run as its owner reads it with `AuditClient.run`. */
export interface RunDetails extends Run {
  thread: { id: string };
  resumedFrom: { id: string } | null;
  toolCalls: ToolCall[];
}

export interface RunLease {
  runId: string;
  owner: string;
  epoch: number;
  expiresAt: string;
}

export interface ToolCall {
  id: string;
  toolCallId: string;
  name: string;
  declaredInput: JsonValue;
  effectiveInput: JsonValue;
  status: ToolCallStatus;
  output: JsonValue;
  error: JsonValue;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
}

interface AuditBase {
  id: string;
  runId: string;
  role: MessageRole;
  operationId: string;
  sequence: string;
  finishedSequence: string | null;
  status: AuditStatus;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
}

export interface ModelAudit extends AuditBase {
  __typename: 'ModelAudit';
  model: string | null;
  input: JsonValue;
  output: JsonValue;
  error: JsonValue;
  usage: JsonValue;
  toolCalls: ToolCall[];
}

export interface ToolAudit extends AuditBase {
  __typename: 'ToolAudit';
  toolCallId: string;
  name: string;
  effectiveInput: JsonValue;
  output: JsonValue;
  error: JsonValue;
  awaitingRunTerminal: boolean;
}

/** A tool audit as `threadAudits` returns it, with its projection and declaring model call. */
export interface ToolAuditWithLinks extends ToolAudit {
  toolCall: ToolCall;
  declaredBy: { id: string; operationId: string };
}

export type ThreadAuditItem = ModelAudit | ToolAuditWithLinks;

export interface ThreadAudits {
  threadId: string;
  items: ThreadAuditItem[];
  truncated: boolean;
}

// ---- Inputs ----

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
}

export interface AppendMessageInput {
  threadId: string;
  role: MessageRole;
  content: JsonValue;
}

export interface CreateRunInput {
  threadId: string;
  resumeFromRunId?: string | null;
}

export interface DeclaredToolCallInput {
  id: string;
  name: string;
  args?: JsonValue;
}

export interface ModelStartedInput extends Observation {
  lease: LeaseInput;
  operationId: string;
  sequence: BigIntLike;
  model?: string | null;
  input?: JsonValue;
}

export interface ModelFinishedInput extends Observation {
  lease: LeaseInput;
  operationId: string;
  /** COMPLETED or FAILED. */
  status: AuditStatus;
  output?: JsonValue;
  error?: JsonValue;
  usage?: JsonValue;
  toolCalls?: DeclaredToolCallInput[];
  sequence?: BigIntLike | null;
}

export interface ToolStartedInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  name: string;
  effectiveInput?: JsonObject | null;
  sequence: BigIntLike;
  namespace?: string[];
}

export interface ToolFinishedInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  /** The raw tool message envelope, e.g. {content, status, id, name, artifact}. */
  output: JsonValue;
  sequence?: BigIntLike | null;
  namespace?: string[];
}

export interface ToolErrorInput extends Observation {
  lease: LeaseInput;
  toolCallId: string;
  error: JsonValue;
  sequence?: BigIntLike | null;
  namespace?: string[];
}

export interface FinishRunInput {
  lease: LeaseInput;
  status: RunTerminalStatus;
  error?: JsonValue;
  stateMessages?: JsonValue[];
}
