import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { isOnline, MIGRATION_LOCK_KEY, migrate, ONLINE_MARK, type MigrationProgress, onlineStatements, readMigrations } from '../../src/db/migrate.js';
import { readOwnerToolActivity } from '../../src/domain/tool-activity.js';
import { backendName, createScratchDatabase, onPostgres, servicesRequired } from '../support/database.js';

const migrationNames = readMigrations().map((migration) => migration.name);

describe('migrations at start-up', () => {
  it('apply once on the embedded database, then are a no-op', { timeout: 120_000 }, async () => {
    const db = await openDatabase({});
    try {
      expect(await migrate(db.driver)).toEqual(migrationNames);
      expect(await migrate(db.driver)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('refuse to run when an applied migration was edited', { timeout: 120_000 }, async () => {
    const db = await openDatabase({});
    try {
      await migrate(db.driver);
      const edited = readMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'edited' } : m));
      await expect(migrate(db.driver, edited)).rejects.toThrow(/edited after it was applied/);
    } finally {
      await db.close();
    }
  });

  it('start on a database a newer version migrated (a rollback), saying which migrations they do not have', { timeout: 120_000 }, async () => {
    const db = await openDatabase({});
    try {
      await migrate(db.driver);
      const lines: MigrationProgress[] = [];
      expect(await migrate(db.driver, readMigrations().slice(0, -2), { log: (line) => lines.push(line) })).toEqual([]);
      expect(lines).toEqual([{ event: 'migrations_unknown', migrations: migrationNames.slice(-2) }]);
      // The version that has them all says nothing.
      lines.length = 0;
      expect(await migrate(db.driver, readMigrations(), { log: (line) => lines.push(line) })).toEqual([]);
      expect(lines).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it.runIf(onPostgres)('serialise several instances starting at once on PostgreSQL: each migration applies exactly once', async () => {
    const scratch = await createScratchDatabase();
    const instances = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ url: scratch.url, poolSize: 2 })));
    try {
      const applied = await Promise.all(instances.map((db) => migrate(db.driver)));
      expect(applied.flat().sort()).toEqual([...migrationNames].sort());
      const history = await instances[0]!.driver.query<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations"`);
      expect(history.map((row) => row.migration_name).sort()).toEqual([...migrationNames].sort());
    } finally {
      await Promise.all(instances.map((db) => db.close()));
      await scratch.drop();
    }
  });
});

// The request statement_timeout (30 s in production, 200 ms here) must cut neither a long
// migration nor a second instance queueing on the migration lock: migrations run under their own,
// longer timeout (MIGRATION_TIMEOUT_MS). Only PostgreSQL has a statement_timeout and concurrent
// instances; PGlite is one in-process session that applies migrations alone.
describe.runIf(onPostgres || servicesRequired)('migrations and the request statement_timeout (PostgreSQL)', () => {
  const REQUEST_TIMEOUT_MS = 200;
  const slowMigration = { name: '99999999999999_slow', sql: 'SELECT pg_sleep(0.6);', checksum: 'slow' };
  const cutByTimeout = { code: '57014' };

  it('a migration longer than the request timeout is applied, and requests keep their timeout afterwards', async () => {
    const scratch = await createScratchDatabase();
    const db = await openDatabase({ url: scratch.url, poolSize: 1, statementTimeoutMs: REQUEST_TIMEOUT_MS });
    try {
      await expect(db.driver.query('SELECT pg_sleep(0.6)')).rejects.toMatchObject(cutByTimeout);
      expect(await migrate(db.driver, [...readMigrations(), slowMigration])).toContain(slowMigration.name);
      // The one pooled session is back to the request timeout.
      await expect(db.driver.query('SELECT pg_sleep(0.6)')).rejects.toMatchObject(cutByTimeout);
    } finally {
      await db.close();
      await scratch.drop();
    }
  });

  it('an instance waiting for the migration lock longer than the request timeout still migrates', async () => {
    const scratch = await createScratchDatabase();
    const db = await openDatabase({ url: scratch.url, poolSize: 1, statementTimeoutMs: REQUEST_TIMEOUT_MS });
    const other = new pg.Client({ connectionString: scratch.url });
    await other.connect();
    // Another instance holds the lock (migrating) for three times the request timeout.
    await other.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const released = new Promise((resolve) => setTimeout(resolve, 3 * REQUEST_TIMEOUT_MS)).then(() =>
      other.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]),
    );
    try {
      const progress: MigrationProgress[] = [];
      expect(await migrate(db.driver, undefined, { log: (entry) => progress.push(entry) })).toEqual(migrationNames);
      // The operator sees why the start is waiting, once, before the migrations run.
      expect(progress.filter((entry) => entry.event === 'migration_lock_wait')).toHaveLength(1);
      expect(progress[0]).toEqual({ event: 'migration_lock_wait' });
    } finally {
      await released.catch(() => undefined);
      await other.end();
      await db.close();
      await scratch.drop();
    }
  });
});

