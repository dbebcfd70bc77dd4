-- Tool activity (issue 40, src/domain/tool-activity.ts, docs/dashboards.md): a view of one owner's
-- tool audits reads only what is running and what ended within its window, through two partial
-- indexes keyed by the owner, so its cost grows neither with the owner's history nor with other
-- owners' audits. The owner is the thread's, copied onto each tool audit when it is inserted (a
-- thread never changes owner), by a trigger: every statement that writes tool audits keeps it.
ALTER TABLE "message" ADD COLUMN "owner_id" TEXT;

UPDATE "message" m SET "owner_id" = t."owner_id"
FROM "thread" t WHERE t."id" = m."thread_id" AND m."message_type" = 'tool_audit';

CREATE FUNCTION "message_tool_audit_owner"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT t."owner_id" INTO NEW."owner_id" FROM "thread" t WHERE t."id" = NEW."thread_id";
  RETURN NEW;
END $$;

CREATE TRIGGER "message_tool_audit_owner" BEFORE INSERT ON "message"
FOR EACH ROW WHEN (NEW."message_type" = 'tool_audit') EXECUTE FUNCTION "message_tool_audit_owner"();

-- What runs now, the longest-running first (created_at: when the start committed, database clock).
CREATE INDEX "message_owner_id_created_at_idx" ON "message"("owner_id", "created_at")
WHERE "message_type" = 'tool_audit' AND "status" = 'RUNNING';

-- What ended, by when its end committed (changed_at: an ended audit changes no more).
CREATE INDEX "message_owner_id_changed_at_idx" ON "message"("owner_id", "changed_at")
WHERE "message_type" = 'tool_audit' AND "status" <> 'RUNNING';
