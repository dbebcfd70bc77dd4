import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { eventually } from '../support/streams.js';

// The embedded database's data directory stays bounded while the server runs (docs/deletion.md,
// "Space after deleting"): PGlite has no checkpointer process, so without the server's own
// checkpoints its write-ahead log (DATA_DIR/pglite/pg_wal) kept every byte ever written, the
// deleted rows' included, until the server stopped (2.4 GB of WAL for a 32 MB database, measured).

const MB = 1024 * 1024;

describe.runIf(!onPostgres)('the embedded write-ahead log', () => {
  let storage: TestStorage;
  let t: TestApp;
  beforeAll(async () => {
    storage = await createTestStorage('embedded');
    t = await startTestApp({}, { storage });
  });
  afterAll(async () => {
    await t?.close();
    await storage?.remove();
  });

  const walBytes = async () => Number((await t.app.db.sql.query<{ bytes: string }>('SELECT coalesce(sum(size), 0)::text AS bytes FROM pg_ls_waldir()'))[0]!.bytes);

  it('is checkpointed while the server runs: written and deleted 256 MB, it keeps at most 128 MB of segments', async () => {
    // A busy spell's writes, by SQL for speed: 256 MB of incompressible text written and deleted.
    const lsn = async () => (await t.app.db.sql.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
    const from = await lsn();
    await t.app.db.sql.query('CREATE TABLE wal_filler (body text)');
    for (let i = 0; i < 8; i++) {
      await t.app.db.sql.query(
        `INSERT INTO wal_filler SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 1000) g, generate_series(1, 1000) r GROUP BY r`,
      );
      await t.app.db.sql.query('DELETE FROM wal_filler');
    }
    const [written] = await t.app.db.sql.query<{ bytes: string }>('SELECT ($1::pg_lsn - $2::pg_lsn)::text AS bytes', [await lsn(), from]);
    expect(Number(written!.bytes)).toBeGreaterThan(200 * MB);
    await eventually(walBytes, (bytes) => bytes <= 128 * MB, { timeoutMs: 30_000, what: 'pg_wal to hold at most 128 MB' });
    // 256 MB through PGlite's WASM: 22 s on a quiet machine, 113 to over 157 s on one loaded core.
  }, 300_000);
});
