// Where a bench run keeps its data: a fresh PostgreSQL database created from the admin URL in
// DATABASE_URL (dropped afterwards), or, by default, fresh PGlite directories under the temp dir.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { pgliteSql, postgresSql, type Sql } from './sql.js';

export interface Backend {
  kind: 'postgres' | 'pglite';
  version: string;
  /** The server's configuration for its database. */
  serverEnv: Record<string, string>;
  /** Runs `fn` on the server's database before the server starts (PGlite allows one process at a time). */
  beforeServer<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  /** The floor's database: the server's own on PostgreSQL, a twin PGlite directory by default. */
  floor: Sql;
  /**
   * The minimum-work floor's connections (lib/floor-minimum.ts): on PostgreSQL a pool of its own,
   * sized for speed rather than like the server's; on PGlite the floor's own instance.
   */
  minimumFloor: Sql;
  /** True when the floor reads the very rows the server reads (one PostgreSQL database). */
  floorSharesServerData: boolean;
  close(): Promise<void>;
}

async function adminQuery(adminUrl: string, sql: string) {
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

/**
 * The minimum-work floor's pool on PostgreSQL: one statement per event keeps a connection busy for
 * one round trip only, so a few connections per core keep PostgreSQL's CPUs fed without making its
 * backends fight over them; `--minimum-pool` changes it.
 */
export const MINIMUM_FLOOR_POOL_SIZE = 8;

export async function openPostgresBackend(adminUrl: string, minimumPoolSize = MINIMUM_FLOOR_POOL_SIZE): Promise<Backend> {
  const name = `audit_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const floor = postgresSql(url.toString(), FLOOR_POOL_SIZE);
  const minimumFloor = postgresSql(url.toString(), minimumPoolSize);
  try {
    await migrate(floor.driver);
    const [{ version }] = (await floor.query<{ version: string }>('SELECT version()')) as [{ version: string }];
    return {
      kind: 'postgres',
      version,
      serverEnv: { DATABASE_URL: url.toString() },
      beforeServer: (fn) => fn(floor),
      floor,
      minimumFloor,
      floorSharesServerData: true,
      async close() {
        try {
          await Promise.all([floor.close(), minimumFloor.close()]);
        } finally {
          await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }
      },
    };
  } catch (error) {
    await floor.close().catch(() => {});
    await minimumFloor.close().catch(() => {});
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    throw error;
  }
}

export async function openPgliteBackend(): Promise<Backend> {
  const root = mkdtempSync(join(tmpdir(), 'audit-bench-'));
  const serverDataDir = join(root, 'server');
  const floor = await pgliteSql(join(root, 'floor'));
  await migrate(floor.driver);
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
    minimumFloor: floor,
    floorSharesServerData: false,
    async close() {
      try {
        await floor.close();
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}
