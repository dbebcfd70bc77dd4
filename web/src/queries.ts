export const RUN_FIELDS = `id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id }`;

const COMMON = `__typename id runId operationId sequence finishedSequence status startedAt finishedAt durationMs`;
/**
 * What a timeline row shows: ids, names, statuses, times, and the error (a row shows why it was
 * closed), a model call's usage (token counts). Inputs and outputs (up to MAX_JSON_BYTES each) load when a row is opened: AUDIT_DETAIL.
 */
export const AUDIT_FIELDS = `${COMMON}
  ... on ModelAudit { model error usage }
  ... on ToolAudit { name toolCallId error awaitingRunTerminal toolCall { id status } declaredBy { id } }`;

export const AUDIT_DETAIL = `query Audit($id: ID!) {
  audit(id: $id) {
    ${COMMON}
    ... on ModelAudit { model error input output usage }
    ... on ToolAudit { name toolCallId error effectiveInput output awaitingRunTerminal toolCall { declaredInput status } declaredBy { id } }
  }
}`;

export const THREADS = `query Threads($first: Int, $after: String) {
  threads(first: $first, after: $after) {
    edges { cursor node { id title ownerId createdAt latestRun { id status } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const THREAD_RUNS = `query ThreadRuns($id: ID!) { thread(id: $id) { id title ownerId runs { ${RUN_FIELDS} } } }`;

export const THREAD_AUDITS = `query ThreadAudits($threadId: ID!, $before: ID) {
  threadAudits(threadId: $threadId, before: $before) { cursor truncated items { ${AUDIT_FIELDS} } }
}`;

export const THREAD_CHANGES = `subscription ThreadChanges($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor run { ${RUN_FIELDS} } audit { ${AUDIT_FIELDS} } }
}`;
export const RUN_CHANGED = `subscription RunChanged($threadId: ID!) { runChanged(threadId: $threadId) { ${RUN_FIELDS} } }`;

export const SEARCH_AUDITS = `query SearchAudits($text: String, $status: AuditStatus, $threadId: ID, $after: ID) {
  searchAudits(text: $text, status: $status, threadId: $threadId, first: 50, after: $after) {
    hasMore
    items { threadId threadTitle audit { ${AUDIT_FIELDS} } }
  }
}`;

/** The thread's tool calls (the ToolCall projection): declared ones that never ran included. */
export const THREAD_TOOL_CALLS = `query ThreadToolCalls($id: ID!) {
  thread(id: $id) { runs(first: 500) { id toolCalls { id toolCallId name status declaredInput effectiveInput startedAt finishedAt durationMs } } }
}`;
