-- migrate: no-transaction
-- searchAudits(text:) within a thread (issue 44): the trigram index with the thread as its first
-- column, so that a rare text in a long thread reads that thread's matches only, not every
-- thread's (the probe of the trigram index alone grew with the whole history: 108 ms at 1,000,000
-- audits, bench/README.md Q3). A GIN index over several columns serves a condition on any of them
-- alone, so the search across threads (the text only) is served by it too, and it replaces
-- message_audit_search_idx (dropped by 20261203120200_drop_audit_search_idx).
-- The thread as text and the audits as `<> 'chat'` (the same rows as the other audit indexes'
-- `IN ('model_audit', 'tool_audit')`): conditions that only this index serves, so that on a table
-- never analysed the planner cannot read every audit of the thread, or every audit, through
-- another index instead (src/domain/audit-search.ts, AUDIT_SEARCH_PROBE).
-- Online (src/db/migrate.ts): built CONCURRENTLY, writes go on while it builds. The expressions
-- must stay identical to those of AUDIT_SEARCH_PROBE and AUDIT_SEARCH_TEXT.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_search_thread_idx" ON "message" USING GIN (
  ("thread_id"::text),
  (coalesce("name", '') || ' ' || coalesce("input"::text, '') || ' ' || coalesce("output"::text, '') || ' ' || coalesce("error"::text, '')) gin_trgm_ops
) WHERE "message_type" <> 'chat';
