-- migrate: no-transaction
-- Tool activity (issue 40, src/domain/tool-activity.ts): a view reads every tool audit that ended
-- within its window. From `message` that meant fetching each one's whole row, its payloads
-- inline, to use five narrow columns: with ~1 kB payloads the rows of a 100,000-audit window
-- span ~100 MB, and the view took 1.4–1.6× as long as with none (bench/README.md, "The ends'
-- narrow copy"). Each tool audit's end is copied here, narrow (about 80 bytes), by a trigger in
-- the transaction that ends it, so a view reads the same bytes whatever the payloads. An ended audit never changes
-- again (its status, duration and times are final), so the copy never goes stale; the trigger
-- still copies a later change of any of them, so that nothing else has to keep that promise.
-- The copy goes with its audit (a foreign key that cascades), so a deleted thread takes it along.
-- An end without a time (no audit the server writes) is in no window, so it is not copied.
-- Online (src/db/migrate.ts): the table, then the triggers, so that every end committed from now
-- on is copied, then the backfill of the ends a view can still read (the last 7 days: the widest
-- window), walking `message` in batches of 5,000 rows in primary key order, each committed
-- (writes go on; ~21 s per million tool audits on PostgreSQL 15), then
-- the partial index the view read before, dropped CONCURRENTLY. Safe to run again.
CREATE TABLE IF NOT EXISTS "tool_audit_end" (
    "audit_id" UUID NOT NULL,
    "owner_id" TEXT,
    "thread_id" UUID NOT NULL,
    "name" TEXT,
    "status" "AuditStatus" NOT NULL,
    "duration_ms" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "tool_audit_end_pkey" PRIMARY KEY ("audit_id"),
    CONSTRAINT "tool_audit_end_audit_id_fkey" FOREIGN KEY ("audit_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- What ended, by when its end committed: a view's window of one owner.
CREATE INDEX IF NOT EXISTS "tool_audit_end_owner_id_changed_at_idx" ON "tool_audit_end"("owner_id", "changed_at");

CREATE OR REPLACE FUNCTION "tool_audit_end_copied"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "tool_audit_end" ("audit_id", "owner_id", "thread_id", "name", "status", "duration_ms", "created_at", "changed_at")
  VALUES (NEW."id", NEW."owner_id", NEW."thread_id", NEW."name", NEW."status", NEW."duration_ms", NEW."created_at", NEW."changed_at")
  ON CONFLICT ("audit_id") DO UPDATE SET "status" = EXCLUDED."status", "duration_ms" = EXCLUDED."duration_ms",
    "changed_at" = EXCLUDED."changed_at", "name" = EXCLUDED."name", "created_at" = EXCLUDED."created_at";
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER "tool_audit_end_inserted" AFTER INSERT ON "message"
FOR EACH ROW WHEN (NEW."message_type" = 'tool_audit' AND NEW."status" <> 'RUNNING' AND NEW."changed_at" IS NOT NULL)
EXECUTE FUNCTION "tool_audit_end_copied"();

CREATE OR REPLACE TRIGGER "tool_audit_end_updated" AFTER UPDATE OF "status", "duration_ms", "changed_at", "name", "created_at" ON "message"
FOR EACH ROW WHEN (NEW."message_type" = 'tool_audit' AND NEW."status" <> 'RUNNING' AND NEW."changed_at" IS NOT NULL
  AND (OLD."status", OLD."duration_ms", OLD."changed_at", OLD."name", OLD."created_at")
    IS DISTINCT FROM (NEW."status", NEW."duration_ms", NEW."changed_at", NEW."name", NEW."created_at"))
EXECUTE FUNCTION "tool_audit_end_copied"();

DO $$
DECLARE
  done uuid := '00000000-0000-0000-0000-000000000000';
  upto uuid;
BEGIN
  LOOP
    SELECT b."id" INTO upto FROM (SELECT "id" FROM "message" WHERE "id" > done ORDER BY "id" LIMIT 5000) b ORDER BY b."id" DESC LIMIT 1;
    EXIT WHEN upto IS NULL;
    INSERT INTO "tool_audit_end" ("audit_id", "owner_id", "thread_id", "name", "status", "duration_ms", "created_at", "changed_at")
    SELECT m."id", m."owner_id", m."thread_id", m."name", m."status", m."duration_ms", m."created_at", m."changed_at"
    FROM "message" m
    WHERE m."id" > done AND m."id" <= upto AND m."message_type" = 'tool_audit' AND m."status" <> 'RUNNING'
      AND m."changed_at" >= now() - interval '7 days'
    ON CONFLICT ("audit_id") DO NOTHING;
    COMMIT;
    done := upto;
  END LOOP;
END $$;

DROP INDEX CONCURRENTLY IF EXISTS "message_owner_id_changed_at_idx";
