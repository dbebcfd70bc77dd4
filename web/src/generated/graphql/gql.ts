/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  fragment PageActivityAudit on ToolAudit { id name startedAt finishedAt error awaitingRunTerminal run { id leaseExpiresAt thread { id title } } }": typeof types.PageActivityAuditFragmentDoc,
    "\n  subscription PageToolActivity($windowSeconds: Int, $name: String, $toolsFirst: Int, $toolsOrder: ToolActivityOrder) {\n    toolActivity(windowSeconds: $windowSeconds, name: $name) {\n      at since runningCount\n      running(first: 50) { ...PageActivityAudit }\n      recentFailures(first: 20) { ...PageActivityAudit }\n      toolCount\n      tools(first: $toolsFirst, orderBy: $toolsOrder) { name calls running failureRate otherEnded p50DurationMs p95DurationMs maxDurationMs }\n      longest: tools(first: 1, orderBy: { field: MAX }) { maxDurationMs }\n      buckets { start started completed failed otherEnded }\n    }\n  }": typeof types.PageToolActivityDocument,
    "\n  query PageToolNames($windowSeconds: Int) { toolActivity(windowSeconds: $windowSeconds) { tools(orderBy: { field: NAME }) { name } } }": typeof types.PageToolNamesDocument,
    "\n  fragment PageRunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id }\n    auditSummary { ...PageAuditSummary }\n  }": typeof types.PageRunFieldsFragmentDoc,
    "\n  fragment PageAuditSummary on AuditSummary {\n    audits modelCalls toolCalls modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted running\n    firstStartedAt lastFinishedAt inputTokens outputTokens\n  }": typeof types.PageAuditSummaryFragmentDoc,
    "\n  fragment PageAuditCommonFields on Audit { __typename id runId operationId sequence finishedSequence status startedAt finishedAt durationMs inputBytes outputBytes errorBytes }": typeof types.PageAuditCommonFieldsFragmentDoc,
    "\n  fragment PageAuditFields on Audit {\n    ...PageAuditCommonFields\n    ... on ModelAudit { model error usage toolCalls { id toolCallId name status } }\n    ... on ToolAudit { name toolCallId error awaitingRunTerminal toolCall { id status } declaredBy { id } }\n  }": typeof types.PageAuditFieldsFragmentDoc,
    "\n  query Audit($id: ID!) {\n    audit(id: $id) {\n      ...PageAuditCommonFields\n      ... on ModelAudit { model error input output usage }\n      ... on ToolAudit { name toolCallId error effectiveInput output awaitingRunTerminal toolCall { declaredInput status } declaredBy { id } }\n    }\n  }": typeof types.AuditDocument,
    "\n  query AuditRun($id: ID!) { audit(id: $id) { id runId } }": typeof types.AuditRunDocument,
    "\n  query Threads($first: Int, $after: String, $title: String) {\n    threads(first: $first, after: $after, title: $title) {\n      edges { cursor node {\n        id title ownerId createdAt latestRun { id status } runCount failedRunCount lastActivityAt\n        auditSummary { modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted }\n      } }\n      pageInfo { hasNextPage endCursor }\n      totalCount\n    }\n  }": typeof types.ThreadsDocument,
    "\n  fragment PageThreadInfo on Thread { id title ownerId auditSummary { ...PageAuditSummary } }": typeof types.PageThreadInfoFragmentDoc,
    "\n  query ThreadInfo($id: ID!) { thread(id: $id) { ...PageThreadInfo } }": typeof types.ThreadInfoDocument,
    "\n  query ThreadRuns($id: ID!, $first: Int!, $after: ID) { thread(id: $id) { ...PageThreadInfo runs(first: $first, after: $after) { ...PageRunFields } } }": typeof types.ThreadRunsDocument,
    "\n  query PageRun($id: ID!) { run(id: $id) { ...PageRunFields } }": typeof types.PageRunDocument,
    "\n  query ThreadAudits($threadId: ID!, $before: ID, $runId: ID, $limit: Int = 500) {\n    threadAudits(threadId: $threadId, before: $before, runId: $runId, limit: $limit) { cursor truncated items { ...PageAuditFields } }\n  }": typeof types.ThreadAuditsDocument,
    "\n  subscription ThreadChanges($threadId: ID!, $after: String) {\n    threadChanges(threadId: $threadId, after: $after) { cursor run { ...PageRunFields } audit { ...PageAuditFields } }\n  }": typeof types.ThreadChangesDocument,
    "\n  subscription RunChanged($threadId: ID!) { runChanged(threadId: $threadId) { ...PageRunFields } }": typeof types.RunChangedDocument,
    "\n  query SearchAudits($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $since: DateTime, $until: DateTime, $first: Int = 50, $after: ID) {\n    searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, since: $since, until: $until, first: $first, after: $after) {\n      hasMore\n      items { threadId threadTitle snippet audit { ...PageAuditFields } }\n    }\n  }": typeof types.SearchAuditsDocument,
    "\n  query ToolCallLedger($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {\n    toolCallLedger(threadId: $threadId, name: $name, status: $status, case: $case, first: $first, after: $after) {\n      edges { node {\n        id threadId threadTitle runId declaredById executedInRunId auditId toolCallId name declaredInput effectiveInput inputDiffers\n        status startedAt finishedAt durationMs cases leaseExpiresAt\n      } }\n      pageInfo { hasNextPage endCursor }\n    }\n  }": typeof types.ToolCallLedgerDocument,
};
const documents: Documents = {
    "\n  fragment PageActivityAudit on ToolAudit { id name startedAt finishedAt error awaitingRunTerminal run { id leaseExpiresAt thread { id title } } }": types.PageActivityAuditFragmentDoc,
    "\n  subscription PageToolActivity($windowSeconds: Int, $name: String, $toolsFirst: Int, $toolsOrder: ToolActivityOrder) {\n    toolActivity(windowSeconds: $windowSeconds, name: $name) {\n      at since runningCount\n      running(first: 50) { ...PageActivityAudit }\n      recentFailures(first: 20) { ...PageActivityAudit }\n      toolCount\n      tools(first: $toolsFirst, orderBy: $toolsOrder) { name calls running failureRate otherEnded p50DurationMs p95DurationMs maxDurationMs }\n      longest: tools(first: 1, orderBy: { field: MAX }) { maxDurationMs }\n      buckets { start started completed failed otherEnded }\n    }\n  }": types.PageToolActivityDocument,
    "\n  query PageToolNames($windowSeconds: Int) { toolActivity(windowSeconds: $windowSeconds) { tools(orderBy: { field: NAME }) { name } } }": types.PageToolNamesDocument,
    "\n  fragment PageRunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id }\n    auditSummary { ...PageAuditSummary }\n  }": types.PageRunFieldsFragmentDoc,
    "\n  fragment PageAuditSummary on AuditSummary {\n    audits modelCalls toolCalls modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted running\n    firstStartedAt lastFinishedAt inputTokens outputTokens\n  }": types.PageAuditSummaryFragmentDoc,
    "\n  fragment PageAuditCommonFields on Audit { __typename id runId operationId sequence finishedSequence status startedAt finishedAt durationMs inputBytes outputBytes errorBytes }": types.PageAuditCommonFieldsFragmentDoc,
    "\n  fragment PageAuditFields on Audit {\n    ...PageAuditCommonFields\n    ... on ModelAudit { model error usage toolCalls { id toolCallId name status } }\n    ... on ToolAudit { name toolCallId error awaitingRunTerminal toolCall { id status } declaredBy { id } }\n  }": types.PageAuditFieldsFragmentDoc,
    "\n  query Audit($id: ID!) {\n    audit(id: $id) {\n      ...PageAuditCommonFields\n      ... on ModelAudit { model error input output usage }\n      ... on ToolAudit { name toolCallId error effectiveInput output awaitingRunTerminal toolCall { declaredInput status } declaredBy { id } }\n    }\n  }": types.AuditDocument,
    "\n  query AuditRun($id: ID!) { audit(id: $id) { id runId } }": types.AuditRunDocument,
    "\n  query Threads($first: Int, $after: String, $title: String) {\n    threads(first: $first, after: $after, title: $title) {\n      edges { cursor node {\n        id title ownerId createdAt latestRun { id status } runCount failedRunCount lastActivityAt\n        auditSummary { modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted }\n      } }\n      pageInfo { hasNextPage endCursor }\n      totalCount\n    }\n  }": types.ThreadsDocument,
    "\n  fragment PageThreadInfo on Thread { id title ownerId auditSummary { ...PageAuditSummary } }": types.PageThreadInfoFragmentDoc,
    "\n  query ThreadInfo($id: ID!) { thread(id: $id) { ...PageThreadInfo } }": types.ThreadInfoDocument,
    "\n  query ThreadRuns($id: ID!, $first: Int!, $after: ID) { thread(id: $id) { ...PageThreadInfo runs(first: $first, after: $after) { ...PageRunFields } } }": types.ThreadRunsDocument,
    "\n  query PageRun($id: ID!) { run(id: $id) { ...PageRunFields } }": types.PageRunDocument,
    "\n  query ThreadAudits($threadId: ID!, $before: ID, $runId: ID, $limit: Int = 500) {\n    threadAudits(threadId: $threadId, before: $before, runId: $runId, limit: $limit) { cursor truncated items { ...PageAuditFields } }\n  }": types.ThreadAuditsDocument,
    "\n  subscription ThreadChanges($threadId: ID!, $after: String) {\n    threadChanges(threadId: $threadId, after: $after) { cursor run { ...PageRunFields } audit { ...PageAuditFields } }\n  }": types.ThreadChangesDocument,
    "\n  subscription RunChanged($threadId: ID!) { runChanged(threadId: $threadId) { ...PageRunFields } }": types.RunChangedDocument,
    "\n  query SearchAudits($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $since: DateTime, $until: DateTime, $first: Int = 50, $after: ID) {\n    searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, since: $since, until: $until, first: $first, after: $after) {\n      hasMore\n      items { threadId threadTitle snippet audit { ...PageAuditFields } }\n    }\n  }": types.SearchAuditsDocument,
    "\n  query ToolCallLedger($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {\n    toolCallLedger(threadId: $threadId, name: $name, status: $status, case: $case, first: $first, after: $after) {\n      edges { node {\n        id threadId threadTitle runId declaredById executedInRunId auditId toolCallId name declaredInput effectiveInput inputDiffers\n        status startedAt finishedAt durationMs cases leaseExpiresAt\n      } }\n      pageInfo { hasNextPage endCursor }\n    }\n  }": types.ToolCallLedgerDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageActivityAudit on ToolAudit { id name startedAt finishedAt error awaitingRunTerminal run { id leaseExpiresAt thread { id title } } }"): typeof import('./graphql.js').PageActivityAuditFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription PageToolActivity($windowSeconds: Int, $name: String, $toolsFirst: Int, $toolsOrder: ToolActivityOrder) {\n    toolActivity(windowSeconds: $windowSeconds, name: $name) {\n      at since runningCount\n      running(first: 50) { ...PageActivityAudit }\n      recentFailures(first: 20) { ...PageActivityAudit }\n      toolCount\n      tools(first: $toolsFirst, orderBy: $toolsOrder) { name calls running failureRate otherEnded p50DurationMs p95DurationMs maxDurationMs }\n      longest: tools(first: 1, orderBy: { field: MAX }) { maxDurationMs }\n      buckets { start started completed failed otherEnded }\n    }\n  }"): typeof import('./graphql.js').PageToolActivityDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query PageToolNames($windowSeconds: Int) { toolActivity(windowSeconds: $windowSeconds) { tools(orderBy: { field: NAME }) { name } } }"): typeof import('./graphql.js').PageToolNamesDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageRunFields on Run {\n    id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id }\n    auditSummary { ...PageAuditSummary }\n  }"): typeof import('./graphql.js').PageRunFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageAuditSummary on AuditSummary {\n    audits modelCalls toolCalls modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted running\n    firstStartedAt lastFinishedAt inputTokens outputTokens\n  }"): typeof import('./graphql.js').PageAuditSummaryFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageAuditCommonFields on Audit { __typename id runId operationId sequence finishedSequence status startedAt finishedAt durationMs inputBytes outputBytes errorBytes }"): typeof import('./graphql.js').PageAuditCommonFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageAuditFields on Audit {\n    ...PageAuditCommonFields\n    ... on ModelAudit { model error usage toolCalls { id toolCallId name status } }\n    ... on ToolAudit { name toolCallId error awaitingRunTerminal toolCall { id status } declaredBy { id } }\n  }"): typeof import('./graphql.js').PageAuditFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Audit($id: ID!) {\n    audit(id: $id) {\n      ...PageAuditCommonFields\n      ... on ModelAudit { model error input output usage }\n      ... on ToolAudit { name toolCallId error effectiveInput output awaitingRunTerminal toolCall { declaredInput status } declaredBy { id } }\n    }\n  }"): typeof import('./graphql.js').AuditDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AuditRun($id: ID!) { audit(id: $id) { id runId } }"): typeof import('./graphql.js').AuditRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Threads($first: Int, $after: String, $title: String) {\n    threads(first: $first, after: $after, title: $title) {\n      edges { cursor node {\n        id title ownerId createdAt latestRun { id status } runCount failedRunCount lastActivityAt\n        auditSummary { modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted }\n      } }\n      pageInfo { hasNextPage endCursor }\n      totalCount\n    }\n  }"): typeof import('./graphql.js').ThreadsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PageThreadInfo on Thread { id title ownerId auditSummary { ...PageAuditSummary } }"): typeof import('./graphql.js').PageThreadInfoFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ThreadInfo($id: ID!) { thread(id: $id) { ...PageThreadInfo } }"): typeof import('./graphql.js').ThreadInfoDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ThreadRuns($id: ID!, $first: Int!, $after: ID) { thread(id: $id) { ...PageThreadInfo runs(first: $first, after: $after) { ...PageRunFields } } }"): typeof import('./graphql.js').ThreadRunsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query PageRun($id: ID!) { run(id: $id) { ...PageRunFields } }"): typeof import('./graphql.js').PageRunDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ThreadAudits($threadId: ID!, $before: ID, $runId: ID, $limit: Int = 500) {\n    threadAudits(threadId: $threadId, before: $before, runId: $runId, limit: $limit) { cursor truncated items { ...PageAuditFields } }\n  }"): typeof import('./graphql.js').ThreadAuditsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ThreadChanges($threadId: ID!, $after: String) {\n    threadChanges(threadId: $threadId, after: $after) { cursor run { ...PageRunFields } audit { ...PageAuditFields } }\n  }"): typeof import('./graphql.js').ThreadChangesDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription RunChanged($threadId: ID!) { runChanged(threadId: $threadId) { ...PageRunFields } }"): typeof import('./graphql.js').RunChangedDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query SearchAudits($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $since: DateTime, $until: DateTime, $first: Int = 50, $after: ID) {\n    searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, since: $since, until: $until, first: $first, after: $after) {\n      hasMore\n      items { threadId threadTitle snippet audit { ...PageAuditFields } }\n    }\n  }"): typeof import('./graphql.js').SearchAuditsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ToolCallLedger($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {\n    toolCallLedger(threadId: $threadId, name: $name, status: $status, case: $case, first: $first, after: $after) {\n      edges { node {\n        id threadId threadTitle runId declaredById executedInRunId auditId toolCallId name declaredInput effectiveInput inputDiffers\n        status startedAt finishedAt durationMs cases leaseExpiresAt\n      } }\n      pageInfo { hasNextPage endCursor }\n    }\n  }"): typeof import('./graphql.js').ToolCallLedgerDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
