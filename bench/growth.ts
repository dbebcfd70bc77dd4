// npx tsx bench/growth.ts [--sizes 10000,100000,1000000] [--iterations 15] [--plans] [--payload-bytes 2000] [--keep]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards unless --keep,
//   which prints its name), else in-memory PGlite
//
// Issue 44, flat at a million: each read a debugger or dashboard makes, as the domain runs it,
// at each size back to back on one database that grows between them. The history: 50 superadmin
// owners of 40 threads each, and one long thread (a tenth of the audits) of its own owner; runs of
// ten audits (a model call declaring nine tools, each run and bound to its ToolCall); names one in
// four `calc`, statuses one in ten FAILED. Each size adds audits to the same threads by SQL; each
// read is measured twice: first with the statistics as they stood before the growth (the last
// ANALYZE was at the previous size), then after ANALYZE. p50 over `iterations`, after two warm-ups.
// --plans prints each read's plan (EXPLAIN ANALYZE, text) at the largest size, analysed.
// The rows are written by SQL, not through the API: the shape is the write path's (each tool audit
// ended when it is written, so the database copies its end into tool_audit_end), its payloads
// small unless --payload-bytes <mean>: then each audit (model input, tool output) also carries text
// of 100 B to 50 kB, one audit in a hundred 50 kB and the rest spread evenly up to what makes that
// mean (the issue's: 100 B–50 kB, mean ~2 kB), cut from one text of words `w0`…`w4999`, so that
// the storage per audit can be set against real payload sizes.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { Database, Db } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import type { Sql } from '../src/db/sql.js';
import { auditPayloadsByIds, PAYLOADS, readTimeline, type Payload } from '../src/domain/audit-reads.js';
import { searchAudits } from '../src/domain/audit-search.js';
import type { Principal } from '../src/domain/principal.js';
import { readableThreadsPage } from '../src/domain/threads.js';
import { toolCallLedger } from '../src/domain/tool-call-ledger.js';
import { toolCallStats } from '../src/domain/tool-call-stats.js';
import { openScratchDatabase } from './lib/scratch.js';
import { observedSql } from '../test/support/plans.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: { sizes: { type: 'string' }, iterations: { type: 'string' }, plans: { type: 'boolean' }, keep: { type: 'boolean' }, 'payload-bytes': { type: 'string' } },
});
const payloadBytes = flags['payload-bytes'] === undefined ? null : Number(flags['payload-bytes']);
const LARGEST_PAYLOAD = 50_000;
const sizes = (flags.sizes ?? '10000,100000,1000000').split(',').map(Number);
const iterations = Number(flags.iterations ?? 15);
const OWNERS = 50;
const THREADS_PER_OWNER = 40;
const THREADS = OWNERS * THREADS_PER_OWNER;
const RUN_AUDITS = 10;
const BIG_THREAD = '00000000-0000-4000-8000-0000000000b1';
const owner: Principal = { sub: 'owner-0', role: 'superadmin' };
const bigOwner: Principal = { sub: 'big-owner', role: 'superadmin' };
const admin: Principal = { sub: 'someone', role: 'admin' };
const user: Principal = { sub: 'owner-0', role: 'user' };

/** The long thread's newest 500 audits and then their `payloads`, as `threadAudits` reads them. */
async function timelineWith(sql: Sql, payloads: readonly Payload[]) {
  const { items } = await readTimeline(sql, bigOwner, BIG_THREAD, 500, null);
  const ids = items.map((item) => item.id);
  return auditPayloadsByIds(sql, new Map(payloads.map((payload) => [payload, ids])));
}

