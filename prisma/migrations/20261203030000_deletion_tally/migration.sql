-- What a thread's deletion removed so far (issue 42, docs/deletion.md): each batch adds its counts
-- in its own statement, so a deletion a crash cut short and another instance finished still
-- reports, in its receipt, everything the deletion removed. A constant default: no table rewrite.
ALTER TABLE "thread" ADD COLUMN "deleted_runs" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "deleted_audits" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "deleted_tool_calls" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "deleted_messages" INTEGER NOT NULL DEFAULT 0;
