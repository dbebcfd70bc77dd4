-- migrate: no-transaction
-- searchAudits by name or status across threads (issue 44, src/domain/audit-search.ts): the
-- owner's matches newest first, read straight from an index keyed by the owner, the filter and the
-- order together, so a page reads its own rows however many other owners hold the name or status
-- and however few of them the owner holds. They replace the indexes on (name, id) and (status, id)
-- across every owner, which only that search's walk used.
-- Online (src/db/migrate.ts): built CONCURRENTLY, then the old ones dropped CONCURRENTLY.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_owner_id_name_id_idx" ON "message"("owner_id", "name", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_owner_id_status_id_idx" ON "message"("owner_id", "status", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
DROP INDEX CONCURRENTLY IF EXISTS "message_audit_name_id_idx";
DROP INDEX CONCURRENTLY IF EXISTS "message_audit_status_id_idx";
-- The owner's threads being deleted (marked, their rows not yet all removed: src/domain/deletion.ts),
-- which a read across the owner's threads skips: a handful, where the owner's index would read
-- every thread the owner has.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "thread_deleted_owner_id_idx" ON "thread"("owner_id") WHERE "deleted_at" IS NOT NULL;