/** Each read the table names, as its page asks for it (first 50, limit 500). */
const READS: [string, (sql: Db) => Promise<unknown>][] = [
  ['searchAudits(name: calc), across threads', (sql) => searchAudits(sql, owner, { name: 'calc', first: 50 })],
  ['searchAudits(status: FAILED), across threads', (sql) => searchAudits(sql, owner, { status: 'FAILED', first: 50 })],
  ['searchAudits(status: FAILED), long thread', (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, status: 'FAILED', first: 50 })],
  ['toolCallLedger(status: FAILED), across threads', (sql) => toolCallLedger(sql, owner, { status: 'FAILED', first: 50 })],
  ['toolCallLedger(name: calc), across threads', (sql) => toolCallLedger(sql, owner, { name: 'calc', first: 50 })],
  // As the page asks (sizes and the error), and with every payload: the timeline, then the payloads its items ask for.
  ['threadAudits(limit: 500), long thread', (sql) => timelineWith(sql, ['error'])],
  ['threadAudits(limit: 500), long thread, every payload', (sql) => timelineWith(sql, PAYLOADS)],
  ['searchAudits(text: rare), long thread', (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, text: 'question 777-777', first: 50 })],
  // In every audit of the long thread: more matches than a page, so the probe of the index is followed by the walk.
  ['searchAudits(text: common), long thread', (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, text: 'question', first: 50 })],
  // Across threads, texts of which owner-0 holds 1 in 50 matches: in every tool audit, in one audit of each thread, in the long thread only.
  ['searchAudits(text: common), across threads', (sql) => searchAudits(sql, owner, { text: 'question', first: 50 })],
  ['searchAudits(text: medium), across threads', (sql) => searchAudits(sql, owner, { text: 'question 37-37', first: 50 })],
  ['searchAudits(text: rare), across threads', (sql) => searchAudits(sql, owner, { text: 'question 7777-7777', first: 50 })],
  ['threads(first: 20), owner (user)', (sql) => readableThreadsPage(sql, user, { first: 20 })],
  ['threads(first: 20), admin', (sql) => readableThreadsPage(sql, admin, { first: 20 })],
  ['toolCallStats, long thread', (sql) => toolCallStats(sql, BIG_THREAD)],
];

/**
 * Grows every thread to `perThread` audits and the long thread to `big` (from `fromThread` and
 * `fromBig`), in runs of RUN_AUDITS: the model call (sequence 0) declares the run's nine tools.
 * Ids derive from the thread and the audit's number, so each statement joins what the last wrote.
 */
async function grow(db: Database, from: { thread: number; big: number }, to: { thread: number; big: number }) {
  const bound = (which: 'from' | 'to') =>
    `CASE WHEN t.id = '${BIG_THREAD}' THEN ${which === 'from' ? from.big : to.big} ELSE ${which === 'from' ? from.thread : to.thread} END`;
  const blocks = `SELECT t.id AS thread_id, b FROM thread t, generate_series(${bound('from')} / ${RUN_AUDITS}, ${bound('to')} / ${RUN_AUDITS} - 1) b`;
  const audits = `SELECT t.id AS thread_id, k FROM thread t, generate_series(${bound('from')}, ${bound('to')} - 1) k WHERE k % ${RUN_AUDITS} <> 0`;
  const id = (kind: string, k: string) => `md5('${kind}' || a.thread_id || '/' || ${k})::uuid`;
  const run = (k: string) => `md5('r' || a.thread_id || '/' || (${k}) / ${RUN_AUDITS})::uuid`;
  const text = (k: string) => (payloadBytes === null ? `''` : payloadText(k, payloadBytes));
  await db.driver.exec(`
    INSERT INTO run (id, thread_id, status, lease_epoch)
      SELECT md5('r' || a.thread_id || '/' || a.b)::uuid, a.thread_id, 'COMPLETED', 1 FROM (${blocks}) a ORDER BY a.b, a.thread_id;
    INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, input)
      SELECT ${id('m', 'a.b')}, a.thread_id, md5('r' || a.thread_id || '/' || a.b)::uuid, 'ASSISTANT', 'model_audit', 'model', 'planner', 0,
        'COMPLETED', jsonb_build_object('q', 'question ' || a.b, 'text', ${text("hashtext(a.thread_id || '/m' || a.b)")}) FROM (${blocks}) a;
    INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, status, declared_input)
      SELECT ${id('c', 'a.k')}, a.thread_id, ${run('a.k')}, md5('m' || a.thread_id || '/' || (a.k / ${RUN_AUDITS}))::uuid, a.k % ${RUN_AUDITS},
        'call-' || a.k, CASE WHEN a.k % 4 = 0 THEN 'calc' ELSE 'tool-' || (a.k % 7) END,
        (CASE WHEN a.k % 10 = 5 THEN 'FAILED' ELSE 'COMPLETED' END)::"ToolCallStatus", jsonb_build_object('x', a.k)
      FROM (${audits}) a;
    INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, input, output, tool_call_row_id, changed_at)
      SELECT ${id('a', 'a.k')}, a.thread_id, ${run('a.k')}, 'TOOL', 'tool_audit', 'call-' || a.k,
        CASE WHEN a.k % 4 = 0 THEN 'calc' ELSE 'tool-' || (a.k % 7) END, a.k % ${RUN_AUDITS},
        (CASE WHEN a.k % 10 = 5 THEN 'FAILED' ELSE 'COMPLETED' END)::"AuditStatus",
        jsonb_build_object('x', a.k, 'q', 'question ' || a.k || '-' || a.k), jsonb_build_object('content', 'result ' || a.k || ' ' || ${text("hashtext(a.thread_id || '/a' || a.k)")}), ${id('c', 'a.k')}, now()
      FROM (${audits}) a;`);
}

