-- migrate: no-transaction
-- Recent changes (docs/subscriptions.md, "Several instances without Redis"): each change of a
-- run or an audit, as committed, kept for a few minutes, so that an instance reading another's
-- changes from the database delivers each one as it was, instead of the entity's latest state
-- (a tool that started and finished within one poll was delivered COMPLETED alone). The trigger
-- copies a row when its change cursor moves, which is the last write of that row in its command
-- (src/domain/change-cursors.ts stamps it; the lifecycle functions write row and cursor in one
-- statement), so the copy is the row as committed. It copies only in sessions that ask for it
-- (`audit.recent_changes = on`: the server sets it on PostgreSQL without REDIS_URL), so a
-- deployment with Redis, where the rows travel with their wake-ups, pays one WHEN test a row.
-- The copies go with their thread (a foreign key that cascades) and are pruned after 5 minutes
-- by the instances that read them. Online: a new table and its triggers, no existing row read.
CREATE TABLE IF NOT EXISTS "recent_change" (
    "thread_id" UUID NOT NULL,
    "change_cursor" BIGINT NOT NULL,
    "kind" TEXT NOT NULL,
    "row" JSONB NOT NULL,
    "lease_only" BOOLEAN NOT NULL,
    "logged_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "recent_change_pkey" PRIMARY KEY ("thread_id", "change_cursor"),
    CONSTRAINT "recent_change_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- The prune's walk, oldest first.
CREATE INDEX IF NOT EXISTS "recent_change_logged_at_idx" ON "recent_change"("logged_at");

CREATE OR REPLACE FUNCTION "recent_change_logged"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "recent_change" ("thread_id", "change_cursor", "kind", "row", "lease_only")
  VALUES (NEW."thread_id", NEW."change_cursor", TG_ARGV[0], to_jsonb(NEW),
    -- A run's lease renewal (runChanged leaves it out live): nothing moved but the lease and the stamp.
    TG_OP = 'UPDATE' AND TG_ARGV[0] = 'run'
      AND to_jsonb(OLD) - '{lease_expires_at,change_cursor,changed_at}'::text[] = to_jsonb(NEW) - '{lease_expires_at,change_cursor,changed_at}'::text[])
  ON CONFLICT ("thread_id", "change_cursor") DO UPDATE SET "kind" = EXCLUDED."kind", "row" = EXCLUDED."row", "lease_only" = EXCLUDED."lease_only";
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER "run_recent_change_inserted" AFTER INSERT ON "run"
FOR EACH ROW WHEN (NEW."change_cursor" IS NOT NULL AND current_setting('audit.recent_changes', true) = 'on')
EXECUTE FUNCTION "recent_change_logged"('run');

CREATE OR REPLACE TRIGGER "run_recent_change_updated" AFTER UPDATE OF "change_cursor" ON "run"
FOR EACH ROW WHEN (NEW."change_cursor" IS DISTINCT FROM OLD."change_cursor" AND NEW."change_cursor" IS NOT NULL
  AND current_setting('audit.recent_changes', true) = 'on')
EXECUTE FUNCTION "recent_change_logged"('run');

CREATE OR REPLACE TRIGGER "message_recent_change_inserted" AFTER INSERT ON "message"
FOR EACH ROW WHEN (NEW."change_cursor" IS NOT NULL AND current_setting('audit.recent_changes', true) = 'on')
EXECUTE FUNCTION "recent_change_logged"('audit');

CREATE OR REPLACE TRIGGER "message_recent_change_updated" AFTER UPDATE OF "change_cursor" ON "message"
FOR EACH ROW WHEN (NEW."change_cursor" IS DISTINCT FROM OLD."change_cursor" AND NEW."change_cursor" IS NOT NULL
  AND current_setting('audit.recent_changes', true) = 'on')
EXECUTE FUNCTION "recent_change_logged"('audit');
