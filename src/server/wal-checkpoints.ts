import type { Db } from '../db/driver.js';
import { retriedWork } from '../db/outage.js';

/**
 * PGlite runs no checkpointer (one process, no background workers), so without a CHECKPOINT its
 * write-ahead log (DATA_DIR/pglite/pg_wal) keeps everything written, the deleted rows' included,
 * for as long as the server runs. Every few seconds this asks how much was written since the last
 * checkpoint and checkpoints past CHECKPOINT_AFTER_BYTES; PostgreSQL then recycles the segments
 * down to max_wal_size (64 MB on PGlite: pglite-start-params.mjs). PostgreSQL's own checkpointer
 * does this there.
 */
export const CHECKPOINT_AFTER_BYTES = 64 * 1024 * 1024;
const CHECK_EVERY_MS = 5_000;

export function startWalCheckpoints(db: Db) {
  const checks = retriedWork('wal-checkpoint', 'checkpointing the embedded database', { component: 'wal' });
  let running: Promise<void> | null = null;
  const check = () =>
    (running ??= (async () => {
      const [row] = await db.query<{ behind: string }>(`SELECT (pg_current_wal_lsn() - (pg_control_checkpoint()).redo_lsn)::text AS behind`);
      if (Number(row!.behind) >= CHECKPOINT_AFTER_BYTES) await db.query('CHECKPOINT');
    })()
      .then(
        () => checks.succeeded(),
        (error: unknown) => checks.failed(error),
      )
      .finally(() => (running = null)));
  const timer = setInterval(() => void check(), CHECK_EVERY_MS);
  timer.unref();
  return {
    check,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
