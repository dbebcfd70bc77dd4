-- Search over audits (issue 32): a trigram index on what an audit says, its name (tool or model)
-- and the text of its input, output and error, so `searchAudits` finds a substring (ILIKE) without
-- reading every audit. Audits only (chat messages are never searched). pg_trgm is a trusted
-- extension (PostgreSQL 13+): the database owner may create it; PGlite loads it (src/db/database.ts).
-- The expression must stay identical to AUDIT_SEARCH_TEXT in src/domain/audit-search.ts.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX "message_audit_search_idx" ON "message" USING GIN (
  (coalesce("name", '') || ' ' || coalesce("input"::text, '') || ' ' || coalesce("output"::text, '') || ' ' || coalesce("error"::text, '')) gin_trgm_ops
) WHERE "message_type" IN ('model_audit', 'tool_audit');
