-- btree_gin (issue 44): GIN operator classes for plain values, so that one GIN index can hold an
-- audit's thread beside the trigrams of its searched text (20261203120100_audit_search_by_thread).
-- A trusted extension (PostgreSQL 13+): the database owner may create it; PGlite loads it
-- (src/db/pglite-settings.ts).
CREATE EXTENSION IF NOT EXISTS btree_gin;
