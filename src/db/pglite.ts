import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, PGlite, protocol, type ParserOptions, type Results, type Transaction } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { INT8, mappedSql, prismaClient, TIMESTAMPTZ, type Database, type Rows, type SqlDriver, type SqlTransactor } from './driver.js';
import { lockDataDir } from './data-dir-lock.js';
import { JSON_OIDS, parseJsonText } from './json-text.js';
import { createPgliteInChildProcess, isNewPgliteDataDir } from './new-pglite.js';
import { pgliteOptions, pgliteSession, serverStartParams } from './pglite-settings.js';
import { pgliteTemplateInMemory } from './pglite-template.mjs';
import { isPrepared, timestampParser } from './sql.js';

export { pgliteOptions };

let statementsNamed = 0;

/**
 * The texts marked `prepared` (sql.ts) as named statements, as the PostgreSQL driver has them:
 * PGlite's `query` parses and plans every call, about half of what a lifecycle's fenced statement
 * costs. Through PGlite's protocol API: a text is parsed and described once, then each call binds
 * and executes it in one exchange. Other texts, and every statement of a transaction, go through
 * `query`.
 */
function namedStatements(pglite: PGlite, parsers: ParserOptions): Rows {
  const { serialize } = protocol;
  const statements = new Map<string, { name: string; paramTypes: number[] }>();
  // Merged once: given as an option, PGlite copies its 300-odd parsers for every result.
  const allParsers = { ...pglite.parsers, ...parsers };
  const exchange = async (...sent: Uint8Array[]) => (await pglite.execProtocol(Buffer.concat(sent))).messages;
  async function described(text: string) {
    let statement = statements.get(text);
    if (!statement) {
      const name = `prepared_${++statementsNamed}`;
      const answer = await exchange(serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync());
      statements.set(text, (statement = { name, paramTypes: parse.parseDescribeStatementResults(answer) }));
    }
    return statement;
  }
  async function execute(text: string, values: unknown[]) {
    const { name, paramTypes } = await described(text);
    // As `query` serializes its parameters: by the type the statement gives each.
    const serialized = values.map((value, index) => (value == null ? null : (pglite.serializers[paramTypes[index]!]?.(value) ?? String(value))));
    const answer = await exchange(serialize.bind({ statement: name, values: serialized }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync());
    return parse.parseResults(answer, allParsers, { rowMode: 'array' })[0] as Results<unknown[]>;
  }
  /** No transaction is open on PGlite's one session (asked of the backend directly, no exchange). */
  const idle = () => !pglite.isInTransaction();
  // `runExclusive` keeps every other statement out while it runs, but another caller's
  // transaction may be open between two of its statements, and a statement sent then would run
  // inside it. Then the call waits for that transaction to end, and runs in one of its own.
  return async (text, values = []) =>
    (await pglite.runExclusive(async () => (idle() ? execute(text, values) : undefined))) ??
    pglite.transaction(() => pglite.runExclusive(() => execute(text, values)));
}

/** The server's own PGlite: in `dataDir`, created and migrated first in a process of its own when new (new-pglite.ts); in memory without one. */
export async function openPglite(dataDir?: string, embedded?: PGlite, onQuery?: (sql: string) => void): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const release = dataDir && !embedded ? lockDataDir(dataDir) : () => {};
  if (!embedded && dataDir && isNewPgliteDataDir(dataDir)) await createPgliteInChildProcess(dataDir);
  // In memory: the install's new database, as a new directory on disk gets its copy.
  const where = dataDir ? { dataDir: join(dataDir, 'pglite') } : { fs: pgliteTemplateInMemory() };
  const pglite = embedded ?? new PGlite({ ...pgliteOptions, startParams: serverStartParams, ...where });
  await pglite.waitReady;
  // What PGlite's start left behind (without the install's template in memory: the instance that
  // ran its initdb, ~400 MB of WebAssembly memory) goes back to the system at the next full
  // collection, which a server's young allocations may not cause for a long time: `npm run serve`
  // exposes gc for this one call.
  if (!embedded) (globalThis as { gc?: () => void }).gc?.();
  const session = pgliteSession(pglite);
  // PGlite is one in-process session: "a session" is the database itself.
  // int8 as text: the row mapper makes it a bigint without a detour through an imprecise number.
  const parsers: ParserOptions = {
    [INT8]: (value: string) => value,
    [TIMESTAMPTZ]: timestampParser((text) => new Date(text)),
    ...Object.fromEntries(JSON_OIDS.map((oid) => [oid, parseJsonText])),
  };
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
      release();
    },
  };
  const statement = namedStatements(pglite, parsers);
  const queried = rowsOf(pglite);
  const autocommit: Rows = (sql, values) => (isPrepared(sql) ? statement(sql, values) : queried(sql, values));
  const prisma = prismaClient(new PrismaPGlite(pglite), onQuery);
  return {
    kind: 'pglite',
    prisma,
    driver,
    sql: { ...mappedSql(autocommit, onQuery), transaction: driver.transaction },
    close: async () => {
      await prisma.$disconnect();
      await driver.close();
    },
  };
}
