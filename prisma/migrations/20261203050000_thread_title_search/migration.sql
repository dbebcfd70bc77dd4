-- migrate: no-transaction
-- threads(title:) (issue 41): the thread list filters by a piece of the title, ILIKE on a trigram
-- index so a rare title is found without reading every thread of its owner. Online
-- (src/db/migrate.ts): built CONCURRENTLY, writes go on while it builds. The expression must stay
-- identical to THREAD_TITLE_TEXT in src/domain/threads.ts; pg_trgm is created by 20261201200000_audit_search.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "thread_title_search_idx" ON "thread" USING GIN ((coalesce("title", '')) gin_trgm_ops)
  WHERE "deleted_at" IS NULL;
