-- Deletion and retention (docs/deletion.md). A deletion first marks its thread gone in one short
-- transaction (from then on every read and write of it is NOT_FOUND), then removes its rows in
-- bounded batches; the marked thread row itself goes last.

-- AlterTable
ALTER TABLE "thread" ADD COLUMN "deleted_at" TIMESTAMPTZ(3);