/**
 * SQL for the payload text of the audit whose hash is `hash`: 50 kB for one in a hundred, else
 * 100 B up to twice what brings the mean to `mean`, cut at a point the hash picks from the text in
 * `payload_words` (made by `makePayloadWords`).
 */
function payloadText(hashInt: string, mean: number): string {
  const hash = `(${hashInt})::bigint`;
  const span = Math.max(0, Math.round(2 * ((mean - LARGEST_PAYLOAD / 100) / 0.99 - 100)));
  const size = `CASE WHEN abs(${hash}) % 100 = 37 THEN ${LARGEST_PAYLOAD} ELSE 100 + abs(${hash} / 100) % ${span + 1} END`;
  return `substr((SELECT words FROM payload_words), (1 + abs(${hash}) % 10000)::int, (${size})::int)`;
}

/** One text of words `w0`…`w4999` in a fixed pseudo-random order, long enough for any cut. */
async function makePayloadWords(db: Database) {
  await db.driver.exec(`CREATE TABLE payload_words AS
    SELECT string_agg('w' || abs(hashtext(g::text)) % 5000, ' ' ORDER BY g) AS words FROM generate_series(1, ${(LARGEST_PAYLOAD + 10_000) / 4}) g`);
}

async function p50(sql: Db, read: (sql: Db) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2; i++) await read(sql);
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await read(sql);
    times.push(performance.now() - start);
  }
  return summarize(times).p50;
}

/**
 * The buffers the read's statements touched (shared hits and reads, from EXPLAIN (ANALYZE,
 * BUFFERS)): the work, whatever else loads the machine. PostgreSQL only (PGlite reports none).
 */
async function buffers(db: Database, read: (sql: Db) => Promise<unknown>): Promise<number> {
  let total = 0;
  await read(
    observedSql(db, async (sql, statement, params) => {
      const [row] = await sql.query<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement}`, params);
      const plan = row!['QUERY PLAN'][0].Plan;
      total += (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
    }),
  );
  return total;
}

/** The plan of the read's last statement, as text. */
async function plan(db: Database, read: (sql: Db) => Promise<unknown>): Promise<string> {
  let text = '';
  await read(
    observedSql(db, async (sql, statement, params) => {
      const rows = await sql.query<Record<string, string>>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${statement}`, params);
      text = rows.map((row) => Object.values(row)[0]).join('\n');
    }),
  );
  return text;
}

/**
 * What the tables that hold audits and their projection weigh per audit, against the payloads' own
 * bytes (input_bytes + output_bytes + error_bytes: the payloads' JSON text), and the parts of it.
 */
async function storage(db: Database): Promise<string> {
  type Sizes = Record<'tables' | 'payloads' | 'audits' | 'heap' | 'toast' | 'search' | 'indexes' | 'toolCall' | 'ends', string>;
  const [row] = await db.driver.query<Sizes>(`SELECT
      pg_total_relation_size('message') + pg_total_relation_size('tool_call') + pg_total_relation_size('tool_call_count')
        + pg_total_relation_size('tool_audit_end') AS tables,
      (SELECT sum(coalesce(input_bytes, 0) + coalesce(output_bytes, 0) + coalesce(error_bytes, 0)) FROM message) AS payloads,
      (SELECT count(*) FROM message) AS audits,
      pg_relation_size('message') AS heap,
      pg_total_relation_size(reltoastrelid) AS toast,
      pg_relation_size('message_audit_search_owner_idx') AS search,
      pg_indexes_size('message') AS indexes,
      pg_total_relation_size('tool_call') + pg_total_relation_size('tool_call_count') AS "toolCall",
      pg_total_relation_size('tool_audit_end') AS ends
    FROM pg_class WHERE oid = 'message'::regclass`);
  const audits = Number(row!.audits);
  const perAudit = (column: keyof Sizes) => round(Number(row![column]) / audits);
  const payloadPerAudit = Number(row!.payloads) / audits;
  return `storage: ${perAudit('tables')} bytes per audit (message, tool_call, tool_call_count, tool_audit_end with their indexes and TOAST), payloads ${round(payloadPerAudit)}: ${round(Number(row!.tables) / audits / payloadPerAudit)}×; per audit: message heap ${perAudit('heap')}, its TOAST ${perAudit('toast')}, its indexes ${perAudit('indexes')} (the search index ${perAudit('search')}), tool_call and tool_call_count ${perAudit('toolCall')}, tool_audit_end ${perAudit('ends')}`;
}

