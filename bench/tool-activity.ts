// npx tsx bench/tool-activity.ts [--audits 1000000] [--reads 50] [--baseline <module>] [--steps 3] [--skip-writes] [--payload-bytes 0] [--failed-every 20]
//   (EXPLAIN=1 prints the view's plan at each step)
//
// The cost of one toolActivity view (issue 40, docs/dashboards.md) as history and other owners
// grow, and what the view's trigger and indexes add to the write statements. In process, on the
// view's own statement (src/domain/tool-activity.ts). Against PGlite by default; against
// PostgreSQL when DATABASE_URL is an admin URL (a fresh database, dropped afterwards).
//
// read: the view's p50/p99 for an owner with --audits tool audits, a tenth of them ended within
//   the last hour (the window); then with four times as many more, all older than the window;
//   then with another owner holding --audits of their own. Ratios against the first.
//   --baseline names a module exporting readOwnerToolActivity (e.g. the view of an earlier commit,
//   `git show <commit>:src/domain/tool-activity.ts > src/domain/tool-activity.baseline.ts`): each
//   step then reads both views, alternating, and the ratio of this one to it is printed too.
//   --steps 1 stops after the first step. --payload-bytes gives each audit an output of about
//   that many bytes on average (33 to twice that), inline in its row as real outputs are: the
//   view reads no payload, but a read of the audits' rows fetches them with the rest.
//   --failed-every n: one ended audit in n FAILED (0: none, as in a healthy fleet, where the view's
//   list of recent failures finds none to stop at).
//   Each step also reads the floor, alternating: the least
//   work exact buckets need, every ended audit of the window read once through the same index
//   (a count and a maximum, no grouping), and the view's ratio to it. On PostgreSQL on this host,
//   each read's server CPU too (the scratch database's backends' run time, /proc/<pid>/schedstat):
//   on a shared machine the wall times swing with the load, the CPU a read takes much less.
// write: inserting tool audits RUNNING and ending them, as the lifecycle statements do, with what
//   the view needs (the index of running audits, the triggers that copy each end into
//   tool_audit_end) and without it (dropped), back to back.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Database } from '../src/db/database.js';
import { migrate, onlineStatements } from '../src/db/migrate.js';
import { MAX_ACTIVITY_LIST, TOOL_ACTIVITY_STATEMENT, bucketCount, readOwnerToolActivity } from '../src/domain/tool-activity.js';
import { openScratchDatabase } from './lib/scratch.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: {
    audits: { type: 'string', default: '1000000' },
    reads: { type: 'string', default: '50' },
    baseline: { type: 'string' },
    steps: { type: 'string', default: '3' },
    'skip-writes': { type: 'boolean', default: false },
    'payload-bytes': { type: 'string', default: '0' },
    'failed-every': { type: 'string', default: '20' },
  },
});
type ReadView = typeof readOwnerToolActivity;
const baseline: ReadView | undefined = flags.baseline
  ? ((await import(new URL(`../${flags.baseline}`, import.meta.url).href)) as { readOwnerToolActivity: ReadView }).readOwnerToolActivity
  : undefined;
const audits = Number(flags.audits);
const reads = Number(flags.reads);
const adminUrl = process.env.DATABASE_URL;
/** An output's length in md5 words of 33 characters: 1 to twice the mean. */
const payloadWords = Math.round((2 * Number(flags['payload-bytes'])) / 33);
const failedEvery = Number(flags['failed-every']);


/**
 * `count` tool audits of `owner`, on threads of 1,000, ended `fromSeconds` to `toSeconds` ago
 * (spread evenly); one in `failedEvery` FAILED, one in a hundred still RUNNING when `running`.
 */
async function seed(db: Database, owner: string, count: number, fromSeconds: number, toSeconds: number, running = false) {
  const batch = 50_000;
  for (let offset = 0; offset < count; offset += batch) {
    const n = Math.min(batch, count - offset);
    await db.sql.query(
      `WITH threads AS (
         INSERT INTO thread (id, owner_id) SELECT gen_random_uuid(), $1 FROM generate_series(1, greatest(1, $2::int / 1000)) RETURNING id),
       runs AS (
         INSERT INTO run (id, thread_id, status) SELECT gen_random_uuid(), id, 'COMPLETED' FROM threads RETURNING id, thread_id),
       numbered AS (SELECT id, thread_id, row_number() OVER () - 1 AS k, count(*) OVER () AS c FROM runs)
       INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at, output)
       SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'op' || i, 'tool' || (i % 20),
         (CASE WHEN $5::boolean AND i % 100 = 0 THEN 'RUNNING' WHEN $9::int > 0 AND i % greatest($9::int, 1) = 0 THEN 'FAILED' ELSE 'COMPLETED' END)::"AuditStatus",
         (i * 7919) % 5000, t - interval '2 seconds', t,
         CASE WHEN $8::int > 0 THEN jsonb_build_object('content', repeat(md5(i::text) || ' ', 1 + (i * 37) % $8::int)) END
       FROM generate_series(0, $2::int - 1) AS i
       JOIN numbered r ON r.k = i % r.c
       CROSS JOIN LATERAL (SELECT now() - make_interval(secs => $3::float8 + ($4::float8 - $3::float8) * (i + $6::int)::float8 / $7::int)) AS at(t)`,
      [owner, n, fromSeconds, toSeconds, running, offset, count, payloadWords, failedEvery],
    );
  }
  await db.sql.query('ANALYZE');
}

