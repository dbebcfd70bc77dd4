-- migrate: no-transaction
-- searchAudits across threads by the owner (issue 44, src/domain/audit-search.ts): the trigram
-- index with the owner beside the thread, so that a probe reads the owner's matches only, however
-- many other owners' audits hold the text; and the owner's audits newest first, for the search's
-- walk. A GIN index over several columns serves a condition on any of them, so the search within
-- a thread is served by it too, and it replaces message_audit_search_thread_idx (dropped by
-- 20261204000200_drop_audit_search_thread_idx).
-- Online (src/db/migrate.ts): built CONCURRENTLY. The expressions must stay identical to those of
-- AUDIT_SEARCH_PROBE and AUDIT_SEARCH_TEXT.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_search_owner_idx" ON "message" USING GIN (
  "owner_id",
  ("thread_id"::text),
  (coalesce("name", '') || ' ' || coalesce("input"::text, '') || ' ' || coalesce("output"::text, '') || ' ' || coalesce("error"::text, '')) gin_trgm_ops
) WHERE "message_type" <> 'chat';

CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_owner_id_id_idx" ON "message"("owner_id", "id")
WHERE "message_type" IN ('model_audit', 'tool_audit');
