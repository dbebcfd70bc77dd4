-- Which database issued the change cursors (issue 43 item 5, src/domain/database-identity.ts,
-- SEMANTICS.md "Change cursors"): a random id carried in every cursor, so a cursor from before a
-- restore (or from another copy of the database) is refused instead of read as a position in a
-- history that went another way. The server renews the id at start when the database it reads is
-- not the one that chose it: another database OID (a copy: CREATE DATABASE … TEMPLATE, or a
-- restore into a new database) or another OID of this table (a logical restore re-creates it,
-- on PostgreSQL and PGlite alike). One row, written at the first start and at a start on a copy
-- or a restore only: no write path touches it.
CREATE TABLE "database_identity" (
    "singleton" BOOLEAN NOT NULL DEFAULT true,
    "database_id" TEXT NOT NULL,
    "database_oid" BIGINT,
    "table_oid" BIGINT,

    CONSTRAINT "database_identity_pkey" PRIMARY KEY ("singleton"),
    CONSTRAINT "database_identity_singleton_check" CHECK ("singleton")
);
