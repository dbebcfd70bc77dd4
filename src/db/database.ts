import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite, type PGliteOptions, type Transaction } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.js';
import { isPrepared, param, timestampParser, toRows, type Sql } from './sql.js';

/** The narrow raw-SQL surface migrations and the readiness probe need, on either driver. */
export interface SqlDriver {
  /** Runs a script of one or more statements (simple query protocol). */
  exec(sql: string): Promise<void>;
  query<Row>(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs `fn` on one session, so session-level advisory locks hold across its statements. */
  withSession<T>(fn: (session: Omit<SqlDriver, 'withSession' | 'close'>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface SqlTransactor {
  /** Runs `fn` in one transaction on one connection; rolled back if it throws. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
}

/** The domain's one database handle: a statement in autocommit, or a transaction; rows mapped alike. */
export type Db = Sql & SqlTransactor;

export interface Database {
  kind: 'pglite' | 'postgres';
  /** The Pothos Prisma plugin's client (the GraphQL layer's relation reads). */
  prisma: PrismaClient;
  driver: SqlDriver & SqlTransactor;
  /** What the domain queries and runs its transactions with. */
  sql: Db;
  /** PostgreSQL: the pool's connections now (GET /metrics). */
  poolStats?: () => { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** `postgres://…` for a server; unset for embedded PGlite. */
  url?: string;
  /** PGlite data directory; unset keeps the embedded database in memory (tests). */
  dataDir?: string;
  /**
   * PGlite: an open database to use instead of opening one; `close()` leaves it open for its owner.
   * The suites start theirs from one migrated copy and reuse it across test apps
   * (test/support/pglite-pool.ts).
   */
  embedded?: PGlite;
  poolSize?: number;
  /** PostgreSQL's statement_timeout for requests (default 30 s); migrations run under their own. */
  statementTimeoutMs?: number;
  /** Sees every SQL statement but the transactions', Prisma's and `sql`'s (tests count them to prove that reads are batched). */
  onQuery?: (sql: string) => void;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.url
    ? openPostgres(options.url, options.poolSize ?? 10, options.statementTimeoutMs ?? 30_000, options.onQuery)
    : openPglite(options.dataDir, options.embedded, options.onQuery);
}

const params = (values?: unknown[]) => values?.map(param);

/** A driver's query in array mode: rows as arrays, the columns named once in `fields`. */
type Rows = (sql: string, values?: unknown[]) => Promise<{ rows: unknown[][]; fields: { name: string }[] }>;

const TIMESTAMPTZ = 1184;
const INT8 = 20;

const preparedNames = new Map<string, string>();
/**
 * A name per prepared text (sql.ts `prepared`): pg prepares a named statement once per connection
 * and then only binds and executes it. For the few fixed texts so marked only (one entry each).
 */
function preparedName(text: string): string | undefined {
  if (!isPrepared(text)) return undefined;
  let name = preparedNames.get(text);
  if (name === undefined) preparedNames.set(text, (name = `prepared_${preparedNames.size + 1}`));
  return name;
}

/** The domain's `Sql` over a driver's query call: parameters and rows mapped the same way for both drivers. */
function mappedSql(rows: Rows, onQuery?: (sql: string) => void): Sql {
  return {
    query: async <Row>(sql: string, values?: unknown[]) => {
      onQuery?.(sql);
      const result = await rows(sql, params(values));
      return toRows<Row>(result.rows, result.fields.map((field) => field.name));
    },
  };
}

function prismaClient(adapter: PrismaPg | PrismaPGlite, onQuery?: (sql: string) => void): PrismaClient {
  if (!onQuery) return new PrismaClient({ adapter });
  const client = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  client.$on('query', (event) => onQuery(event.query));
  return client;
}

/**
 * Runs `fn` on a client checked out of the pool. While checked out, a client has no listener of
 * the pool's: a connection dropped under it (pg_terminate_backend, a failover) would emit an
 * unhandled 'error' and end the process. Here it fails the queries in flight (the request is
 * answered with a masked error), and the broken client is discarded, never returned to the pool;
 * `fn` discards it too when it knows the connection is unusable.
 */
async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient, discard: (error: Error) => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const discard = (error: Error) => void (broken ??= error);
  const onError = (error: Error) => {
    discard(error);
    console.error('[db] PostgreSQL connection lost while in use:', error.message);
  };
  client.on('error', onError);
  try {
    return await fn(client, discard);
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

const pgTimestamp = timestampParser(pg.types.getTypeParser(TIMESTAMPTZ));
const typeParser = (oid: number, format?: 'text' | 'binary') =>
  oid === TIMESTAMPTZ && format !== 'binary' ? pgTimestamp : pg.types.getTypeParser(oid, format);

async function openPostgres(url: string, poolSize: number, statementTimeoutMs: number, onQuery?: (sql: string) => void): Promise<Database> {
  // Bounded waits: a writer never queues forever behind a stuck lock or an exhausted pool.
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 10_000,
    statement_timeout: statementTimeoutMs,
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  });
  // An idle client that loses its server must not crash the process; the next query reconnects.
  pool.on('error', (error) => console.error('[db] idle PostgreSQL client error:', error.message));
  const driver: SqlDriver & SqlTransactor = {
    exec: async (sql) => void (await pool.query(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as Row[],
    withSession: (fn) =>
      withClient(pool, (client) =>
        fn({
          exec: async (sql) => void (await client.query(sql)),
          query: async <Row>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as Row[],
        }),
      ),
    transaction: (fn) =>
      withClient(pool, async (client, discard) => {
        await client.query('BEGIN');
        try {
          const value = await fn(mappedSql((text, values) => client.query({ text, values, rowMode: 'array' })));
          await client.query('COMMIT');
          return value;
        } catch (error) {
          // A connection whose rollback failed is not returned to the pool.
          await client.query('ROLLBACK').catch(discard);
          throw error;
        }
      }),
    close: () => pool.end(),
  };
  const prisma = prismaClient(new PrismaPg(pool), onQuery);
  return {
    kind: 'postgres',
    prisma,
    driver,
    sql: {
      ...mappedSql((text, values) => pool.query({ name: preparedName(text), text, values, rowMode: 'array' }), onQuery),
      transaction: driver.transaction,
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      await prisma.$disconnect();
      await driver.close();
    },
  };
}

/** PGlite as the server opens it: pg_trgm for the audit search index (migration 20261201200000_audit_search). */
export const pgliteOptions = { extensions: { pg_trgm } } satisfies PGliteOptions;

async function openPglite(dataDir?: string, embedded?: PGlite, onQuery?: (sql: string) => void): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const pglite = embedded ?? new PGlite({ ...pgliteOptions, dataDir: dataDir ? join(dataDir, 'pglite') : undefined });
  await pglite.waitReady;
  const session = {
    exec: async (sql: string) => void (await pglite.exec(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pglite.query<Row>(sql, params)).rows,
  };
  // PGlite is one in-process session: "a session" is the database itself.
  // int8 as text: the row mapper makes it a bigint without a detour through an imprecise number.
  const parsers = { [INT8]: (value: string) => value, [TIMESTAMPTZ]: timestampParser((text) => new Date(text)) };
  const rowsOf =
    (db: PGlite | Transaction): Rows =>
    (sql, values) =>
      db.query<unknown[]>(sql, values, { parsers, rowMode: 'array' });
  const driver: SqlDriver & SqlTransactor = {
    ...session,
    withSession: (fn) => fn(session),
    transaction: (fn) =>
      pglite.transaction((tx) => fn(mappedSql(rowsOf(tx)))),
    close: async () => {
      if (!embedded) await pglite.close();
    },
  };
  const prisma = prismaClient(new PrismaPGlite(pglite), onQuery);
  return {
    kind: 'pglite',
    prisma,
    driver,
    sql: { ...mappedSql(rowsOf(pglite), onQuery), transaction: driver.transaction },
    close: async () => {
      await prisma.$disconnect();
      await driver.close();
    },
  };
}
