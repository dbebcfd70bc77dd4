import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { mappedSql, prismaClient, StartupError, TIMESTAMPTZ, type Database, type SqlDriver, type SqlTransactor } from './driver.js';
import { JSON_OIDS, parseJsonText } from './json-text.js';
import { isGeneric, isPrepared, timestampParser } from './sql.js';
import { log, outsideErrorFields } from '../log.js';
import { QUERY_TIMEOUT_MESSAGE } from './outage.js';
import { poolAcquireFailures, poolWaitSeconds, statementsCancelled } from '../metrics.js';
import { readSignal } from './reads-waited-for.js';

const preparedNames = new Map<string, string>();
let namesGiven = 0;
/**
 * A name per prepared text (sql.ts `prepared`): pg prepares a named statement once per connection
 * and then only binds and executes it. For the few fixed texts so marked only (one entry each).
 * `renew`: a new name, so that each connection prepares the text again (stale plans, below).
 */
function preparedName(text: string, renew = false): string | undefined {
  if (!isPrepared(text)) return undefined;
  let name = preparedNames.get(text);
  if (name === undefined || renew) preparedNames.set(text, (name = `prepared_${++namesGiven}`));
  return name;
}

/**
 * A named statement planned before a schema change that altered its result (a migration adding
 * a column to a table it returns `*` of, under a running server): PostgreSQL refuses to run the
 * old plan ("cached plan must not change result type", raised by RevalidateCachedQuery). Judged
 * by SQLSTATE and the server's routine, never by message text.
 */
const isStalePlan = (error: unknown) =>
  (error as { code?: unknown }).code === '0A000' && (error as { routine?: unknown }).routine === 'RevalidateCachedQuery';

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
    log.warn({ component: 'db', error: outsideErrorFields(error) }, 'PostgreSQL connection lost while in use');
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
  format === 'binary'
    ? pg.types.getTypeParser(oid, format)
    : oid === TIMESTAMPTZ
      ? pgTimestamp
      : (JSON_OIDS as readonly number[]).includes(oid)
        ? parseJsonText
        : pg.types.getTypeParser(oid, format);

/**
 * How long past a statement's statement_timeout the client waits for its answer. PostgreSQL ends
 * a statement at its timeout and says so (57014); only a link that carries nothing any more (a
 * network partition, a peer gone without a reset) leaves the client waiting past it.
 */
const ANSWER_MARGIN_MS = 2_000;

/** How long getting a connection waits: opening one (its settings included), or for one to be free. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A connection whose query went unanswered past query_timeout is in an unknown state: the
 * statement may still run, its transaction may still be open, and whatever is sent next would
 * queue behind it. So it is ended at once (pg then fails what is queued on it, and the pool drops
 * it), never used again, whoever held it (pool.query, withClient, Prisma's transactions).
 */
class AnsweredClient extends pg.Client {
  /** When the pool made it: its settings (onConnect) are answered within the pool's connect timeout. */
  readonly madeAt = Date.now();
  /** Its backend's process id, asked of the server (behind PgBouncer, the driver's processID is the pooler's own). */
  backendPid?: number;

  override query(...args: any[]): any {
    const result: unknown = (super.query as (...params: unknown[]) => unknown)(...args);
    if (!(result instanceof Promise)) return result;
    return result.catch((error: unknown) => {
      if (error instanceof Error && error.message === QUERY_TIMEOUT_MESSAGE) void this.end().catch(() => undefined);
      throw error;
    });
  }
}

/**
 * The pool, its waits for a connection timed and its failures to get one counted (GET /metrics):
 * every query, Prisma's included, checks a connection out through `connect`.
 */
class MeasuredPool extends pg.Pool {
  /** Cancels the statement a backend runs (pg_cancel_backend, on a connection of its own: the pool's may all be taken). */
  cancelBackend: (pid: number) => Promise<void> = async () => {};

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  override connect(callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): Promise<pg.PoolClient> | void {
    const started = process.hrtime.bigint();
    const signal = readSignal();
    const measured = (error: Error | undefined) => {
      poolWaitSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      if (error) poolAcquireFailures.inc();
    };
    if (callback) {
      return super.connect((error, client, done) => {
        measured(error);
        if (error || !client) return callback(error, client, done);
        const gone = this.watched(client, signal);
        if (gone) return callback(gone, undefined, () => {});
        callback(undefined, client, client.release as (release?: unknown) => void);
      });
    }
    return super.connect().then(
      (client) => {
        measured(undefined);
        const gone = this.watched(client, signal);
        if (gone) throw gone;
        return client;
      },
      (error: Error) => {
        measured(error);
        throw error;
      },
    );
  }