describe.runIf(onPostgres || servicesRequired)('a migration beside a transaction open on its table (PostgreSQL)', () => {
  // A pg_dump or a long report holds a table's share lock for its whole run; an ALTER TABLE waiting
  // for it would queue every later request on the table behind it, the old instances' included.
  it.each([
    ['in a transaction', ''],
    ['online', `${ONLINE_MARK}\n`],
  ])('%s, it gives way to requests on the table, says why once, and applies when the transaction ends', async (_kind, mark) => {
    const scratch = await createScratchDatabase();
    const db = await openDatabase({ url: scratch.url, poolSize: 1 });
    const report = new pg.Client({ connectionString: scratch.url });
    const writer = new pg.Client({ connectionString: scratch.url });
    await Promise.all([report.connect(), writer.connect()]);
    const table = { name: '99999999999980_table', sql: 'CREATE TABLE probe (a int NOT NULL);', checksum: 'table' };
    const column = { name: '99999999999981_column', sql: `${mark}ALTER TABLE probe ADD COLUMN IF NOT EXISTS b text;\n`, checksum: 'column' };
    try {
      await migrate(db.driver, [...readMigrations(), table], { log: () => {} });
      await report.query('BEGIN');
      await report.query('SELECT count(*) FROM probe');
      const progress: MigrationProgress[] = [];
      const migrating = migrate(db.driver, [...readMigrations(), table, column], { log: (entry) => progress.push(entry) });
      await expect.poll(() => progress.some((entry) => entry.event === 'migration_table_busy'), { timeout: 20_000 }).toBe(true);
      // Writes to the table go on while the report's transaction is open (they queued behind the
      // waiting ALTER, for as long as the report lasted).
      for (let i = 0; i < 3; i++) await writer.query({ text: 'INSERT INTO probe (a) VALUES ($1)', values: [i], query_timeout: 10_000 } as pg.QueryConfig);
      await report.query('COMMIT');
      expect(await migrating).toEqual([column.name]);
      expect(progress.filter((entry) => entry.event === 'migration_table_busy')).toEqual([{ event: 'migration_table_busy', migration: column.name }]);
      expect((await writer.query('SELECT count(b) AS with_b, count(*) AS rows FROM probe')).rows).toEqual([{ with_b: '0', rows: '3' }]);
    } finally {
      await report.end();
      await writer.end();
      await db.close();
      await scratch.drop();
    }
  });
});

