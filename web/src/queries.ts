// Every GraphQL document the page sends. `graphql()` is generated from schema.graphql
// (npm run codegen): each document is a typed string whose result and variables types follow,
// so a field renamed in the schema breaks the page's typecheck.
import { graphql } from './generated/graphql/index.js';

export const RUN_FIELDS = graphql(`
  fragment PageRunFields on Run {
    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id }
    auditSummary { ...PageAuditSummary }
  }`);

/** What all of a run's (or a thread's) audits add up to, loaded or not (docs/debug-ui.md, "Failures at a glance"). */
export const AUDIT_SUMMARY_FIELDS = graphql(`
  fragment PageAuditSummary on AuditSummary {
    audits modelCalls toolCalls modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted running
    firstStartedAt lastFinishedAt inputTokens outputTokens
  }`);

export const AUDIT_COMMON_FIELDS = graphql(`
  fragment PageAuditCommonFields on Audit { __typename id runId operationId sequence finishedSequence status startedAt finishedAt durationMs inputBytes outputBytes errorBytes }`);

/**
 * What a timeline row shows: ids, names, statuses, times, the payloads' sizes, and the error (a
 * row shows why it was closed), a model call's usage (token counts) and the tool calls it declared
 * (a call never started shows as a row under it). Inputs and outputs (up to
 * MAX_JSON_BYTES each) load when a row is opened: AUDIT_DETAIL.
 */
export const AUDIT_FIELDS = graphql(`
  fragment PageAuditFields on Audit {
    ...PageAuditCommonFields
    ... on ModelAudit { model error usage toolCalls { id toolCallId name status } }
    ... on ToolAudit { name toolCallId error awaitingRunTerminal toolCall { id status } declaredBy { id } }
  }`);

export const AUDIT_DETAIL = graphql(`
  query Audit($id: ID!) {
    audit(id: $id) {
      ...PageAuditCommonFields
      ... on ModelAudit { model error input output usage }
      ... on ToolAudit { name toolCallId error effectiveInput output awaitingRunTerminal toolCall { declaredInput status } declaredBy { id } }
    }
  }`);

/** The run an audit belongs to: a link to an old row reads that run's entries only. */
export const AUDIT_RUN = graphql(`
  query AuditRun($id: ID!) { audit(id: $id) { id runId } }`);

export const THREADS = graphql(`
  query Threads($first: Int, $after: String, $title: String) {
    threads(first: $first, after: $after, title: $title) {
      edges { cursor node {
        id title ownerId createdAt latestRun { id status } runCount failedRunCount lastActivityAt
        auditSummary { modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted }
      } }
      pageInfo { hasNextPage endCursor }
      totalCount
    }
  }`);

/** The most runs one read returns (Thread.runs' bound): a longer thread is read again `after` the last. */
export const RUNS_PAGE = 500;

/** The open thread's title, owner and totals, read again as it changes (its failure line). */
export const THREAD_INFO_FIELDS = graphql(`
  fragment PageThreadInfo on Thread { id title ownerId auditSummary { ...PageAuditSummary } }`);

export const THREAD_INFO = graphql(`
  query ThreadInfo($id: ID!) { thread(id: $id) { ...PageThreadInfo } }`);

export const THREAD_RUNS = graphql(`
  query ThreadRuns($id: ID!, $first: Int!, $after: ID) { thread(id: $id) { ...PageThreadInfo runs(first: $first, after: $after) { ...PageRunFields } } }`);

/** One run with its summary: a run whose entries are not all loaded counts them by it, and its audits' changes do not carry it. */
export const RUN = graphql(`
  query PageRun($id: ID!) { run(id: $id) { ...PageRunFields } }`);

export const THREAD_AUDITS = graphql(`
  query ThreadAudits($threadId: ID!, $before: ID, $runId: ID, $limit: Int = 500) {
    threadAudits(threadId: $threadId, before: $before, runId: $runId, limit: $limit) { cursor truncated items { ...PageAuditFields } }
  }`);

export const THREAD_CHANGES = graphql(`
  subscription ThreadChanges($threadId: ID!, $after: String) {
    threadChanges(threadId: $threadId, after: $after) { cursor run { ...PageRunFields } audit { ...PageAuditFields } }
  }`);

export const RUN_CHANGED = graphql(`
  subscription RunChanged($threadId: ID!) { runChanged(threadId: $threadId) { ...PageRunFields } }`);

export const SEARCH_AUDITS = graphql(`
  query SearchAudits($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $since: DateTime, $until: DateTime, $first: Int = 50, $after: ID) {
    searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, since: $since, until: $until, first: $first, after: $after) {
      hasMore
      items { threadId threadTitle snippet audit { ...PageAuditFields } }
    }
  }`);

/** One page of the tool-call ledger (the server computes the cases: src/domain/tool-call-ledger.ts). */
export const TOOL_CALL_LEDGER = graphql(`
  query ToolCallLedger($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {
    toolCallLedger(threadId: $threadId, name: $name, status: $status, case: $case, first: $first, after: $after) {
      edges { node {
        id threadId threadTitle runId declaredById executedInRunId auditId toolCallId name declaredInput effectiveInput inputDiffers
        status startedAt finishedAt durationMs cases leaseExpiresAt
      } }
      pageInfo { hasNextPage endCursor }
    }
  }`);