const { db, drop } = await openScratchDatabase('audit_growth', { statementTimeoutMs: 3_600_000 });
console.log(`${new Date().toISOString()} · ${db.kind} · load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
try {
  await migrate(db.driver, undefined, { log: () => {} });
  await db.driver.exec(`
    INSERT INTO thread (id, owner_id, title, created_at)
      SELECT gen_random_uuid(), 'owner-' || o, 'thread ' || o || '/' || k, now() - ((o * ${THREADS_PER_OWNER} + k) * interval '1 minute')
      FROM generate_series(0, ${OWNERS - 1}) o, generate_series(1, ${THREADS_PER_OWNER}) k;
    INSERT INTO thread (id, owner_id, title) VALUES ('${BIG_THREAD}', 'big-owner', 'long');`);
  if (payloadBytes !== null) await makePayloadWords(db);
  const results: Record<string, { stale: number; analysed: number; buffers: number }[]> = {};
  let grown = { thread: 0, big: 0 };
  for (const size of sizes) {
    const big = Math.round(size / 10);
    const to = { thread: Math.ceil((size - big) / THREADS / RUN_AUDITS) * RUN_AUDITS, big: Math.ceil(big / RUN_AUDITS) * RUN_AUDITS };
    const started = performance.now();
    await grow(db, grown, to);
    grown = to;
    const [{ count }] = (await db.driver.query<{ count: string }>(`SELECT count(*) FROM message`)) as [{ count: string }];
    console.log(`${count} audits (+${Math.round((performance.now() - started) / 1000)} s to grow)`);
    if (db.kind === 'postgres') console.log(await storage(db));
    const stale: number[] = [];
    for (const [, read] of READS) stale.push(await p50(db.sql, read));
    await db.driver.exec('ANALYZE');
    for (const [index, [name, read]] of READS.entries()) {
      (results[name] ??= []).push({ stale: stale[index]!, analysed: await p50(db.sql, read), buffers: await buffers(db, read) });
    }
  }
  const header = [
    'read',
    ...sizes.map((size) => `p50 ms at ${size.toLocaleString('en')} (stale / analysed)`),
    'ratio last/first (analysed)',
    ...sizes.map((size) => `buffers at ${size.toLocaleString('en')}`),
    'buffers ratio',
  ];
  console.log(table(header, READS.map(([name]) => {
    const row = results[name]!;
    return [
      name,
      ...row.map((r) => `${round(r.stale)} / ${round(r.analysed)}`),
      round(row.at(-1)!.analysed / row[0]!.analysed),
      ...row.map((r) => r.buffers),
      round(row.at(-1)!.buffers / Math.max(1, row[0]!.buffers)),
    ];
  })));
  // The timeline's payloads as they are in use (tens of kB, stored out of line): the newest 500
  // audits of the long thread (its timeline page) get a 19 kB output each, then the page's read and the read of
  // every payload are timed against each other.
  const page = await readTimeline(db.sql, bigOwner, BIG_THREAD, 500);
  await db.driver.query(
    `UPDATE message m SET output = jsonb_build_object('text', (SELECT string_agg(md5(m.id::text || g), '') FROM generate_series(1, 600) g))
      WHERE m.id = ANY($1::uuid[])`,
    [page.items.map((item) => item.id)],
  );
  const timeline = READS.filter(([name]) => name.startsWith('threadAudits'));
  const timed: (readonly [string, number])[] = [];
  for (const [name, read] of timeline) timed.push([name, await p50(db.sql, read)] as const);
  console.log(table(['with 19 kB outputs', 'p50 ms', 'against every payload'], timed.map(([name, ms]) => [name, round(ms), round(ms / timed.at(-1)![1])])));
  if (flags.plans) {
    for (const [name, read] of READS) console.log(`\n### ${name}\n\n${await plan(db, read)}`);
  }
} finally {
  if (flags.keep && db.kind === 'postgres') console.log(`kept: database ${(await db.driver.query<{ name: string }>('SELECT current_database() AS name'))[0]!.name}`);
  await db.close();
  if (!flags.keep) await drop();
}