// Online migrations (issue 43 item 2): a migration whose first line is ONLINE_MARK runs outside a
// transaction, statement by statement, so `CREATE INDEX CONCURRENTLY` builds without blocking writes.
describe(`online migrations (${backendName})`, () => {
  const online = (name: string, sql: string) => ({ name, sql: `${ONLINE_MARK}\n${sql}`, checksum: name });
  const table = { name: '99999999999990_table', sql: 'CREATE TABLE probe (a int NOT NULL);', checksum: 'table' };

  async function onScratch<T>(fn: (db: Database) => Promise<T>): Promise<T> {
    const scratch = onPostgres ? await createScratchDatabase() : undefined;
    const db = await openDatabase({ url: scratch?.url });
    try {
      return await fn(db);
    } finally {
      await db.close();
      await scratch?.drop();
    }
  }

  const indexState = (db: Database, name: string) =>
    db.driver.query<{ valid: boolean }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
      [name],
    );

  it('runs CREATE INDEX CONCURRENTLY, which no transaction block may hold, and logs each migration when it starts and when it is applied, with its time', async () => {
    await onScratch(async (db) => {
      const lines: unknown[] = [];
      const index = online('99999999999991_index', `-- a comment line\nCREATE INDEX CONCURRENTLY IF NOT EXISTS "probe_a_idx" ON probe (a);\nDROP INDEX CONCURRENTLY IF EXISTS "nothing_idx";\n`);
      expect(await migrate(db.driver, [table, index], { log: (line) => lines.push(line) })).toEqual([table.name, index.name]);
      expect(await indexState(db, 'probe_a_idx')).toEqual([{ valid: true }]);
      expect(lines).toEqual([
        { event: 'migration_started', migration: table.name, online: false },
        { event: 'migration_applied', migration: table.name, online: false, ms: expect.any(Number) },
        { event: 'migration_started', migration: index.name, online: true },
        { event: 'index_build_started', migration: index.name, index: 'probe_a_idx' },
        { event: 'migration_applied', migration: index.name, online: true, ms: expect.any(Number) },
      ]);
    });
  });

  it('a build that failed half-way (an INVALID index) is dropped and built again when the migration is retried', async () => {
    await onScratch(async (db) => {
      const unique = online('99999999999992_unique', 'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "probe_a_key" ON probe (a);');
      await migrate(db.driver, [table], { log: () => {} });
      await db.driver.exec('INSERT INTO probe VALUES (1), (1)');
      await expect(migrate(db.driver, [table, unique], { log: () => {} })).rejects.toThrow();
      // What a crash mid-build leaves behind: the index exists, INVALID, and is not recorded as applied.
      expect(await indexState(db, 'probe_a_key')).toEqual([{ valid: false }]);
      await db.driver.exec('DELETE FROM probe');
      expect(await migrate(db.driver, [table, unique], { log: () => {} })).toEqual([unique.name]);
      expect(await indexState(db, 'probe_a_key')).toEqual([{ valid: true }]);
    });
  });

  it('an upgrade gives the audits already written their thread\'s owner, and those written after it too (20261204000000_audit_owner)', async () => {
    await onScratch(async (db) => {
      const migrations = readMigrations();
      const upgrade = migrations.findIndex((migration) => migration.name === '20261204000000_audit_owner');
      await migrate(db.driver, migrations.slice(0, upgrade), { log: () => {} });
      const audit = (type: string, k: number) =>
        `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status)
         SELECT gen_random_uuid(), r.thread_id, r.id, 'ASSISTANT', '${type}', '${type}-' || t.title || '-${k}', ${k}, 'COMPLETED' FROM run r JOIN thread t ON t.id = r.thread_id`;
      await db.driver.exec(`
        INSERT INTO thread (id, owner_id, title) SELECT gen_random_uuid(), 'owner-' || t, t::text FROM generate_series(1, 3) t;
        INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread;
        ${audit('model_audit', 1)}; ${audit('tool_audit', 2)};
        INSERT INTO message (id, thread_id, role, content) SELECT gen_random_uuid(), id, 'USER', '"hi"' FROM thread;`);
      await migrate(db.driver, migrations, { log: () => {} });
      await db.driver.exec(`${audit('model_audit', 3)}; ${audit('tool_audit', 4)}`);
      const owners = await db.driver.query<{ type: string; owned: boolean; n: number }>(
        `SELECT m.message_type::text AS type, m.owner_id IS NOT DISTINCT FROM t.owner_id AS owned, count(*)::int AS n
         FROM message m JOIN thread t ON t.id = m.thread_id GROUP BY 1, 2 ORDER BY 1, 2`,
      );
      expect(owners).toEqual([
        { type: 'chat', owned: false, n: 3 },
        { type: 'model_audit', owned: true, n: 6 },
        { type: 'tool_audit', owned: true, n: 6 },
      ]);
    });
  });

  it('an upgrade gives the tool calls already declared their thread\'s owner, and those declared after it too (20261205000100_tool_call_owner)', async () => {
    await onScratch(async (db) => {
      const migrations = readMigrations();
      const upgrade = migrations.findIndex((migration) => migration.name === '20261205000100_tool_call_owner');
      await migrate(db.driver, migrations.slice(0, upgrade), { log: () => {} });
      const declared = (k: number) =>
        `INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name)
         SELECT gen_random_uuid(), m.thread_id, m.run_id, m.id, ${k}, 'call-${k}', 'lookup' FROM message m`;
      await db.driver.exec(`
        INSERT INTO thread (id, owner_id, title) SELECT gen_random_uuid(), 'owner-' || t, t::text FROM generate_series(1, 3) t;
        INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread;
        INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status)
          SELECT gen_random_uuid(), r.thread_id, r.id, 'ASSISTANT', 'model_audit', 'plan', 1, 'COMPLETED' FROM run r;
        ${declared(0)}; ${declared(1)};`);
      await migrate(db.driver, migrations, { log: () => {} });
      await db.driver.exec(declared(2));
      const owners = await db.driver.query<{ owned: boolean; n: number }>(
        `SELECT tc.owner_id IS NOT DISTINCT FROM t.owner_id AS owned, count(*)::int AS n
         FROM tool_call tc JOIN thread t ON t.id = tc.thread_id GROUP BY 1 ORDER BY 1`,
      );
      expect(owners).toEqual([{ owned: true, n: 9 }]);
    });
  });

  it('an upgrade copies the tool audits that ended within a week, which a week\'s view reads; ends after it are copied as they commit (20261207000000_tool_audit_ends)', async () => {
    await onScratch(async (db) => {
      const migrations = readMigrations();
      const upgrade = migrations.findIndex((migration) => migration.name === '20261207000000_tool_audit_ends');
      await migrate(db.driver, migrations.slice(0, upgrade), { log: () => {} });
      // Per owner: 40 tool audits ended over 9 days (i = 0 a minute ago), one in ten still running, one in seven FAILED.
      await db.driver.exec(`
        INSERT INTO thread (id, owner_id, title) SELECT gen_random_uuid(), 'owner-' || t, t::text FROM generate_series(1, 2) t;
        INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread;
        INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at)
          SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'op-' || i, 'tool-' || i % 3,
            (CASE WHEN i % 10 = 0 THEN 'RUNNING' WHEN i % 7 = 0 THEN 'FAILED' ELSE 'COMPLETED' END)::"AuditStatus",
            CASE WHEN i % 10 <> 0 THEN 100 + i END, now() - make_interval(secs => i * 19440 + 120), now() - make_interval(secs => i * 19440 + 60)
          FROM run r, generate_series(0, 39) i`);
      await migrate(db.driver, migrations, { log: () => {} });
      // Ended within the week: i = 1…31 but the running 10, 20 and 30 (of them FAILED 7, 14, 21, 28); running 0, 10, 20, 30.
      const tools = async () =>
        (await readOwnerToolActivity(db.sql, 'owner-1', { windowSeconds: 604_800, name: null })).tools
          .map(({ name, running, completed, failed, maxDurationMs }) => ({ name, running, completed, failed, maxDurationMs }))
          .sort((a, b) => a.name.localeCompare(b.name));
      expect(await db.driver.query(`SELECT owner_id, count(*)::int AS n FROM tool_audit_end GROUP BY 1 ORDER BY 1`)).toEqual([
        { owner_id: 'owner-1', n: 28 },
        { owner_id: 'owner-2', n: 28 },
      ]);
      expect(await tools()).toEqual([
        { name: 'tool-0', running: 2, completed: 8, failed: 1, maxDurationMs: 127 },
        { name: 'tool-1', running: 1, completed: 8, failed: 2, maxDurationMs: 131 },
        { name: 'tool-2', running: 1, completed: 8, failed: 1, maxDurationMs: 129 },
      ]);

      await db.driver.exec(`UPDATE message SET status = 'COMPLETED', duration_ms = 5, changed_at = now() WHERE status = 'RUNNING'`);
      expect(await tools()).toEqual([
        { name: 'tool-0', running: 0, completed: 10, failed: 1, maxDurationMs: 127 },
        { name: 'tool-1', running: 0, completed: 9, failed: 2, maxDurationMs: 131 },
        { name: 'tool-2', running: 0, completed: 9, failed: 1, maxDurationMs: 129 },
      ]);
    });
  });

  it('splits a script at each semicolon that ends a line, without its comment lines', () => {
    expect(onlineStatements(`${ONLINE_MARK}\n-- why\nCREATE INDEX CONCURRENTLY a ON t (x);\n\nCREATE INDEX CONCURRENTLY b\n  ON t (y) WHERE y > 0;`)).toEqual([
      'CREATE INDEX CONCURRENTLY a ON t (x)',
      'CREATE INDEX CONCURRENTLY b\n  ON t (y) WHERE y > 0',
    ]);
    expect(readMigrations().filter(isOnline).map((migration) => migration.name)).toContain('20261202100000_flat_read_indexes');
  });

  it('keeps a $$ body whole: its lines end with a semicolon too', () => {
    const body = 'DO $$\nBEGIN\n  -- kept\n  PERFORM 1;\n  COMMIT;\nEND $$';
    expect(onlineStatements(`${ONLINE_MARK}\n${body};\nSELECT 2;`)).toEqual([body, 'SELECT 2']);
  });
});
