/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Which audits a search reads (searchAudits `kind`). */
export type AuditKind =
  /** Model calls: ModelAudit, role ASSISTANT. */
  | 'MODEL'
  /** Tool executions: ToolAudit, role TOOL. */
  | 'TOOL';

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

/** Which way a list is ordered. */
export type OrderDirection =
  /** The smallest first (names A to Z). */
  | 'ASC'
  /** The largest first (names Z to A). */
  | 'DESC';

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

/**
 * The order of `ToolActivity.tools`: by `field`, in `direction`. Tools that have no value in the field (none ended, for
 * FAILURE_RATE; no duration, for P50, P95 and MAX) come last either way; ties are ordered by name A to Z either way.
 */
export type ToolActivityOrder = {
  /** Left out: DESC, but ASC for NAME. */
  direction?: OrderDirection | null | undefined;
  /** The column. */
  field: ToolActivityOrderField;
};

/** A column `ToolActivity.tools` can be ordered by (ToolActivityOrder). */
export type ToolActivityOrderField =
  /** Running plus ended within the window: the most audits. */
  | 'CALLS'
  /** `failed` over the audits that ended within the window; a tool with none ended has none. */
  | 'FAILURE_RATE'
  /** `maxDurationMs`; a tool with no duration has none. */
  | 'MAX'
  /** The name, in Unicode code point order. */
  | 'NAME'
  /** `otherEnded`. */
  | 'OTHER_ENDED'
  /** `p50DurationMs`; a tool with no duration has none. */
  | 'P50'
  /** `p95DurationMs`; a tool with no duration has none. */
  | 'P95';

/** What a debugger hunts for in a tool call. */
export type ToolCallLedgerCase =
  /** A bare error was recorded; the run's end decides how it closes. */
  | 'AWAITING_VERDICT'
  /** Closed by the run's end (finishRun, cancelRun or a lease expiry), not by a terminal event of its own. */
  | 'CLOSED_BY_RUN_END'
  /** Declared by a model call and never started; its run (and any resume of it) has ended. */
  | 'NEVER_RUN'
  /** Declared by a model call and not started yet; its run (or a resume of it) is still going. */
  | 'PENDING'
  /** Running now; `leaseExpiresAt` says when the lease of the run it runs in expires. */
  | 'RUNNING';

/** A ledger entry's status: its latest execution's (the tool audit's) once it ran, else PENDING. */
export type ToolCallLedgerStatus =
  /** Its latest execution ended ABANDONED. */
  | 'ABANDONED'
  /** Its latest execution ended CANCELLED. */
  | 'CANCELLED'
  /** Its latest execution ended COMPLETED. */
  | 'COMPLETED'
  /** Its latest execution ended FAILED. */
  | 'FAILED'
  /** Its latest execution ended INTERRUPTED; a resume may start it again. */
  | 'INTERRUPTED'
  /** Declared and never started. */
  | 'PENDING'
  /** Its latest execution is RUNNING (a bare error awaiting the run's verdict included). */
  | 'RUNNING';

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

export type PageActivityAuditFragment = { id: string, name: string, startedAt: string | null, finishedAt: string | null, error: unknown, awaitingRunTerminal: boolean, run: { id: string, leaseExpiresAt: string | null, thread: { id: string, title: string | null } } };

export type PageToolActivitySubscriptionVariables = Exact<{
  windowSeconds?: number | null | undefined;
  name?: string | null | undefined;
  toolsFirst?: number | null | undefined;
  toolsOrder?: ToolActivityOrder | null | undefined;
}>;


export type PageToolActivitySubscription = { toolActivity: { at: string, since: string, runningCount: number, toolCount: number, running: Array<{ id: string, name: string, startedAt: string | null, finishedAt: string | null, error: unknown, awaitingRunTerminal: boolean, run: { id: string, leaseExpiresAt: string | null, thread: { id: string, title: string | null } } }>, recentFailures: Array<{ id: string, name: string, startedAt: string | null, finishedAt: string | null, error: unknown, awaitingRunTerminal: boolean, run: { id: string, leaseExpiresAt: string | null, thread: { id: string, title: string | null } } }>, tools: Array<{ name: string, calls: number, running: number, failureRate: number | null, otherEnded: number, p50DurationMs: number | null, p95DurationMs: number | null, maxDurationMs: number | null }>, longest: Array<{ maxDurationMs: number | null }>, buckets: Array<{ start: string, started: number, completed: number, failed: number, otherEnded: number }> } };

export type PageToolNamesQueryVariables = Exact<{
  windowSeconds?: number | null | undefined;
}>;


