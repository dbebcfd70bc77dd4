import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { DomainDeps } from '../domain/command.js';
import { readDatabaseClock } from '../domain/ids.js';
import { startLeaseSweeper } from './lease-sweeper.js';
import { startRetentionSweeper } from './retention-sweeper.js';
import { startWalCheckpoints } from './wal-checkpoints.js';

/**
 * What the server does besides answering: reading the database's clock for new ids (ids.ts), the lease sweep (whose first sweep is awaited, so a
 * crash-restarted server first closes what it left open), the OpenTelemetry export when an OTLP
 * endpoint is configured (docs/export.md), the retention sweep, and on PGlite the checkpoints
 * that keep its write-ahead log bounded (wal-checkpoints.ts).
 */
export type BackgroundJobs = Awaited<ReturnType<typeof startBackgroundJobs>>;

/** How often an instance reads the database's clock for the ids it makes (ids.ts, newId). */
const DATABASE_CLOCK_READ_MS = 60_000;

export async function startBackgroundJobs(config: Config, db: Database, deps: DomainDeps) {
  // A read that fails keeps the last one; a database away at start-up is the lease sweep's to report.
  const readClock = () => readDatabaseClock(deps.db).catch(() => undefined);
  await readClock();
  const clockReads = setInterval(() => void readClock(), DATABASE_CLOCK_READ_MS);
  clockReads.unref();
  const sweeper = startLeaseSweeper(deps, config.leaseSweepIntervalMs);
  await sweeper.sweep();
  // The exporter's modules (and the OpenTelemetry packages) are loaded only when it is configured.
  const exporter = config.export ? (await import('../export/exporter.js')).startExporter(db, config.export, { instanceId: config.instanceId }) : undefined;
  const retention = startRetentionSweeper(deps, db.driver, {
    retentionDays: config.retentionDays,
    intervalMs: config.retentionSweepIntervalMs,
    vacuumAfterDeletions: db.kind === 'pglite',
  });
  void retention.sweep();
  const checkpoints = db.kind === 'pglite' ? startWalCheckpoints(deps.db) : undefined;
  return {
    sweeper,
    exporter,
    retention,
    /** Stops each; a sweep or export under way finishes first. */
    async stop() {
      clearInterval(clockReads);
      await sweeper.stop();
      await exporter?.stop();
      await retention.stop();
      await checkpoints?.stop();
    },
  };
}