/**
 * The CPU the scratch database's backends have run, in ms, or null where it cannot be read (PGlite
 * runs in this process; a PostgreSQL elsewhere). The backends are listed once per step: the pool
 * keeps its connections between sequential reads.
 */
async function serverCpu(db: Database): Promise<() => number | null> {
  if (!adminUrl) return () => null;
  const backends = await db.sql.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  const runTime = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  try {
    backends.forEach(({ pid }) => runTime(pid));
  } catch {
    return () => null;
  }
  return () => backends.reduce((total, { pid }) => total + runTime(pid), 0);
}

/** The read times of the view, of the baseline when given and of the floor, alternating read by read; their server CPU where it can be read. */
async function measureView(db: Database, owner: string) {
  const times: number[] = [];
  const baseTimes: number[] = [];
  const floorTimes: number[] = [];
  const cpu = { view: [] as number[], base: [] as number[], floor: [] as number[] };
  let windowed = 0;
  // The ends where the view reads them: tool_audit_end, or `message` in a tree from before it.
  const [{ ends }] = await db.sql.query<{ ends: string }>(
    `SELECT CASE WHEN to_regclass('tool_audit_end') IS NULL THEN 'message WHERE message_type = ''tool_audit'' AND' ELSE 'tool_audit_end WHERE' END AS ends`,
  ) as [{ ends: string }];
  const floor = async () => {
    const [counted] = await db.sql.query<{ ended: number }>(
      `SELECT count(*)::int AS ended, max(duration_ms) FROM ${ends} owner_id = $1 AND status <> 'RUNNING' AND changed_at >= now() - interval '1 hour'`,
      [owner],
    );
    windowed = counted!.ended;
  };
  const view = (read: ReadView) => () => read(db.sql, owner, { windowSeconds: 3600, name: null });
  let cpuNow: () => number | null = () => null;
  const timed = async (read: () => Promise<unknown>, into: number[], cpuInto: number[]) => {
    const cpuBefore = cpuNow();
    const began = performance.now();
    await read();
    into.push(performance.now() - began);
    const cpuAfter = cpuNow();
    if (cpuBefore !== null && cpuAfter !== null) cpuInto.push(cpuAfter - cpuBefore);
  };
  for (let i = 0; i < reads; i++) {
    // After the first round the pool holds the connections the reads use.
    if (i === 1) cpuNow = await serverCpu(db);
    await timed(view(readOwnerToolActivity), times, cpu.view);
    if (baseline) await timed(view(baseline), baseTimes, cpu.base);
    await timed(floor, floorTimes, cpu.floor);
  }
  if (process.env.EXPLAIN) {
    // The plan of the last read: which indexes it used and how many rows it touched.
    const plan = await db.sql.query<{ queryPlan: string }>(`EXPLAIN (ANALYZE, BUFFERS) ${TOOL_ACTIVITY_STATEMENT}`, [owner, 3600, null, bucketCount(3600), MAX_ACTIVITY_LIST]);
    console.log(plan.map((row) => Object.values(row)[0]).join('\n'));
  }
  const warm = (values: number[]) => summarize(values.slice(Math.min(5, reads - 1)));
  const cpuP50 = (values: number[]) => (values.length ? summarize(values.slice(Math.min(4, values.length - 1))).p50 : NaN);
  // The window's ended audits at the last read: the seeded ones leave the window as the run goes on.
  return {
    view: warm(times), floor: warm(floorTimes), windowed, baseline: baseline ? warm(baseTimes) : undefined,
    cpu: { view: cpuP50(cpu.view), floor: cpuP50(cpu.floor), baseline: cpuP50(cpu.base) },
  };
}

/** Inserts `n` RUNNING tool audits one statement each, then ends each: the rows' writes as the lifecycle does them. */
async function measureWrites(db: Database, owner: string, n: number) {
  const [thread] = await db.sql.query<{ id: string }>(`INSERT INTO thread (id, owner_id) VALUES (gen_random_uuid(), $1) RETURNING id`, [owner]);
  const [run] = await db.sql.query<{ id: string }>(`INSERT INTO run (id, thread_id, status) VALUES (gen_random_uuid(), $1, 'RUNNING') RETURNING id`, [thread!.id]);
  const began = performance.now();
  for (let i = 0; i < n; i++) {
    const [row] = await db.sql.query<{ id: string }>(
      `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, changed_at)
       VALUES (gen_random_uuid(), $1, $2, 'TOOL', 'tool_audit', $3, 'write', 'RUNNING', clock_timestamp()) RETURNING id`,
      [thread!.id, run!.id, `w${i}-${randomBytes(3).toString('hex')}`],
    );
    await db.sql.query(`UPDATE message SET status = 'COMPLETED', duration_ms = 5, changed_at = clock_timestamp() WHERE id = $1`, [row!.id]);
  }
  return (n * 2) / ((performance.now() - began) / 1000);
}

