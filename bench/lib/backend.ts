// Where a bench run keeps its data: a fresh PostgreSQL database created from the admin URL in
// DATABASE_URL (dropped afterwards), or, by default, fresh PGlite directories under the temp dir.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { pgliteSql, postgresSql, type Sql } from './sql.js';
import { installWriteFloor } from './write-floor.js';

export interface Backend {
  kind: 'postgres' | 'pglite';
  version: string;
  /** The server's configuration for its database. */
  serverEnv: Record<string, string>;
  /** Runs `fn` on the server's database before the server starts (PGlite allows one process at a time). */
  beforeServer<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  /**
   * The floors' database, with the write floor's functions (lib/write-floor.ts): the server's own
   * on PostgreSQL (a pool as large as the server's), a twin PGlite directory by default.
   */
  floor: Sql;
  /** True when the floor reads the very rows the server reads (one PostgreSQL database). */
  floorSharesServerData: boolean;
  /** PostgreSQL: the bench's database, whose backends' CPU the batch section counts; null on PGlite. */
  database: string | null;
  close(): Promise<void>;
}

export async function adminQuery(adminUrl: string, sql: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The floor uses as many connections as the server's pool (src/db/database.ts: 10). */
export const FLOOR_POOL_SIZE = 10;

export async function openPostgresBackend(adminUrl: string): Promise<Backend> {
  const name = `audit_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const floor = postgresSql(url.toString(), FLOOR_POOL_SIZE);
  try {
    await migrate(floor.driver);
    await installWriteFloor(floor);
    const [{ version }] = (await floor.query<{ version: string }>('SELECT version()')) as [{ version: string }];
    return {
      kind: 'postgres',
      version,
      serverEnv: { DATABASE_URL: url.toString() },
      beforeServer: (fn) => fn(floor),
      floor,
      floorSharesServerData: true,
      database: name,
      async close() {
        try {
          await floor.close();
        } finally {
          await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }
      },
    };
  } catch (error) {
    await floor.close().catch(() => {});
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    throw error;
  }
}

export async function openPgliteBackend(): Promise<Backend> {
  const root = mkdtempSync(join(tmpdir(), 'audit-bench-'));
  const serverDataDir = join(root, 'server');
  const floor = await pgliteSql(join(root, 'floor'));
  await migrate(floor.driver);
  await installWriteFloor(floor);
  const [{ version }] = (await floor.query<{ version: string }>('SELECT version()')) as [{ version: string }];
  return {
    kind: 'pglite',
    version: `PGlite: ${version}`,
    serverEnv: { DATA_DIR: serverDataDir },
    async beforeServer(fn) {
      // The same layout the server opens (src/db/database.ts): <DATA_DIR>/pglite.
      const sql = await pgliteSql(join(serverDataDir, 'pglite'));
      try {
        await migrate(sql.driver);
        return await fn(sql);
      } finally {
        await sql.close();
      }
    },
    floor,
    floorSharesServerData: false,
    database: null,
    async close() {
      try {
        await floor.close();
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}
