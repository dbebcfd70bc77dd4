-- migrate: no-transaction
-- Tool activity (issue 40, src/domain/tool-activity.ts): a view lists the newest failures of its
-- window. Through the (owner_id, changed_at) index that could mean reading the window's ends a
-- second time, all of them (the order's tie-break on audit_id is not in that index, so the plan
-- read every end of the window and sorted the failures), and with rare failures, as in a healthy
-- fleet, nothing stops that read early: a 100,000-end window's view took 1.23x the time
-- (bench/README.md, runs VF2, VF4). The failed ends alone, in the list's order: the list reads the
-- entries it shows.
-- Online (src/db/migrate.ts): built CONCURRENTLY.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "tool_audit_end_owner_id_changed_at_audit_id_idx" ON "tool_audit_end"("owner_id", "changed_at", "audit_id")
  WHERE "status" = 'FAILED';
