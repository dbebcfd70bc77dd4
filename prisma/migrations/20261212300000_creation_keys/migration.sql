-- migrate: no-transaction
-- The caller's idempotency key of a creation (CreateThreadInput.createId, CreateRunInput.createId):
-- a creation sent again with the same key gets the row the first one created. Keys are per owner
-- (a thread's: its creator's `sub`; a run's: its thread), and the unique indexes are what lets two
-- concurrent sends create exactly one row. Partial: rows created without a key cost no entry.
-- Online: nullable columns, then the indexes built concurrently (no existing row has a key).
ALTER TABLE "thread" ADD COLUMN IF NOT EXISTS "create_id" TEXT;
ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "create_id" TEXT;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "thread_owner_id_create_id_key" ON "thread"("owner_id", "create_id") WHERE "create_id" IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "run_thread_id_create_id_key" ON "run"("thread_id", "create_id") WHERE "create_id" IS NOT NULL;