  /**
   * A connection taken for a read whose client has gone (reads-waited-for.ts) goes back unused: the
   * read fails as cancelled. While a read holds one, its client going cancels the statement it
   * runs; the connection returns to the pool once the cancel is done, so that it cannot hit the
   * statement of whoever takes the connection next (a backend idle when it comes ignores it).
   */
  private watched(client: pg.PoolClient, signal: AbortSignal | undefined): Error | undefined {
    if (!signal) return undefined;
    if (signal.aborted) {
      client.release();
      return Object.assign(new Error("canceling statement: the request's client has gone"), { code: '57014' });
    }
    let cancelled: Promise<void> | undefined;
    const cancel = () => void (cancelled = this.cancelBackend((client as unknown as AnsweredClient).backendPid!));
    signal.addEventListener('abort', cancel, { once: true });
    const release = client.release;
    client.release = (error?: Error | boolean) => {
      signal.removeEventListener('abort', cancel);
      if (cancelled) void cancelled.then(() => release(error));
      else release(error);
    };
    return undefined;
  }
}

/**
 * Cancels backends' statements (pg_cancel_backend) on a connection of its own, opened within the
 * pool's connect timeout: one at a time, whatever is asked meanwhile going together in the next,
 * so that many clients going at once open one connection beyond the pool, not one each. A
 * failure is logged, not thrown.
 */
function backendCanceller(connectionString: string): (pid: number) => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  let next: number[] | undefined;
  const cancel = async (pids: number[]) => {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: CONNECT_TIMEOUT_MS });
    try {
      await client.connect();
      const { rows } = await client.query<{ cancelled: number }>('SELECT count(*) FILTER (WHERE pg_cancel_backend(pid))::int AS cancelled FROM unnest($1::int[]) AS pid', [pids]);
      statementsCancelled.inc(rows[0]!.cancelled);
    } catch (error) {
      log.warn({ component: 'db', error: outsideErrorFields(error as Error) }, 'could not cancel the statements of reads whose clients have gone');
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  return (pid) => {
    if (!next) {
      const pids: number[] = (next = []);
      last = last.then(() => {
        next = undefined;
        return cancel(pids);
      });
    }
    next.push(pid);
    return last;
  };
}

/** `fn` in a transaction on the client; a connection whose rollback failed is not returned to the pool. */
async function inTransaction<T>(client: pg.PoolClient, discard: (error: Error) => void, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const value = await fn();
    await client.query('COMMIT');
    return value;
  } catch (error) {
    await client.query('ROLLBACK').catch(discard);
    throw error;
  }
}

/** The generic statements (below) each connection has prepared, by name. */
const preparedGenerics = new WeakMap<pg.ClientBase, Set<string>>();

/**
 * Runs a named statement with its generic plan (sql.ts `preparedGeneric`) once for each argument
 * list, in one round trip: `SET LOCAL plan_cache_mode` and an `EXECUTE` for each list as one
 * simple query, whose implicit transaction ends the setting with it (on the whole connection it
 * would plan every other statement, Prisma's unnamed ones too, generically). Each `EXECUTE` is a
 * statement of its own, with its own snapshot (read committed). A transaction around the extended
 * protocol's execution took three round trips: an owner's empty view cost 1.35× the wall time and
 * the client's CPU (bench/README.md, run QM7).
 * The statement is prepared by SQL `PREPARE` on each connection at its first use; its arguments
 * go as literals, escaped by the driver.
 */
const queryGeneric = (pool: pg.Pool, name: string, text: string, valueLists: unknown[][]): Promise<pg.QueryArrayResult[]> =>
  withClient(pool, async (client) => {
    let prepared = preparedGenerics.get(client);
    if (!prepared) preparedGenerics.set(client, (prepared = new Set()));
    if (!prepared.has(name)) {
      await client.query(`PREPARE ${name} AS ${text}`);
      prepared.add(name);
    }
    const executes = valueLists.map((values) => `EXECUTE ${name}(${values.map((value) => literal(client, value)).join(', ')})`);
    const [, ...executed] = (await client.query({ text: `SET LOCAL plan_cache_mode = force_generic_plan; ${executes.join('; ')}`, rowMode: 'array' })) as unknown as pg.QueryArrayResult[];
    return executed;
  });

function literal(client: pg.ClientBase, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return String(value);
  if (typeof value === 'string') return client.escapeLiteral(value);
  throw new TypeError(`a generic statement's argument must be a string, a number or null, not ${typeof value}`);
}

/**
 * Searches match any case by the database's case rules (lower(), ILIKE), which under the C
 * character type know only a–z; a database's LC_CTYPE is fixed when it is created.
 */
function warnIfCaseBlind(ctype: string): void {
  if (ctype !== 'C' && ctype !== 'POSIX') return;
  log.warn(
    { component: 'db', lcCtype: ctype },
    `the database's LC_CTYPE is '${ctype}': searches (searchAudits text, threads title) match letters other than a-z only in the case written ("ЗНАЧЕНИЕ" does not find "значение"); a database created with a UTF-8 character type (e.g. LC_CTYPE 'C.UTF-8') matches every letter in any case`,
  );
}

