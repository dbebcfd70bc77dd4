import type { Sql } from '../db/sql.js';

/**
 * What tells this database from a copy or a restore of it: its OID among the server's databases
 * (a copy, or a restore into a new database, gets another) and the OID of the identity table
 * itself (a logical restore, pg_dump then psql or pg_restore, creates the table again, even into
 * a database of the same OID, as on PGlite). A physical copy of the whole server (a file system
 * snapshot, PITR, a promoted replica) keeps both, as does any copy of a PGlite directory: such a
 * database is not told apart unless marked (database_oid = 0: scripts/backup-data-dir.ts marks its copies).
 */
const WHERE_AM_I = `SELECT (SELECT oid FROM pg_database WHERE datname = current_database())::bigint AS database_oid,
  'database_identity'::regclass::oid::bigint AS table_oid`;

/** The fenced runs a restore names (its log line), of all it counts: enough to look each one's trace up, a bounded line. */
const FENCED_RUN_IDS = 100;

/**
 * The id of the database that issues this server's change cursors (migration
 * 20261202130000_database_identity): chosen at the first start, and again when the database is
 * not the one that chose it. Two statements: when instances start together, the second one's
 * upsert waits for the first's row, then finds the OIDs current and changes nothing, and its
 * SELECT (a new snapshot) reads the id the first one chose.
 *
 * A database found to be a copy or a restore also fences every lease it holds: a worker whose
 * lease the backup caught would otherwise write on into a run that lost what it had acknowledged
 * since the backup, and end it COMPLETED with holes. Its next write is LEASE_LOST, and the lease
 * sweep ends the run FAILED (LEASE_EXPIRED), as for a backup older than the lease. And it holds
 * the export (exportHeldSince): the threads deleted since the backup are back, pending export
 * again, and would go out before the operator has deleted them again.
 */
export async function databaseIdentity(sql: Sql): Promise<{ databaseId: string; restored?: { fencedRuns: number; fencedRunIds: string[] } }> {
  const [start] = await sql.query<{ restored: boolean; fencedRuns: number; fencedRunIds: string[] | null }>(
    `WITH previous AS (SELECT 1 FROM database_identity),
     chosen AS (
       INSERT INTO database_identity AS d (database_id, database_oid, table_oid)
       SELECT left(replace(gen_random_uuid()::text, '-', ''), 16), here.database_oid, here.table_oid FROM (${WHERE_AM_I}) here
       ON CONFLICT (singleton) DO UPDATE SET database_id = excluded.database_id, database_oid = excluded.database_oid, table_oid = excluded.table_oid,
         export_held_since = now()
       WHERE (d.database_oid, d.table_oid) IS DISTINCT FROM (excluded.database_oid, excluded.table_oid)
       RETURNING 1),
     fenced AS (
       UPDATE run SET lease_expires_at = now()
       WHERE status = 'RUNNING' AND lease_expires_at > now() AND EXISTS (SELECT FROM previous) AND EXISTS (SELECT FROM chosen)
       RETURNING id)
     SELECT EXISTS (SELECT FROM previous) AND EXISTS (SELECT FROM chosen) AS restored, (SELECT count(*) FROM fenced)::int AS fenced_runs,
       (SELECT array_agg(id::text) FROM (SELECT id FROM fenced ORDER BY id LIMIT ${FENCED_RUN_IDS}) f) AS fenced_run_ids`,
  );
  const [row] = await sql.query<{ databaseId: string }>('SELECT database_id FROM database_identity');
  const { restored, fencedRuns, fencedRunIds } = start!;
  return { databaseId: row!.databaseId, ...(restored && { restored: { fencedRuns, fencedRunIds: fencedRunIds ?? [] } }) };
}

/**
 * Since when the export is held: set by the first start on a copy or a restore (databaseIdentity),
 * until the operator releases it (releaseExportHold, scripts/release-export.ts); undefined when not.
 */
export async function exportHeldSince(sql: Sql): Promise<Date | undefined> {
  const [row] = await sql.query<{ exportHeldSince: Date | null }>('SELECT export_held_since FROM database_identity');
  return row?.exportHeldSince ?? undefined;
}

/** Releases the export's hold; returns since when it was held, or undefined when it was not. */
export async function releaseExportHold(sql: Sql): Promise<Date | undefined> {
  const [row] = await sql.query<{ heldSince: Date }>(
    `WITH held AS (SELECT export_held_since FROM database_identity WHERE export_held_since IS NOT NULL FOR UPDATE)
     UPDATE database_identity SET export_held_since = NULL FROM held RETURNING held.export_held_since AS held_since`,
  );
  return row?.heldSince;
}
