-- migrate: no-transaction
-- The resume ancestors of each run that may still start a tool call (QUEUED or RUNNING): one row
-- per ancestor, written by the database when the run is created (a walk up `resumed_from_id`,
-- within the run's thread, once per run) and removed when the run ends. The tool-call ledger
-- asks "is the declaring run, or a resume of it at any depth, still going?" of every call it reads:
-- it walked down the whole resume chain for each (a page of a conversation 500 resumes deep took
-- 3 s on PGlite); it is now one probe of this table. Rows exist only for going runs, so the
-- table holds the going runs' depths, not every run's. Kept by triggers, so runs created by
-- instances still on the older version during an upgrade are kept too. Online: a new table, its
-- triggers (creating one waits for the transactions open on `run`), then the going runs' rows.
CREATE TABLE IF NOT EXISTS "run_resume_ancestor" (
    "run_id" UUID NOT NULL,
    "ancestor_id" UUID NOT NULL,
    CONSTRAINT "run_resume_ancestor_pkey" PRIMARY KEY ("ancestor_id", "run_id"),
    CONSTRAINT "run_resume_ancestor_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "run_resume_ancestor_ancestor_id_fkey" FOREIGN KEY ("ancestor_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- A run's own rows, removed when it ends (and by the cascade).
CREATE INDEX IF NOT EXISTS "run_resume_ancestor_run_id_idx" ON "run_resume_ancestor"("run_id");

/**
 * The resume ancestors of run `run_id` of thread `thread_id` resuming `parent_id`, nearest first: each
 * step a primary-key probe for the run the last one resumes (its row carries the link and the thread,
 * so no step asks an index of the thread, which a stale plan scanned whole at every step); the walk
 * follows no run of another thread, and UNION ends a cycle.
 */
CREATE OR REPLACE FUNCTION audit_keep_resume_ancestors(run_id uuid, thread_id uuid, parent_id uuid) RETURNS void LANGUAGE sql AS $$
  INSERT INTO run_resume_ancestor (run_id, ancestor_id)
  WITH RECURSIVE up (id, resumed_from_id, thread_id) AS (
    SELECT r.id, r.resumed_from_id, r.thread_id FROM run r WHERE r.id = parent_id
    UNION
    SELECT r.id, r.resumed_from_id, r.thread_id FROM up JOIN run r ON r.id = up.resumed_from_id
    WHERE up.thread_id = audit_keep_resume_ancestors.thread_id)
  SELECT audit_keep_resume_ancestors.run_id, up.id FROM up WHERE up.thread_id = audit_keep_resume_ancestors.thread_id
  ON CONFLICT DO NOTHING
$$;

CREATE OR REPLACE FUNCTION audit_resume_ancestors_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM audit_keep_resume_ancestors(NEW.id, NEW.thread_id, NEW.resumed_from_id);
  ELSE
    DELETE FROM run_resume_ancestor WHERE run_resume_ancestor.run_id = NEW.id;
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER "run_resume_ancestors_created" AFTER INSERT ON "run"
FOR EACH ROW WHEN (NEW."resumed_from_id" IS NOT NULL AND NEW."status" IN ('QUEUED', 'RUNNING'))
EXECUTE FUNCTION audit_resume_ancestors_kept();

CREATE OR REPLACE TRIGGER "run_resume_ancestors_ended" AFTER UPDATE OF "status" ON "run"
FOR EACH ROW WHEN (NEW."resumed_from_id" IS NOT NULL AND OLD."status" IN ('QUEUED', 'RUNNING') AND NEW."status" NOT IN ('QUEUED', 'RUNNING'))
EXECUTE FUNCTION audit_resume_ancestors_kept();

-- The runs going when the triggers came (created before them); one created since is already kept.
SELECT audit_keep_resume_ancestors(r.id, r.thread_id, r.resumed_from_id) FROM run r
WHERE r.resumed_from_id IS NOT NULL AND r.status IN ('QUEUED', 'RUNNING');
