-- Change cursors (docs/subscriptions.md): a per-thread counter, bumped under the thread row lock
-- by each command that changes the thread's runs or audits, and the cursor and commit time of
-- each row's latest change.

-- AlterTable
ALTER TABLE "thread" ADD COLUMN "change_cursor" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "run" ADD COLUMN "change_cursor" BIGINT,
ADD COLUMN "changed_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "message" ADD COLUMN "change_cursor" BIGINT,
ADD COLUMN "changed_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "run_thread_id_change_cursor_idx" ON "run"("thread_id", "change_cursor");

-- CreateIndex
CREATE INDEX "message_thread_id_change_cursor_idx" ON "message"("thread_id", "change_cursor");