export type PageToolNamesQuery = { toolActivity: { tools: Array<{ name: string }> } };

export type PageRunFieldsFragment = { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: unknown, resumedFrom: { id: string } | null, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } };

export type PageAuditSummaryFragment = { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null };

type PageAuditCommonFields_ModelAudit_Fragment = { __typename: 'ModelAudit', id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null };

type PageAuditCommonFields_ToolAudit_Fragment = { __typename: 'ToolAudit', id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null };

export type PageAuditCommonFieldsFragment =
  | PageAuditCommonFields_ModelAudit_Fragment
  | PageAuditCommonFields_ToolAudit_Fragment
;

type PageAuditFields_ModelAudit_Fragment = { __typename: 'ModelAudit', model: string | null, error: unknown, usage: unknown, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus }> };

type PageAuditFields_ToolAudit_Fragment = { __typename: 'ToolAudit', name: string, toolCallId: string, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCall: { id: string, status: ToolCallStatus }, declaredBy: { id: string } };

export type PageAuditFieldsFragment =
  | PageAuditFields_ModelAudit_Fragment
  | PageAuditFields_ToolAudit_Fragment
;

export type AuditQueryVariables = Exact<{
  id: string | number;
}>;


export type AuditQuery = { audit:
    | { __typename: 'ModelAudit', model: string | null, error: unknown, input: unknown, output: unknown, usage: unknown, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null }
    | { __typename: 'ToolAudit', name: string, toolCallId: string, error: unknown, effectiveInput: unknown, output: unknown, awaitingRunTerminal: boolean, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCall: { declaredInput: unknown, status: ToolCallStatus }, declaredBy: { id: string } }
   };

export type AuditRunQueryVariables = Exact<{
  id: string | number;
}>;


export type AuditRunQuery = { audit:
    | { id: string, runId: string }
    | { id: string, runId: string }
   };

export type ThreadsQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  title?: string | null | undefined;
}>;


export type ThreadsQuery = { threads: { totalCount: number, edges: Array<{ cursor: string, node: { id: string, title: string | null, ownerId: string, createdAt: string, runCount: number, failedRunCount: number, lastActivityAt: string, latestRun: { id: string, status: RunStatus } | null, auditSummary: { modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number } } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } };

export type PageThreadInfoFragment = { id: string, title: string | null, ownerId: string, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } };

export type ThreadInfoQueryVariables = Exact<{
  id: string | number;
}>;


export type ThreadInfoQuery = { thread: { id: string, title: string | null, ownerId: string, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } } | null };

export type ThreadRunsQueryVariables = Exact<{
  id: string | number;
  first: number;
  after?: string | number | null | undefined;
}>;


export type ThreadRunsQuery = { thread: { id: string, title: string | null, ownerId: string, runs: Array<{ id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: unknown, resumedFrom: { id: string } | null, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } }>, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } } | null };

export type PageRunQueryVariables = Exact<{
  id: string | number;
}>;


export type PageRunQuery = { run: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: unknown, resumedFrom: { id: string } | null, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } } | null };

export type ThreadAuditsQueryVariables = Exact<{
  threadId: string | number;
  before?: string | number | null | undefined;
  runId?: string | number | null | undefined;
  limit?: number | null | undefined;
}>;


export type ThreadAuditsQuery = { threadAudits: { cursor: string, truncated: boolean, items: Array<
      | { __typename: 'ModelAudit', model: string | null, error: unknown, usage: unknown, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus }> }
      | { __typename: 'ToolAudit', name: string, toolCallId: string, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCall: { id: string, status: ToolCallStatus }, declaredBy: { id: string } }
    > } };

export type ThreadChangesSubscriptionVariables = Exact<{
  threadId: string | number;
  after?: string | null | undefined;
}>;


export type ThreadChangesSubscription = { threadChanges: { cursor: string, run: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: unknown, resumedFrom: { id: string } | null, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } } | null, audit:
      | { __typename: 'ModelAudit', model: string | null, error: unknown, usage: unknown, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus }> }
      | { __typename: 'ToolAudit', name: string, toolCallId: string, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCall: { id: string, status: ToolCallStatus }, declaredBy: { id: string } }
     | null } };

export type RunChangedSubscriptionVariables = Exact<{
  threadId: string | number;
}>;