/**
 * The URL without `?schema=` (Prisma's way of naming the schema, which PostgreSQL does not know as
 * a connection parameter), and that schema.
 */
function withoutSchema(url: string): { connectionString: string; schema?: string } {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  if (schema === undefined) return { connectionString: url };
  parsed.searchParams.delete('schema');
  return { connectionString: parsed.toString(), schema };
}

/**
 * What each connection sets before its first use, as a statement rather than as startup
 * parameters: PgBouncer refuses a connection that carries any it does not know
 * (`unsupported startup parameter: statement_timeout`), and one told to ignore them drops them
 * without a word. A statement also leaves the URL's own `options` (`-c search_path=…`) in force.
 * No JIT: compiling a statement whose estimate passes jit_above_cost takes hundreds of
 * milliseconds (the tool activity view's does at a million audits: 316 ms of a 550 ms read), more
 * than any request here runs. audit.recent_changes: the triggers of migration
 * 20261209000000_recent_changes copy each change.
 */
function sessionSettings(statementTimeoutMs: number, recentChanges: boolean, schema: string | undefined): string {
  const settings = [`SET statement_timeout = ${statementTimeoutMs}`, 'SET jit = off'];
  if (recentChanges) settings.push('SET audit.recent_changes = on');
  if (schema !== undefined) settings.push(`SET search_path TO ${pg.escapeIdentifier(schema)}`);
  return settings.join('; ');
}

function missingSchema(schema: string | undefined, searchPath: string): never {
  if (schema !== undefined) {
    throw new StartupError(
      `The schema "${schema}" does not exist (DATABASE_URL's ?schema=): create it (CREATE SCHEMA ${pg.escapeIdentifier(schema)} AUTHORIZATION <the server's role>) or name one that does.`,
    );
  }
  throw new StartupError(
    `No schema of the search_path (${searchPath}) exists for the server's tables: create one (CREATE SCHEMA … AUTHORIZATION <the server's role>), or name it with ?schema= in DATABASE_URL.`,
  );
}

/**
 * Refuses a pooler that hands each transaction to whichever server connection is free (PgBouncer's
 * `pool_mode = transaction` or `statement`): the server keeps state on its connections (named
 * prepared statements, the session advisory locks of migrations and of the retention sweep, the
 * settings above), which such a pool mixes between clients: requests would fail with `prepared
 * statement "prepared_1" does not exist`, and a lock could stay held on a connection nobody owns.
 * Seen by the backend each statement lands on: while a transaction of a second connection holds a
 * server connection, the first connection's statements land on one server connection throughout,
 * never on the one the second holds.
 */
async function refuseTransactionPooling(pool: pg.Pool): Promise<void> {
  const backend = async (client: pg.PoolClient) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const first = await pool.connect();
  let shared: boolean;
  try {
    const second = await pool.connect();
    try {
      const before = await backend(first);
      await second.query('BEGIN');
      try {
        const held = await backend(second);
        shared = held === before || (await backend(first)) !== before;
      } finally {
        await second.query('ROLLBACK');
      }
    } catch (error) {
      // PgBouncer's statement pooling refuses the BEGIN itself.
      if (!/statement pooling/i.test((error as Error).message)) throw error;
      shared = true;
    } finally {
      second.release();
    }
  } finally {
    first.release();
  }
  if (shared) {
    throw new StartupError(
      'DATABASE_URL leads to a connection pooler in transaction or statement pooling mode (PgBouncer pool_mode = transaction): the server keeps state on its connections (prepared statements, advisory locks, settings), which such a pool shares between clients. Give its database pool_mode = session in the pooler (it still bounds the connections to PostgreSQL), or connect to PostgreSQL directly (docs/operations.md, "Managed PostgreSQL and connection poolers").',
    );
  }
}

