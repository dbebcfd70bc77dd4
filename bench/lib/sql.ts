import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { SqlDriver } from '../../src/db/database.js';

/** The plain-SQL surface the floor needs, on either backend: no ORM, no GraphQL. */
export interface SqlSession {
  query<Row = Record<string, any>>(text: string, params?: unknown[]): Promise<Row[]>;
}

export interface Sql extends SqlSession {
  /** BEGIN … COMMIT on one connection (ROLLBACK if `fn` throws). */
  transaction<T>(fn: (tx: SqlSession) => Promise<T>): Promise<T>;
  /** The driver shape src/db/migrate.ts takes, so the floor database gets the same migrations. */
  driver: SqlDriver;
  /** Statements sent so far, BEGIN and COMMIT included. */
  readonly statements: number;
  close(): Promise<void>;
}

/** Counts every statement sent through `session`. */
function counted(count: () => void, session: SqlSession): SqlSession {
  return {
    query: (text, params) => {
      count();
      return session.query(text, params);
    },
  };
}

export function postgresSql(url: string, poolSize: number): Sql {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {});
  let statements = 0;
  const count = () => void statements++;
  const query = async (text: string, params?: unknown[]) => (await pool.query(text, params)).rows;
  const driver: SqlDriver = {
    exec: async (text) => void (await pool.query(text)),
    query,
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
  };
  return {
    ...counted(count, { query }),
    async transaction(fn) {
      const client = await pool.connect();
      const tx = counted(count, { query: async (text, params) => (await client.query(text, params)).rows });
      try {
        await tx.query('BEGIN');
        const value = await fn(tx);
        await tx.query('COMMIT');
        return value;
      } catch (error) {
        await tx.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    driver,
    get statements() {
      return statements;
    },
    close: () => pool.end(),
  };
}

export async function pgliteSql(dataDir: string): Promise<Sql> {
  mkdirSync(dirname(dataDir), { recursive: true });
  const db = new PGlite({ dataDir, extensions: { pg_trgm } });
  await db.waitReady;
  let statements = 0;
  const count = () => void statements++;
  const query = async (text: string, params?: unknown[]) => (await db.query<any>(text, params)).rows;
  const session = { exec: async (text: string) => void (await db.exec(text)), query };
  return {
    ...counted(count, { query }),
    // PGlite's own transaction(): BEGIN/COMMIT on its single session, exclusive like the server's.
    transaction: (fn) =>
      db.transaction((tx) => {
        statements += 2; // its BEGIN and COMMIT
        return fn(counted(count, { query: async (text, params) => (await tx.query<any>(text, params)).rows }));
      }),
    driver: { ...session, withSession: (fn) => fn(session), close: () => db.close() },
    get statements() {
      return statements;
    },
    close: () => db.close(),
  };
}

/**
 * Plain SQL over the server's own driver (src/db/database.ts), for in-process comparisons on the
 * very same connection pool or PGlite instance. One transaction at a time on PGlite.
 */
export function sqlOverDriver(driver: SqlDriver): Sql {
  let statements = 0;
  const count = () => void statements++;
  return {
    ...counted(count, { query: (text, params) => driver.query(text, params) }),
    transaction: (fn) =>
      driver.withSession(async (session) => {
        const tx = counted(count, { query: (text, params) => session.query(text, params) });
        await tx.query('BEGIN');
        try {
          const value = await fn(tx);
          await tx.query('COMMIT');
          return value;
        } catch (error) {
          await session.exec('ROLLBACK');
          throw error;
        }
      }),
    driver,
    get statements() {
      return statements;
    },
    close: () => driver.close(),
  };
}
