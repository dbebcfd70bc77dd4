import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { SqlDriver } from '../../src/db/database.js';
import { ginPendingListParams, pgliteOptions } from '../../src/db/pglite-settings.js';
import { meteredConnect } from './pool-meter.js';

/** The plain-SQL surface the floors and the seeding need, on either backend: no ORM, no GraphQL. */
export interface SqlSession {
  query<Row = Record<string, any>>(text: string, params?: unknown[]): Promise<Row[]>;
}

export interface Sql extends SqlSession {
  /** BEGIN … COMMIT on one connection (ROLLBACK if `fn` throws). */
  transaction<T>(fn: (tx: SqlSession) => Promise<T>): Promise<T>;
  /** The driver shape src/db/migrate.ts takes, so the floor database gets the same migrations. */
  driver: SqlDriver;
  close(): Promise<void>;
}

export function postgresSql(url: string, poolSize: number): Sql {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {});
  // Its checkouts timed (pool-meter.ts poolUse), as the server's are.
  pool.connect = meteredConnect(pool.connect);
  return sqlOverDriver({
    exec: async (text) => void (await pool.query(text)),
    query: async (text, params) => (await pool.query(text, params)).rows,
    withSession: async (fn) => {
      const client = await pool.connect();
      try {
        return await fn({
          exec: async (text) => void (await client.query(text)),
          query: async (text, params) => (await client.query(text, params)).rows,
        });
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  });
}

export async function pgliteSql(dataDir: string): Promise<Sql> {
  mkdirSync(dirname(dataDir), { recursive: true });
  const db = new PGlite({ ...pgliteOptions, startParams: [...PGlite.defaultStartParams, ...ginPendingListParams], dataDir });
  await db.waitReady;
  const query = async (text: string, params?: unknown[]) => (await db.query<any>(text, params)).rows;
  const session = { exec: async (text: string) => void (await db.exec(text)), query };
  return {
    query,
    // PGlite's own transaction(): BEGIN/COMMIT on its single session, exclusive like the server's.
    transaction: (fn) => db.transaction((tx) => fn({ query: async (text, params) => (await tx.query<any>(text, params)).rows })),
    driver: { ...session, withSession: (fn) => fn(session), close: () => db.close() },
    close: () => db.close(),
  };
}

/**
 * Plain SQL over a driver of src/db/database.ts's shape (the server's own, for in-process
 * comparisons on the very same pool or PGlite instance). One transaction at a time on PGlite.
 */
export function sqlOverDriver(driver: SqlDriver): Sql {
  return {
    query: (text, params) => driver.query(text, params),
    transaction: (fn) =>
      driver.withSession(async (session) => {
        await session.exec('BEGIN');
        try {
          const value = await fn(session);
          await session.exec('COMMIT');
          return value;
        } catch (error) {
          await session.exec('ROLLBACK');
          throw error;
        }
      }),
    driver,
    close: () => driver.close(),
  };
}