export async function openPostgres(
  url: string,
  poolSize: number,
  statementTimeoutMs: number,
  onQuery?: (sql: string) => void,
  recentChanges = false,
): Promise<Database> {
  // Bounded waits: a writer never queues forever behind a stuck lock or an exhausted pool.
  const { connectionString, schema } = withoutSchema(url);
  const settings = sessionSettings(statementTimeoutMs, recentChanges, schema);
  const pool = new MeasuredPool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // PostgreSQL enforces statement_timeout, so it cannot fire when the link is gone: the client
    // gives up a little later (AnsweredClient). Keepalive: an idle connection's peer gone silently is noticed.
    query_timeout: statementTimeoutMs + ANSWER_MARGIN_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    Client: AnsweredClient,
    // Before the connection's first use; a connection whose settings failed is ended, never used.
    // pg's connect timeout ends with the handshake: the settings get what is left of it.
    onConnect: async (client: pg.ClientBase) => {
      const results = (await client.query({
        text: `${settings}; SELECT pg_backend_pid() AS pid`,
        query_timeout: Math.max(1, CONNECT_TIMEOUT_MS - (Date.now() - (client as AnsweredClient).madeAt)),
      } as pg.QueryConfig)) as unknown as pg.QueryResult<{ pid: number }>[];
      (client as AnsweredClient).backendPid = results.at(-1)!.rows[0]!.pid;
    },
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  });
  pool.cancelBackend = backendCanceller(connectionString);
  // An idle client that loses its server must not crash the process; the next query reconnects.
  pool.on('error', (error) => log.warn({ component: 'db', error: outsideErrorFields(error) }, 'idle PostgreSQL connection lost'));
  const currentSchema = await pool.connect().then(
    async (client) => {
      try {
        const { rows } = await client.query<{ ctype: string; schema: string | null }>(`SELECT current_setting('lc_ctype') AS ctype, current_schema() AS schema`);
        warnIfCaseBlind(rows[0]!.ctype);
        return rows[0]!.schema ?? missingSchema(schema, (await client.query<{ path: string }>('SHOW search_path')).rows[0]!.path);
      } finally {
        client.release();
      }
    },
    async (error: Error & { code?: string }) => {
      await pool.end();
      const { hostname, port, pathname } = new URL(url);
      // invalid_catalog_name: the database does not exist
      if (error.code !== '3D000') throw new StartupError(`the PostgreSQL server of DATABASE_URL at ${hostname}:${port || 5432} cannot be reached: ${error.message}`);
      const database = decodeURIComponent(pathname.slice(1));
      throw new StartupError(
        `The database "${database}" does not exist on ${hostname}:${port || 5432}: create it (CREATE DATABASE "${database}", or createdb "${database}") or point DATABASE_URL at one that does.`,
      );
    },
  );
  // A pool of one (a tool's, e.g. the tests' template migration) cannot hold the two connections it takes.
  if (poolSize > 1) await refuseTransactionPooling(pool).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  /** A statement prepared (sql.ts `prepared`) again under a new name once its plan went stale; any other as is. */
  async function renamedWhenStale<T>(text: string, run: (name: string | undefined) => Promise<T>): Promise<T> {
    try {
      return await run(preparedName(text));
    } catch (error) {
      // A refused statement did nothing (in autocommit, or its transaction rolled back): prepared again under a new name, it runs once more.
      if (!isPrepared(text) || !isStalePlan(error)) throw error;
      log.info({ component: 'db', statement: preparedNames.get(text) }, 'a prepared statement went stale after a schema change: prepared again');
      return run(preparedName(text, true));
    }
  }
  const queryPrepared = (text: string, values: unknown[] | undefined) =>
    renamedWhenStale(text, (name) => pool.query({ name, text, values, rowMode: 'array' }));
  const queryGenericEach = (text: string, valueLists: unknown[][]) => renamedWhenStale(text, (name) => queryGeneric(pool, name!, text, valueLists));

  const driver: SqlDriver & SqlTransactor = {
    exec: async (sql) => void (await pool.query(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as Row[],
    withSession: (fn, { statementTimeoutMs: sessionTimeoutMs } = {}) => {
      const query_timeout = sessionTimeoutMs === undefined ? undefined : sessionTimeoutMs + ANSWER_MARGIN_MS;
      const run = (client: pg.PoolClient, text: string, values?: unknown[]) => client.query({ text, values, query_timeout } as pg.QueryConfig);
      return withClient(pool, (client) =>
        fn({
          exec: async (sql) => void (await run(client, sql)),
          query: async <Row>(sql: string, params?: unknown[]) => (await run(client, sql, params)).rows as Row[],
        }),
      );
    },
    transaction: (fn) =>
      withClient(pool, (client, discard) =>
        inTransaction(client, discard, () => fn(mappedSql((text, values) => client.query({ text, values, rowMode: 'array' })))),
      ),
    close: () => pool.end(),
  };
  // Prisma names every table with its schema (`public` unless told): the one the statements here find unqualified.
  const prisma = prismaClient(new PrismaPg(pool, { schema: currentSchema }), onQuery);
  return {
    kind: 'postgres',
    prisma,
    driver,
    sql: {
      ...mappedSql(
        async (text, values) => (isGeneric(text) ? (await queryGenericEach(text, [values ?? []]))[0]! : queryPrepared(text, values)),
        onQuery,
        async (text, valueLists) => (isGeneric(text) ? queryGenericEach(text, valueLists) : Promise.all(valueLists.map((values) => queryPrepared(text, values)))),
      ),
      transaction: driver.transaction,
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: poolSize }),
    close: async () => {
      await prisma.$disconnect();
      await driver.close();
    },
  };
}

