-- OpenTelemetry export (docs/export.md): which threads have changes not yet exported, and how far
-- each thread's export has got.
--
-- export_pending is a queue of threads, not of changes: a thread that changes gets a row (one per
-- thread, however many changes follow) in the same transaction as the change, by a trigger on the
-- thread's change cursor, so every write path is covered and a row becomes visible exactly when
-- its change commits (a commit that lands late is never skipped). An exporter claims rows for a
-- while (claimed_until) with FOR UPDATE SKIP LOCKED, exports the thread's changes after
-- export_position.exported_cursor up to the thread's cursor, then advances the position and deletes the row
-- unless the thread changed meanwhile.

-- CreateTable
CREATE TABLE "export_pending" (
    "thread_id" UUID NOT NULL,
    "since" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "claimed_by" TEXT,
    "claimed_until" TIMESTAMPTZ(3),

    CONSTRAINT "export_pending_pkey" PRIMARY KEY ("thread_id")
);

-- CreateTable
CREATE TABLE "export_position" (
    "thread_id" UUID NOT NULL,
    "exported_cursor" BIGINT NOT NULL,

    CONSTRAINT "export_position_pkey" PRIMARY KEY ("thread_id")
);

-- CreateIndex (claims take the oldest first; a history being exported can be every thread)
CREATE INDEX "export_pending_since_idx" ON "export_pending"("since");

-- AddForeignKey
ALTER TABLE "export_pending" ADD CONSTRAINT "export_pending_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "export_position" ADD CONSTRAINT "export_position_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The write path's only cost: one primary-key probe per changed thread while the thread already has
-- a row (ON CONFLICT DO NOTHING writes nothing), one small insert when it has none.
CREATE FUNCTION "export_mark_pending"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "export_pending" ("thread_id") VALUES (NEW."id") ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER "thread_export_pending" AFTER UPDATE OF "change_cursor" ON "thread"
  FOR EACH ROW WHEN (NEW."change_cursor" IS DISTINCT FROM OLD."change_cursor") EXECUTE FUNCTION "export_mark_pending"();

-- Threads changed before this migration are pending too: enabling export sends the history.
INSERT INTO "export_pending" ("thread_id") SELECT "id" FROM "thread" WHERE "change_cursor" > 0;