export type RunChangedSubscription = { runChanged: { id: string, status: RunStatus, leaseOwner: string | null, leaseEpoch: number, leaseExpiresAt: string | null, createdAt: string, startedAt: string | null, finishedAt: string | null, error: unknown, resumedFrom: { id: string } | null, auditSummary: { audits: number, modelCalls: number, toolCalls: number, modelsFailed: number, toolsFailed: number, toolsAbandoned: number, toolsCancelled: number, toolsInterrupted: number, running: number, firstStartedAt: string | null, lastFinishedAt: string | null, inputTokens: string | null, outputTokens: string | null } } };

export type SearchAuditsQueryVariables = Exact<{
  text?: string | null | undefined;
  name?: string | null | undefined;
  status?: AuditStatus | null | undefined;
  kind?: AuditKind | null | undefined;
  threadId?: string | number | null | undefined;
  since?: string | null | undefined;
  until?: string | null | undefined;
  first?: number | null | undefined;
  after?: string | number | null | undefined;
}>;


export type SearchAuditsQuery = { searchAudits: { hasMore: boolean, items: Array<{ threadId: string, threadTitle: string | null, snippet: string | null, audit:
        | { __typename: 'ModelAudit', model: string | null, error: unknown, usage: unknown, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCalls: Array<{ id: string, toolCallId: string, name: string, status: ToolCallStatus }> }
        | { __typename: 'ToolAudit', name: string, toolCallId: string, error: unknown, awaitingRunTerminal: boolean, id: string, runId: string, operationId: string, sequence: string, finishedSequence: string | null, status: AuditStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, inputBytes: number | null, outputBytes: number | null, errorBytes: number | null, toolCall: { id: string, status: ToolCallStatus }, declaredBy: { id: string } }
       }> } };

export type ToolCallLedgerQueryVariables = Exact<{
  threadId?: string | number | null | undefined;
  name?: string | null | undefined;
  status?: ToolCallLedgerStatus | null | undefined;
  case?: ToolCallLedgerCase | null | undefined;
  first?: number | null | undefined;
  after?: string | null | undefined;
}>;


