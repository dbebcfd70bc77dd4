// Loaded into the server process with `node --import` (never by the server's own code): counts
// every SQL statement the server sends and answers the bench over the IPC channel. It patches the
// drivers' lowest public entry points, so it sees what Prisma really sends, BEGIN and COMMIT included.
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { meteredConnect, poolUse } from './pool-meter.js';

interface TracedStatement {
  sql: string;
  ms: number;
  at: number;
}

let statements = 0;
/** How late the server's event loop ran its callbacks (a pause: a long task, a collection), since the last `counts`. */
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
let trace: TracedStatement[] | null = null;
let commitsOnly = false;

/** A statement that writes rows (the write path's one-statement fast path is a CTE holding one). */
const WRITES = /\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+(\s+\w+)?\s+SET)\b/i;

/** Tracks BEGIN … COMMIT on one session: outside them a write commits by itself (autocommit). */
function transactionState() {
  let inTransaction = false;
  return (sql: string) => {
    const keyword = sql.trim().split(/\s/, 1)[0]!.toUpperCase();
    if (keyword === 'BEGIN') inTransaction = true;
    const autocommits = !inTransaction && WRITES.test(sql);
    if (keyword === 'COMMIT' || keyword === 'ROLLBACK') inTransaction = false;
    return autocommits;
  };
}

/** `autocommits`: a write outside a transaction, which commits when it ends (traced as a COMMIT). */
function record(sql: string, started: number, autocommits = false) {
  const commit = sql === 'COMMIT' || autocommits;
  if (!trace || (commitsOnly && !commit)) return;
  const ended = performance.now();
  const text = commitsOnly ? 'COMMIT' : sql.replace(/\s+/g, ' ').trim().slice(0, 400);
  trace.push({ sql: text, ms: ended - started, at: performance.timeOrigin + ended });
}

// node-postgres: one Client#query call is one statement on the wire. Transactions await its
// promise; Pool#query (Prisma outside a transaction, the readiness probe) passes a callback.
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
const sessions = new WeakMap<object, (sql: string) => boolean>();
(pg.Client.prototype as any).query = function (this: object, ...args: unknown[]) {
  statements++;
  const first = args[0] as string | { text?: string };
  const sql = typeof first === 'string' ? first : (first?.text ?? '?');
  let session = sessions.get(this);
  if (!session) sessions.set(this, (session = transactionState()));
  const autocommits = session(sql);
  if (!trace) return pgQuery.apply(this, args);
  const started = performance.now();
  const last = args[args.length - 1];
  if (typeof last === 'function') {
    args[args.length - 1] = function (this: unknown, error: unknown, ...rest: unknown[]) {
      record(error ? `(failed) ${sql}` : sql, started, !error && autocommits);
      return (last as (...a: unknown[]) => unknown).call(this, error, ...rest);
    };
    return pgQuery.apply(this, args);
  }
  const result = pgQuery.apply(this, args);
  if (result instanceof Promise) {
    result.then(
      () => record(sql, started, autocommits),
      () => record(`(failed) ${sql}`, started),
    );
  }
  return result;
};

// Every pool's checkouts timed (waited for, held): Prisma's queries and the domain's transactions alike.
pg.Pool.prototype.connect = meteredConnect(pg.Pool.prototype.connect);

