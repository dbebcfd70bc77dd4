// What both backends (postgres.ts, pglite.ts) give the server, and what they share to give it.
import { PrismaClient, type Prisma } from '../generated/prisma/client.js';
import { param, toRows, type Sql } from './sql.js';

/** The narrow raw-SQL surface migrations and the readiness probe need, on either driver. */
export interface SqlDriver {
  /** Runs a script of one or more statements (simple query protocol). */
  exec(sql: string): Promise<void>;
  query<Row>(sql: string, params?: unknown[]): Promise<Row[]>;
  /**
   * Runs `fn` on one session, so session-level advisory locks hold across its statements.
   * `statementTimeoutMs`: the statement_timeout the session sets itself (migrations raise theirs),
   * for PostgreSQL's client to wait as long for an answer; by default the requests' one.
   */
  withSession<T>(fn: (session: Omit<SqlDriver, 'withSession' | 'close'>) => Promise<T>, options?: { statementTimeoutMs?: number }): Promise<T>;
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
  poolStats?: () => { total: number; idle: number; waiting: number; max: number };
  close(): Promise<void>;
}

const params = (values?: unknown[]) => values?.map(param);

/** A driver's query in array mode: rows as arrays, the columns named once in `fields`. */
export type Rows = (sql: string, values?: unknown[]) => Promise<{ rows: unknown[][]; fields: { name: string }[] }>;

/** PostgreSQL's type ids the drivers parse themselves. */
export const TIMESTAMPTZ = 1184;
export const INT8 = 20;

/** The same statement with each of these parameter lists, in one round trip (Sql's `queryEach`). */
export type RowsEach = (sql: string, valueLists: unknown[][]) => Promise<{ rows: unknown[][]; fields: { name: string }[] }[]>;

const mapped = <Row>(result: { rows: unknown[][]; fields: { name: string }[] }) => toRows<Row>(result.rows, result.fields.map((field) => field.name));

/** The domain's `Sql` over a driver's query call: parameters and rows mapped the same way for both drivers. */
export function mappedSql(rows: Rows, onQuery?: (sql: string) => void, rowsEach?: RowsEach): Sql {
  return {
    query: async <Row>(sql: string, values?: unknown[]) => {
      onQuery?.(sql);
      return mapped<Row>(await rows(sql, params(values)));
    },
    ...(rowsEach && {
      queryEach: async <Row>(sql: string, valueLists: unknown[][]) => {
        for (let i = 0; i < valueLists.length; i++) onQuery?.(sql);
        return (await rowsEach(sql, valueLists.map((values) => params(values)!))).map((result) => mapped<Row>(result));
      },
    }),
  };
}

export function prismaClient(adapter: Prisma.PrismaClientOptionsWithAdapter['adapter'], onQuery?: (sql: string) => void): PrismaClient {
  if (!onQuery) return new PrismaClient({ adapter });
  const client = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  client.$on('query', (event) => onQuery(event.query));
  return client;
}

/** A start-up the user can fix (its message says how): main.ts prints the message alone, no stack. */
export class StartupError extends Error {}
