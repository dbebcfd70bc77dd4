-- migrate: no-transaction
-- Since when the OpenTelemetry export is held (docs/operations.md "Backup and restore",
-- src/domain/database-identity.ts): set by the first start on a copy or a restore of the database
-- (the start that chooses a new database id), cleared by scripts/release-export.ts. A restored
-- database holds the threads deleted since the backup, pending export again: no exporter claims a
-- thread while the export is held, so none of them goes out before the operator has deleted them
-- again. Online: a nullable column on a one-row table no write path touches.
ALTER TABLE "database_identity" ADD COLUMN IF NOT EXISTS "export_held_since" TIMESTAMPTZ(3);