// PGlite's query and exec: every statement starts with a Parse ('P', extended protocol) or a Query
// ('Q', simple protocol) message and ends with a Sync; the time between them is the statement's time.
const P = 0x50;
const Q = 0x51;
const S = 0x53;
const decoder = new TextDecoder();
function cstring(bytes: Uint8Array, from: number): [string, number] {
  const end = bytes.indexOf(0, from);
  return [decoder.decode(bytes.subarray(from, end)), end + 1];
}
let open: { sql: string; started: number; autocommits: boolean } | null = null;
const pgliteSession = transactionState();
const execProtocolStream = PGlite.prototype.execProtocolStream;
PGlite.prototype.execProtocolStream = async function (this: PGlite, message: Uint8Array, options?: any) {
  const type = message[0];
  if (type === P || type === Q) {
    statements++;
    const sql = type === Q ? cstring(message, 5)[0] : cstring(message, cstring(message, 5)[1])[0];
    const autocommits = pgliteSession(sql);
    if (trace) open = { sql, started: performance.now(), autocommits };
  }
  try {
    return await execProtocolStream.call(this, message, options);
  } finally {
    if (type === S && open) {
      record(open.sql, open.started, open.autocommits);
      open = null;
    }
  }
} as typeof execProtocolStream;

// Named statements (src/db/pglite.ts): a Parse with a name, once per text, then for each call one
// execProtocol exchange that starts with a Bind naming it and ends with its Sync.
const B = 0x42;
const namedTexts = new Map<string, string>();
const execProtocol = PGlite.prototype.execProtocol;
PGlite.prototype.execProtocol = async function (this: PGlite, message: Uint8Array, options?: any) {
  const type = message[0];
  if (type === P) {
    const [name, textAt] = cstring(message, 5);
    if (name) namedTexts.set(name, cstring(message, textAt)[0]);
    return execProtocol.call(this, message, options);
  }
  if (type !== B) return execProtocol.call(this, message, options);
  statements++;
  const name = cstring(message, cstring(message, 5)[1])[0];
  const sql = namedTexts.get(name) ?? `EXECUTE ${name}`;
  const autocommits = pgliteSession(sql);
  const started = performance.now();
  try {
    return await execProtocol.call(this, message, options);
  } finally {
    record(sql, started, autocommits);
  }
} as typeof execProtocol;

type ProbeRequest =
  | { id: number; command: 'counts' | 'trace-take' | 'profile-start' | 'memory' }
  | { id: number; command: 'trace-start'; mode?: 'all' | 'commits' }
  | { id: number; command: 'profile-stop'; file: string };

/** How often the kernel took the CPU from this process while it had work (Linux only). */
function preemptions(): number | null {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const match = /^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(status);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

// CPU profiles of chosen phases only (not start-up), through the inspector of this very thread.
let inspector: Session | null = null;
function connectedInspector() {
  if (!inspector) {
    inspector = new Session();
    inspector.connect();
  }
  return inspector;
}

async function answer(request: ProbeRequest): Promise<unknown> {
  switch (request.command) {
    case 'counts':
    {
      const loopDelayMaxMs = loopDelay.max / 1e6;
      loopDelay.reset();
      return { statements, cpu: process.cpuUsage(), rssBytes: process.memoryUsage().rss, preemptions: preemptions(), loopDelayMaxMs, pool: poolUse() };
    }
    case 'trace-start':
      trace = [];
      commitsOnly = request.mode === 'commits';
      return true;
    case 'trace-take': {
      const taken = trace ?? [];
      trace = null;
      return taken;
    }
    case 'profile-start':
      await connectedInspector().post('Profiler.enable');
      await connectedInspector().post('Profiler.start');
      return true;
    case 'memory':
      // After a full collection, so what is counted is what is still held.
      await connectedInspector().post('HeapProfiler.collectGarbage');
      return process.memoryUsage();
    case 'profile-stop': {
      const { profile } = await inspector!.post('Profiler.stop');
      writeFileSync(request.file, JSON.stringify(profile));
      return request.file;
    }
  }
}

process.on('message', (request: ProbeRequest) => {
  answer(request).then(
    (body) => process.send?.({ id: request.id, body }),
    (error: unknown) => process.send?.({ id: request.id, body: { error: String(error) } }),
  );
});
// The IPC channel must not keep a server that was told to stop alive; and a server whose bench
// went away (killed, crashed) stops the way it does on SIGTERM rather than lingering.
process.channel?.unref();
process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
