-- Issue 44: toolCallStats reads one row per (tool, status) of the thread instead of counting
-- every call of the thread. Kept by the database as calls are declared, change status and are
-- deleted (with their thread, in batches).
--
-- Online enough: a new table and its backfill, no rewrite of tool_call. CREATE TRIGGER holds
-- writes to tool_call (not reads) until this migration commits, so the backfill counts every
-- call exactly once; the backfill reads (thread_id, name, status) only: 0.18 s for a million
-- calls in a probe on PostgreSQL 15 (docs/operations.md).
CREATE TABLE "tool_call_count" (
    "thread_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "status" "ToolCallStatus" NOT NULL,
    "count" INTEGER NOT NULL,
    CONSTRAINT "tool_call_count_pkey" PRIMARY KEY ("thread_id", "name", "status"),
    CONSTRAINT "tool_call_count_thread_id_fkey" FOREIGN KEY ("thread_id") REFERENCES "thread"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- Declarations: one statement declares a model call's tools; one upsert per (tool, status).
-- Rows in key order, so concurrent statements lock shared rows in the same order.
CREATE FUNCTION "tool_call_count_declared"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "tool_call_count" ("thread_id", "name", "status", "count")
    SELECT "thread_id", "name", "status", count(*)::int FROM "declared" GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT ("thread_id", "name", "status") DO UPDATE SET "count" = "tool_call_count"."count" + EXCLUDED."count";
  RETURN NULL;
END $$;

CREATE TRIGGER "tool_call_count_declared" AFTER INSERT ON "tool_call"
  REFERENCING NEW TABLE AS "declared" FOR EACH STATEMENT EXECUTE FUNCTION "tool_call_count_declared"();

-- A status change (the projection mirrors its audit: one call per statement): one from the old
-- status, one to the new, in the status order whatever the direction.
CREATE FUNCTION "tool_call_count_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "tool_call_count" ("thread_id", "name", "status", "count")
    SELECT NEW."thread_id", NEW."name", moved."status", moved."delta"
      FROM (VALUES (OLD."status", -1), (NEW."status", 1)) AS moved("status", "delta") ORDER BY moved."status"
  ON CONFLICT ("thread_id", "name", "status") DO UPDATE SET "count" = "tool_call_count"."count" + EXCLUDED."count";
  RETURN NULL;
END $$;

CREATE TRIGGER "tool_call_count_moved" AFTER UPDATE OF "status" ON "tool_call"
  FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status") EXECUTE FUNCTION "tool_call_count_moved"();

-- Deletions (a thread's, batch by batch): the counts go down; the thread's rows go with it.
CREATE FUNCTION "tool_call_count_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "tool_call_count" c SET "count" = c."count" - gone."count"
    FROM (SELECT "thread_id", "name", "status", count(*)::int AS "count" FROM "deleted" GROUP BY 1, 2, 3) gone
    WHERE c."thread_id" = gone."thread_id" AND c."name" = gone."name" AND c."status" = gone."status";
  RETURN NULL;
END $$;

CREATE TRIGGER "tool_call_count_deleted" AFTER DELETE ON "tool_call"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "tool_call_count_deleted"();

INSERT INTO "tool_call_count" ("thread_id", "name", "status", "count")
  SELECT "thread_id", "name", "status", count(*)::int FROM "tool_call" GROUP BY 1, 2, 3;
