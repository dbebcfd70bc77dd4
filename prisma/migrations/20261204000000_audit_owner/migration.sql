-- migrate: no-transaction
-- Every audit carries its thread's owner (issue 44): searchAudits across threads reads the
-- owner's audits through indexes keyed by the owner (20261204000100_audit_search_by_owner), so its
-- cost grows neither with other owners' history nor with how many threads the owner has. Tool
-- audits had it already (20261202110000_tool_activity); model audits get it here. A thread never
-- changes owner, so the copy never goes stale.
-- Online (src/db/migrate.ts): the trigger first, so that every audit inserted from now on has its
-- owner, then the backfill in batches of 5,000 audits in primary key order, each committed, so no
-- row stays locked for long and writes go on. Safe to run again: the backfill skips what it set.
CREATE OR REPLACE FUNCTION "message_audit_owner"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT t."owner_id" INTO NEW."owner_id" FROM "thread" t WHERE t."id" = NEW."thread_id";
  RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER "message_audit_owner" BEFORE INSERT ON "message"
FOR EACH ROW WHEN (NEW."message_type" <> 'chat') EXECUTE FUNCTION "message_audit_owner"();

DROP TRIGGER IF EXISTS "message_tool_audit_owner" ON "message";

DROP FUNCTION IF EXISTS "message_tool_audit_owner"();

DO $$
DECLARE
  done uuid := '00000000-0000-0000-0000-000000000000';
  upto uuid;
BEGIN
  LOOP
    SELECT b."id" INTO upto FROM (SELECT "id" FROM "message" WHERE "id" > done ORDER BY "id" LIMIT 5000) b ORDER BY b."id" DESC LIMIT 1;
    EXIT WHEN upto IS NULL;
    UPDATE "message" m SET "owner_id" = t."owner_id" FROM "thread" t
    WHERE t."id" = m."thread_id" AND m."id" > done AND m."id" <= upto
      AND m."message_type" <> 'chat' AND m."owner_id" IS NULL;
    COMMIT;
    done := upto;
  END LOOP;
END $$;
