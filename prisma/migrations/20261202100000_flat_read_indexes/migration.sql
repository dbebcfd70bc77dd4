-- migrate: no-transaction
-- Issue 44, flat at a million: indexes that let each read walk newest first and stop after a
-- page, whatever the history's size. Online (src/db/migrate.ts): built CONCURRENTLY, so writes go
-- on while they build; a build a crash left INVALID is dropped and built again at the next start.
--
-- threads(first): newest first, for an admin (every thread) and for an owner (its own).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "thread_created_at_id_idx" ON "thread"("created_at", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "thread_owner_id_created_at_id_idx" ON "thread"("owner_id", "created_at", "id");
-- The owner's index above begins with owner_id: the one on owner_id alone only costs writes.
DROP INDEX CONCURRENTLY IF EXISTS "thread_owner_id_idx";

-- searchAudits: one thread's audits newest first (the walk of a text search, a search without
-- filters), and by name or status within a thread (also each thread's probe of a search across
-- the owner's threads) or across threads (the walk of a search by name or status).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_thread_id_id_idx" ON "message"("thread_id", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_thread_id_name_id_idx" ON "message"("thread_id", "name", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_thread_id_status_id_idx" ON "message"("thread_id", "status", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_name_id_idx" ON "message"("name", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_audit_status_id_idx" ON "message"("status", "id")
  WHERE "message_type" IN ('model_audit', 'tool_audit');

-- A tool call's latest execution (its newest audit), for the ledger: the filter and the order in
-- one index. On (tool_call_row_id) alone a planner whose statistics lag chose to walk the primary
-- key backward for each call, reading the whole table per call.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "message_tool_call_row_id_id_idx" ON "message"("tool_call_row_id", "id");
DROP INDEX CONCURRENTLY IF EXISTS "message_tool_call_row_id_idx";

-- toolCallLedger: the calls of one thread by status or by name, newest first (each thread's
-- probe of a ledger read across the owner's threads).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_call_thread_id_status_id_idx" ON "tool_call"("thread_id", "status", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_call_thread_id_name_id_idx" ON "tool_call"("thread_id", "name", "id");
