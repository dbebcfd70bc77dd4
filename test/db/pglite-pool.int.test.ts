// The suite's reuse of in-memory PGlite databases between test apps (test/support/pglite-pool.ts):
// a reused database is the migrated one again, whatever the previous app did to it.
import { describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { borrowMigratedPglite } from '../support/pglite-pool.js';

const xid = async (borrowed: Awaited<ReturnType<typeof borrowMigratedPglite>>) =>
  Number((await borrowed.pglite.query<{ xid: string }>('SELECT txid_current()::text AS xid')).rows[0]!.xid);

describe.skipIf(onPostgres)('the PGlite databases the test apps reuse', () => {
  it('come back as migrated: no rows, sequences restarted, session and statistics discarded', async () => {
    const first = await borrowMigratedPglite();
    const firstXid = await xid(first);
    await first.pglite.exec(`
      INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), 'owner', 'left behind');
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread;
      SELECT nextval('run_created_order_seq');
      ANALYZE thread;
      CREATE TEMPORARY TABLE scratch (a int);
      SET statement_timeout = '1s';
      SELECT pg_advisory_lock(42);`);
    const leftOpen = first.pglite;
    await first.giveBack();
    expect(() => leftOpen.query('SELECT 1')).toThrow(TypeError);

    const second = await borrowMigratedPglite();
    try {
      // The same database (its transaction counter went on), not a fresh copy.
      expect(await xid(second)).toBeGreaterThan(firstXid + 1);
      const { rows } = await second.pglite.query<Record<string, unknown>>(`
        SELECT (SELECT count(*)::int FROM thread) AS threads, (SELECT count(*)::int FROM run) AS runs,
          nextval('run_created_order_seq')::int AS next_order, current_setting('statement_timeout') AS timeout,
          (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory') AS locks,
          (SELECT count(*)::int FROM pg_statistic WHERE starelid = 'thread'::regclass) AS statistics,
          to_regclass('pg_temp.scratch') IS NULL AS no_scratch,
          (SELECT count(*)::int FROM _prisma_migrations) > 0 AS migrated`);
      expect(rows[0]).toEqual({ threads: 0, runs: 0, next_order: 1, timeout: '0', locks: 0, statistics: 0, no_scratch: true, migrated: true });
    } finally {
      await second.giveBack();
    }
  });

  it('are closed, not reused, when a test changed the schema or left a transaction open', async () => {
    const changed = await borrowMigratedPglite();
    await changed.pglite.exec('ALTER TABLE thread ADD COLUMN extra int');
    await changed.giveBack();
    const fresh = await borrowMigratedPglite();
    expect((await fresh.pglite.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'thread' AND column_name = 'extra'`)).rows).toEqual([]);

    await fresh.pglite.exec('BEGIN; INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), \'owner\', \'uncommitted\')');
    await fresh.giveBack();
    const next = await borrowMigratedPglite();
    try {
      // Not inside the transaction the last app left open: nothing of it holds a transaction id.
      expect((await next.pglite.query('SELECT pg_current_xact_id_if_assigned() AS xid')).rows).toEqual([{ xid: null }]);
      expect((await next.pglite.query('SELECT * FROM thread')).rows).toEqual([]);
    } finally {
      await next.giveBack();
    }
  });
});