const loadAtStart = (await import('node:os')).loadavg().map((value) => value.toFixed(1)).join(' ');
const { db, drop } = await openScratchDatabase('bench_activity', { statementTimeoutMs: 600_000 });
try {
  await migrate(db.driver);
  console.log(`${adminUrl ? 'PostgreSQL' : 'PGlite'}: ${audits} tool audits${payloadWords ? `, outputs of ~${flags['payload-bytes']} bytes` : ''}, ${failedEvery ? `one in ${failedEvery} failed` : 'none failed'}, ${reads} reads per row`);
  const rows: (string | number | null)[][] = [];
  type Measured = Awaited<ReturnType<typeof measureView>>;
  const row = (label: string, { view, floor, windowed, baseline: before, cpu }: Measured, base?: Measured) => {
    rows.push([
      label, windowed, round(view.p50), round(view.p99), base ? round(view.p50 / base.view.p50) : 1, base ? round(view.p99 / base.view.p99) : 1,
      round(floor.p50), round(view.p50 / floor.p50),
      ...(before ? [round(before.p50), round(before.p99), round(view.p50 / before.p50)] : []),
      round(cpu.view, 1), round(cpu.floor, 1), ...(before ? [round(cpu.baseline, 1), round(cpu.view / cpu.baseline)] : []),
    ]);
    // Each step as it is measured: a run at the issue's scale takes a while.
    console.log(`${new Date().toISOString()} ${rows.at(-1)!.join(' | ')}`);
  };

  // The window's tenth ended within the hour (some still running); the rest within the week before.
  await seed(db, 'owner-a', audits / 10, 3500, 0, true);
  await seed(db, 'owner-a', audits - audits / 10, 7 * 86_400, 3700);
  const base = await measureView(db, 'owner-a');
  row(`${audits} audits, ${audits / 10} in the window`, base);
  if (Number(flags.steps) >= 2) {
    await seed(db, 'owner-a', audits * 4, 30 * 86_400, 7 * 86_400);
    row(`+ ${audits * 4} older than the window`, await measureView(db, 'owner-a'), base);
  }
  if (Number(flags.steps) >= 3) {
    await seed(db, 'owner-b', audits / 10, 3500, 0, true);
    await seed(db, 'owner-b', audits - audits / 10, 7 * 86_400, 3700);
    row(`+ another owner's ${audits}`, await measureView(db, 'owner-a'), base);
  }
  console.log(table(['view of owner-a', 'ended in the window', 'p50 ms', 'p99 ms', 'p50 ×', 'p99 ×', 'floor p50', 'p50 / floor', ...(baseline ? ['baseline p50', 'baseline p99', 'p50 / baseline'] : []),
    'server CPU ms', 'floor CPU', ...(baseline ? ['baseline CPU', 'CPU / baseline'] : [])], rows));
  const load = (await import('node:os')).loadavg().map((value) => value.toFixed(1)).join(' ');
  console.log(`load average at start ${loadAtStart}, at the end ${load}`);
  if (!flags['skip-writes']) {
    const writes = Math.max(200, Math.min(5000, audits / 20));
    const withView: number[] = [];
    const without: number[] = [];
    const drops = `DROP TRIGGER tool_audit_end_inserted ON message; DROP TRIGGER tool_audit_end_updated ON message; DROP INDEX message_owner_id_created_at_idx`;
    const statements = (migration: string) => onlineStatements(readFileSync(new URL(`../prisma/migrations/${migration}/migration.sql`, import.meta.url), 'utf8'));
    const creates = [
      ...statements('20261202110000_tool_activity').filter((statement) => statement.includes('"message_owner_id_created_at_idx"')),
      ...statements('20261207000000_tool_audit_ends').filter((statement) => /^CREATE OR REPLACE TRIGGER/.test(statement)),
    ].join(';\n');
    // Back to back, alternating, so neither side has the warmer cache.
    for (let round = 0; round < 3; round++) {
      withView.push(await measureWrites(db, 'owner-w', writes));
      await db.driver.exec(drops);
      without.push(await measureWrites(db, 'owner-w', writes));
      await db.driver.exec(creates);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[1]!;
    console.log(table(['write statements', 'per second (median of 3)', '×'], [
      ['without the trigger and indexes', round(median(without), 0), 1],
      ['with them', round(median(withView), 0), round(median(withView) / median(without))],
    ]));
  }
} finally {
  // Closed first: the scratch database is dropped after its connections are gone.
  await db.close();
  await drop();
}