export type ToolCallLedgerQuery = { toolCallLedger: { edges: Array<{ node: { id: string, threadId: string, threadTitle: string | null, runId: string, declaredById: string, executedInRunId: string | null, auditId: string | null, toolCallId: string, name: string, declaredInput: unknown, effectiveInput: unknown, inputDiffers: boolean | null, status: ToolCallLedgerStatus, startedAt: string | null, finishedAt: string | null, durationMs: number | null, cases: Array<ToolCallLedgerCase>, leaseExpiresAt: string | null } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } };

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
export const PageActivityAuditFragmentDoc = new TypedDocumentString(`
    fragment PageActivityAudit on ToolAudit {
  id
  name
  startedAt
  finishedAt
  error
  awaitingRunTerminal
  run {
    id
    leaseExpiresAt
    thread {
      id
      title
    }
  }
}
    `, {"fragmentName":"PageActivityAudit"}) as unknown as TypedDocumentString<PageActivityAuditFragment, unknown>;
export const PageAuditSummaryFragmentDoc = new TypedDocumentString(`
    fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}
    `, {"fragmentName":"PageAuditSummary"}) as unknown as TypedDocumentString<PageAuditSummaryFragment, unknown>;
export const PageRunFieldsFragmentDoc = new TypedDocumentString(`
    fragment PageRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
  resumedFrom {
    id
  }
  auditSummary {
    ...PageAuditSummary
  }
}
    fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}`, {"fragmentName":"PageRunFields"}) as unknown as TypedDocumentString<PageRunFieldsFragment, unknown>;
export const PageAuditCommonFieldsFragmentDoc = new TypedDocumentString(`
    fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}
    `, {"fragmentName":"PageAuditCommonFields"}) as unknown as TypedDocumentString<PageAuditCommonFieldsFragment, unknown>;
export const PageAuditFieldsFragmentDoc = new TypedDocumentString(`
    fragment PageAuditFields on Audit {
  ...PageAuditCommonFields
  ... on ModelAudit {
    model
    error
    usage
    toolCalls {
      id
      toolCallId
      name
      status
    }
  }
  ... on ToolAudit {
    name
    toolCallId
    error
    awaitingRunTerminal
    toolCall {
      id
      status
    }
    declaredBy {
      id
    }
  }
}
    fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}`, {"fragmentName":"PageAuditFields"}) as unknown as TypedDocumentString<PageAuditFieldsFragment, unknown>;
export const PageThreadInfoFragmentDoc = new TypedDocumentString(`
    fragment PageThreadInfo on Thread {
  id
  title
  ownerId
  auditSummary {
    ...PageAuditSummary
  }
}
    fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}`, {"fragmentName":"PageThreadInfo"}) as unknown as TypedDocumentString<PageThreadInfoFragment, unknown>;
export const PageToolActivityDocument = new TypedDocumentString(`
    subscription PageToolActivity($windowSeconds: Int, $name: String, $toolsFirst: Int, $toolsOrder: ToolActivityOrder) {
  toolActivity(windowSeconds: $windowSeconds, name: $name) {
    at
    since
    runningCount
    running(first: 50) {
      ...PageActivityAudit
    }
    recentFailures(first: 20) {
      ...PageActivityAudit
    }
    toolCount
    tools(first: $toolsFirst, orderBy: $toolsOrder) {
      name
      calls
      running
      failureRate
      otherEnded
      p50DurationMs
      p95DurationMs
      maxDurationMs
    }
    longest: tools(first: 1, orderBy: {field: MAX}) {
      maxDurationMs
    }
    buckets {
      start
      started
      completed
      failed
      otherEnded
    }
  }
}
    fragment PageActivityAudit on ToolAudit {
  id
  name
  startedAt
  finishedAt
  error
  awaitingRunTerminal
  run {
    id
    leaseExpiresAt
    thread {
      id
      title
    }
  }
}`) as unknown as TypedDocumentString<PageToolActivitySubscription, PageToolActivitySubscriptionVariables>;
export const PageToolNamesDocument = new TypedDocumentString(`
    query PageToolNames($windowSeconds: Int) {
  toolActivity(windowSeconds: $windowSeconds) {
    tools(orderBy: {field: NAME}) {
      name
    }
  }
}
    `) as unknown as TypedDocumentString<PageToolNamesQuery, PageToolNamesQueryVariables>;
export const AuditDocument = new TypedDocumentString(`
    query Audit($id: ID!) {
  audit(id: $id) {
    ...PageAuditCommonFields
    ... on ModelAudit {
      model
      error
      input
      output
      usage
    }
    ... on ToolAudit {
      name
      toolCallId
      error
      effectiveInput
      output
      awaitingRunTerminal
      toolCall {
        declaredInput
        status
      }
      declaredBy {
        id
      }
    }
  }
}
    fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}`) as unknown as TypedDocumentString<AuditQuery, AuditQueryVariables>;
export const AuditRunDocument = new TypedDocumentString(`
    query AuditRun($id: ID!) {
  audit(id: $id) {
    id
    runId
  }
}
    `) as unknown as TypedDocumentString<AuditRunQuery, AuditRunQueryVariables>;
export const ThreadsDocument = new TypedDocumentString(`
    query Threads($first: Int, $after: String, $title: String) {
  threads(first: $first, after: $after, title: $title) {
    edges {
      cursor
      node {
        id
        title
        ownerId
        createdAt
        latestRun {
          id
          status
        }
        runCount
        failedRunCount
        lastActivityAt
        auditSummary {
          modelsFailed
          toolsFailed
          toolsAbandoned
          toolsCancelled
          toolsInterrupted
        }
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
    totalCount
  }
}
    `) as unknown as TypedDocumentString<ThreadsQuery, ThreadsQueryVariables>;
export const ThreadInfoDocument = new TypedDocumentString(`
    query ThreadInfo($id: ID!) {
  thread(id: $id) {
    ...PageThreadInfo
  }
}
    fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}
fragment PageThreadInfo on Thread {
  id
  title
  ownerId
  auditSummary {
    ...PageAuditSummary
  }
}`) as unknown as TypedDocumentString<ThreadInfoQuery, ThreadInfoQueryVariables>;
export const ThreadRunsDocument = new TypedDocumentString(`
    query ThreadRuns($id: ID!, $first: Int!, $after: ID) {
  thread(id: $id) {
    ...PageThreadInfo
    runs(first: $first, after: $after) {
      ...PageRunFields
    }
  }
}
    fragment PageRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
  resumedFrom {
    id
  }
  auditSummary {
    ...PageAuditSummary
  }
}
fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}
fragment PageThreadInfo on Thread {
  id
  title
  ownerId
  auditSummary {
    ...PageAuditSummary
  }
}`) as unknown as TypedDocumentString<ThreadRunsQuery, ThreadRunsQueryVariables>;
export const PageRunDocument = new TypedDocumentString(`
    query PageRun($id: ID!) {
  run(id: $id) {
    ...PageRunFields
  }
}
    fragment PageRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
  resumedFrom {
    id
  }
  auditSummary {
    ...PageAuditSummary
  }
}
fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}`) as unknown as TypedDocumentString<PageRunQuery, PageRunQueryVariables>;
export const ThreadAuditsDocument = new TypedDocumentString(`
    query ThreadAudits($threadId: ID!, $before: ID, $runId: ID, $limit: Int = 500) {
  threadAudits(threadId: $threadId, before: $before, runId: $runId, limit: $limit) {
    cursor
    truncated
    items {
      ...PageAuditFields
    }
  }
}
    fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}
fragment PageAuditFields on Audit {
  ...PageAuditCommonFields
  ... on ModelAudit {
    model
    error
    usage
    toolCalls {
      id
      toolCallId
      name
      status
    }
  }
  ... on ToolAudit {
    name
    toolCallId
    error
    awaitingRunTerminal
    toolCall {
      id
      status
    }
    declaredBy {
      id
    }
  }
}`) as unknown as TypedDocumentString<ThreadAuditsQuery, ThreadAuditsQueryVariables>;
export const ThreadChangesDocument = new TypedDocumentString(`
    subscription ThreadChanges($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) {
    cursor
    run {
      ...PageRunFields
    }
    audit {
      ...PageAuditFields
    }
  }
}
    fragment PageRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
  resumedFrom {
    id
  }
  auditSummary {
    ...PageAuditSummary
  }
}
fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}
fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}
fragment PageAuditFields on Audit {
  ...PageAuditCommonFields
  ... on ModelAudit {
    model
    error
    usage
    toolCalls {
      id
      toolCallId
      name
      status
    }
  }
  ... on ToolAudit {
    name
    toolCallId
    error
    awaitingRunTerminal
    toolCall {
      id
      status
    }
    declaredBy {
      id
    }
  }
}`) as unknown as TypedDocumentString<ThreadChangesSubscription, ThreadChangesSubscriptionVariables>;
export const RunChangedDocument = new TypedDocumentString(`
    subscription RunChanged($threadId: ID!) {
  runChanged(threadId: $threadId) {
    ...PageRunFields
  }
}
    fragment PageRunFields on Run {
  id
  status
  leaseOwner
  leaseEpoch
  leaseExpiresAt
  createdAt
  startedAt
  finishedAt
  error
  resumedFrom {
    id
  }
  auditSummary {
    ...PageAuditSummary
  }
}
fragment PageAuditSummary on AuditSummary {
  audits
  modelCalls
  toolCalls
  modelsFailed
  toolsFailed
  toolsAbandoned
  toolsCancelled
  toolsInterrupted
  running
  firstStartedAt
  lastFinishedAt
  inputTokens
  outputTokens
}`) as unknown as TypedDocumentString<RunChangedSubscription, RunChangedSubscriptionVariables>;
export const SearchAuditsDocument = new TypedDocumentString(`
    query SearchAudits($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $since: DateTime, $until: DateTime, $first: Int = 50, $after: ID) {
  searchAudits(
    text: $text
    name: $name
    status: $status
    kind: $kind
    threadId: $threadId
    since: $since
    until: $until
    first: $first
    after: $after
  ) {
    hasMore
    items {
      threadId
      threadTitle
      snippet
      audit {
        ...PageAuditFields
      }
    }
  }
}
    fragment PageAuditCommonFields on Audit {
  __typename
  id
  runId
  operationId
  sequence
  finishedSequence
  status
  startedAt
  finishedAt
  durationMs
  inputBytes
  outputBytes
  errorBytes
}
fragment PageAuditFields on Audit {
  ...PageAuditCommonFields
  ... on ModelAudit {
    model
    error
    usage
    toolCalls {
      id
      toolCallId
      name
      status
    }
  }
  ... on ToolAudit {
    name
    toolCallId
    error
    awaitingRunTerminal
    toolCall {
      id
      status
    }
    declaredBy {
      id
    }
  }
}`) as unknown as TypedDocumentString<SearchAuditsQuery, SearchAuditsQueryVariables>;
export const ToolCallLedgerDocument = new TypedDocumentString(`
    query ToolCallLedger($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {
  toolCallLedger(
    threadId: $threadId
    name: $name
    status: $status
    case: $case
    first: $first
    after: $after
  ) {
    edges {
      node {
        id
        threadId
        threadTitle
        runId
        declaredById
        executedInRunId
        auditId
        toolCallId
        name
        declaredInput
        effectiveInput
        inputDiffers
        status
        startedAt
        finishedAt
        durationMs
        cases
        leaseExpiresAt
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    `) as unknown as TypedDocumentString<ToolCallLedgerQuery, ToolCallLedgerQueryVariables>;