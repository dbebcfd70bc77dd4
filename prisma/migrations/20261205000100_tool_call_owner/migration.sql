-- migrate: no-transaction
-- Every ToolCall carries its thread's owner (issue 44), as every audit does (20261204000000_audit_owner):
-- toolCallLedger across threads (src/domain/tool-call-ledger.ts) reads the owner's calls newest
-- first, straight from indexes keyed by the owner, the filter and the order together, so a page
-- reads its own rows however many calls other owners hold and however few of a status or name
-- the owner has. A thread never changes owner, so the copy never goes stale.
-- Online (src/db/migrate.ts): the column (no default: no rewrite), the trigger, so that every call
-- inserted from now on has its owner, then the backfill in batches of 5,000 calls in primary key
-- order, each committed, then the indexes built CONCURRENTLY and those they replace dropped. Safe to run again.
ALTER TABLE "tool_call" ADD COLUMN IF NOT EXISTS "owner_id" TEXT;

CREATE OR REPLACE FUNCTION "tool_call_owner"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT t."owner_id" INTO NEW."owner_id" FROM "thread" t WHERE t."id" = NEW."thread_id";
  RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER "tool_call_owner" BEFORE INSERT ON "tool_call"
FOR EACH ROW EXECUTE FUNCTION "tool_call_owner"();

DO $$
DECLARE
  done uuid := '00000000-0000-0000-0000-000000000000';
  upto uuid;
BEGIN
  LOOP
    SELECT b."id" INTO upto FROM (SELECT "id" FROM "tool_call" WHERE "id" > done ORDER BY "id" LIMIT 5000) b ORDER BY b."id" DESC LIMIT 1;
    EXIT WHEN upto IS NULL;
    UPDATE "tool_call" tc SET "owner_id" = t."owner_id" FROM "thread" t
    WHERE t."id" = tc."thread_id" AND tc."id" > done AND tc."id" <= upto AND tc."owner_id" IS NULL;
    COMMIT;
    done := upto;
  END LOOP;
END $$;

CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_call_owner_id_id_idx" ON "tool_call"("owner_id", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_call_owner_id_status_id_idx" ON "tool_call"("owner_id", "status", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_call_owner_id_name_id_idx" ON "tool_call"("owner_id", "name", "id");
-- Used only by the ledger's walk across every owner's calls, which these replace.
DROP INDEX CONCURRENTLY IF EXISTS "tool_call_status_id_idx";
DROP INDEX CONCURRENTLY IF EXISTS "tool_call_name_id_idx";
-- Read by nothing since toolCallStats reads the kept counts (20261203040000_tool_call_counts); a
-- call's status changes as its tool starts and ends, and each such update writes every index of
-- tool_call that holds the status: one fewer keeps the table's indexes as many as before.
DROP INDEX CONCURRENTLY IF EXISTS "tool_call_thread_id_name_status_idx";
