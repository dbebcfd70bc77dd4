import type { SqlDriver } from '../db/database.js';
import type { DomainDeps } from '../domain/command.js';
import { sweeperDeletedThreads } from '../metrics.js';
import { finishAbandonedDeletions, sweepRetention, type DeletionReceipt } from '../domain/deletion.js';
import { pruneToolAuditEnds } from '../domain/tool-activity.js';
import { retriedWork } from '../db/outage.js';
import { log } from '../log.js';

/** The advisory lock that lets one instance at a time sweep (any other key of this server differs). */
export const RETENTION_LOCK_KEY = 7_316_244_195_034;

const DAY_MS = 86_400_000;

export interface RetentionOptions {
  /** Unset: keep everything (only deletions a stopped instance left half done are finished). */
  retentionDays?: number;
  intervalMs: number;
  /** The clock the age is judged by; tests pass their own. Default: the database's. */
  now?: () => Date;
  batchRows?: number;
  /**
   * Vacuum the tables after deletions: PGlite runs no autovacuum (one process, no background
   * workers), so without it the space deleted rows held would never be reused there.
   */
  vacuumAfterDeletions?: boolean;
}

/** One structured line per receipt, for the logs a deployment keeps, and one count in /metrics. */
export const logReceipt = (reason: 'retention' | 'abandoned-deletion') => (receipt: DeletionReceipt) => {
  sweeperDeletedThreads.inc({ reason });
  log.info({ event: 'thread_deleted', reason, ...receipt }, 'thread deleted');
};

/**
 * Deletes threads older than RETENTION_DAYS every `intervalMs`, finishes deletions a stopped
 * instance left half done, prunes the tool activity view's copies of ends no view reads any more
 * (pruneToolAuditEnds), and on PGlite vacuums after deletions. A sweep runs on one instance at a
 * time (a PostgreSQL session advisory lock, held on one pooled connection for the sweep; an
 * instance that finds it taken skips that sweep) and never overlaps itself in one process.
 */
export function startRetentionSweeper(deps: DomainDeps, driver: SqlDriver, options: RetentionOptions) {
  const { retentionDays } = options;
  let deletedSinceVacuum = false;
  const sweepLocked = async () => {
    const abandoned = await finishAbandonedDeletions(deps, { batchRows: options.batchRows });
    abandoned.forEach(logReceipt('abandoned-deletion'));
    const now = options.now?.() ?? (await databaseNow(deps));
    const deleted =
      retentionDays === undefined
        ? 0
        : await sweepRetention(deps, {
            olderThan: new Date(now.getTime() - retentionDays * DAY_MS),
            batchRows: options.batchRows,
            onReceipt: logReceipt('retention'),
          });
    const pruned = await pruneToolAuditEnds(deps.db, now);
    if (pruned > 0) log.info({ event: 'tool_audit_ends_pruned', count: pruned }, "tool audits' ends older than the widest window pruned");
    if (options.vacuumAfterDeletions && (deletedSinceVacuum || abandoned.length > 0 || deleted > 0 || pruned > 0)) {
      deletedSinceVacuum = false;
      await deps.db.query('VACUUM thread, run, message, tool_call, tool_audit_end');
    }
    return deleted;
  };
  let running: Promise<number | null> | null = null;
  const sweeps = retriedWork('retention-sweep', 'retention sweep', { component: 'retention' });
  /** One sweep: the number of threads it deleted, or null when another instance holds the lock (or it failed). */
  const sweep = () =>
    (running ??= driver
      .withSession(async (session) => {
        const [lock] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [RETENTION_LOCK_KEY]);
        if (!lock?.locked) return null;
        try {
          return await sweepLocked();
        } finally {
          await session.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
        }
      })
      .then(
        (deleted) => (sweeps.succeeded(), deleted),
        (error: unknown) => (sweeps.failed(error), null),
      )
      .finally(() => (running = null)));
  // Also without retention: deletions a stopped instance left half done, and PGlite's vacuum.
  const timer = setInterval(() => void sweep(), options.intervalMs);
  timer.unref();
  return {
    sweep,
    /** A thread was deleted (deleteThread): the next sweep vacuums, where that is the sweeper's job. */
    noteDeletion() {
      deletedSinceVacuum = true;
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

async function databaseNow(deps: DomainDeps): Promise<Date> {
  const [row] = await deps.db.query<{ now: Date }>('SELECT now() AS now');
  return row!.now;
}
