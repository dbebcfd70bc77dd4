// npx tsx bench/end-run.ts [--history 40000] [--runs 100] [--rounds 2]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards); PGlite without.
//
// What ending a run costs the database as the history of closed audits grows: audit_end_run as
// migration 20261203100000_lifecycle_functions defined it ("before") against the current one (the
// latest migration's, "after"), alternating round by round on the same database. `--history`
// audits are first written and closed through the lifecycle functions, as workers leave them;
// autovacuum is off for the message table, so the measure is the stretch between two vacuums, when
// every audit closed since the last one still has its dead RUNNING entry in the status index. Then
// each round ends `--runs` runs (each driven to its last step, one run a call, as a worker) with
// each variant: EXPLAIN (ANALYZE, BUFFERS) of the finishRun call gives its time and the buffers
// read, the function's own statements included.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { migrate } from '../src/db/migrate.js';
import { functionsStep, sqlEventOf } from './lib/lifecycle-calls.js';
import { runScript } from './lib/run-script.js';
import { openScratchDatabase } from './lib/scratch.js';
import type { Lease } from './lib/server-worker.js';
import { sqlOverDriver, type Sql } from './lib/sql.js';
import { round, summarize, table } from './lib/stats.js';
import { floorCreateRuns, installWriteFloor } from './lib/write-floor.js';

const { values: flags } = parseArgs({
  options: {
    history: { type: 'string', default: '40000' },
    runs: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '2' },
  },
});
const OWNER = 'bench-owner';
const WORKER = 'bench-worker';
const RUNS_A_CALL = 50;

const MIGRATIONS = new URL('../prisma/migrations/', import.meta.url);

/** The `CREATE OR REPLACE FUNCTION audit_end_run …` statement of a migration. */
function endRunFunction(migration: string): string {
  const text = readFileSync(new URL(`${migration}/migration.sql`, MIGRATIONS), 'utf8');
  const start = text.indexOf('CREATE OR REPLACE FUNCTION audit_end_run(');
  if (start < 0) return '';
  return text.slice(start, text.indexOf('END $$;', start) + 'END $$;'.length);
}

const latest = readdirSync(MIGRATIONS)
  .sort()
  .filter((name) => existsSync(new URL(`${name}/migration.sql`, MIGRATIONS)) && endRunFunction(name).length > 0)
  .at(-1)!;
const variants = { before: endRunFunction('20261203100000_lifecycle_functions'), after: endRunFunction(latest) };
const steps = runScript();
const finish = steps.at(-1)!;

/** `count` new runs in threads of up to RUNS_A_CALL, each driven through `upTo` steps of the script, a call a step. */
async function driveRuns(sql: Sql, count: number, upTo: number): Promise<{ runIds: string[]; leases: (Lease | null)[] }[]> {
  const groups = [];
  for (let first = 0; first < count; first += RUNS_A_CALL) {
    const runIds = await floorCreateRuns(sql, OWNER, Math.min(RUNS_A_CALL, count - first));
    let leases: (Lease | null)[] = runIds.map(() => null);
    for (const op of steps.slice(0, upTo)) leases = await functionsStep(sql, WORKER, runIds, leases, op);
    groups.push({ runIds, leases });
  }
  return groups;
}

const auditsPerRun = steps.filter((op) => op.op === 'recordModelStarted' || op.op === 'recordToolStarted').length;
const { db, drop } = await openScratchDatabase('audit_bench_endrun');
try {
  await migrate(db.driver, undefined, { log: () => {} });
  const sql = sqlOverDriver(db.driver);
  await installWriteFloor(sql);
  if (process.env.DATABASE_URL) await sql.query('ALTER TABLE message SET (autovacuum_enabled = off)');
  const loadAtStart = loadavg()[0]!.toFixed(1);
  await driveRuns(sql, Math.ceil(Number(flags.history) / auditsPerRun), steps.length);
  await sql.query('ANALYZE message');
  const rows: (string | number | null)[][] = [];
  for (let roundIndex = 1; roundIndex <= Number(flags.rounds); roundIndex++) {
    for (const [variant, statement] of Object.entries(variants)) {
      await sql.driver.exec(statement);
      const ms: number[] = [];
      const buffers: number[] = [];
      for (const { runIds, leases } of await driveRuns(sql, Number(flags.runs), steps.length - 1)) {
        for (const [index, runId] of runIds.entries()) {
          const event = sqlEventOf(runId, leases[index]!, finish);
          const [plan] = await sql.query<{ 'QUERY PLAN': [{ 'Execution Time': number; Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
            'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT audit_record_events($1, $2::jsonb)',
            [WORKER, JSON.stringify([event])],
          );
          const [explained] = plan!['QUERY PLAN'];
          ms.push(explained!['Execution Time']);
          buffers.push(explained!.Plan['Shared Hit Blocks'] + explained!.Plan['Shared Read Blocks']);
        }
      }
      const time = summarize(ms);
      rows.push([roundIndex, variant, round(time.p50, 3), round(time.mean, 3), round(time.p99, 3), round(summarize(buffers).mean, 1)]);
    }
  }
  const [{ audits }] = (await sql.query<{ audits: number }>("SELECT count(*)::int AS audits FROM message WHERE message_type IN ('model_audit', 'tool_audit')")) as [{ audits: number }];
  console.log(`audit_end_run, ${flags.runs} runs a variant a round, ${audits} audits at the end (${latest} against 20261203100000_lifecycle_functions); load ${loadAtStart} → ${loadavg()[0]!.toFixed(1)}`);
  console.log(table(['round', 'variant', 'finishRun p50 ms', 'mean ms', 'p99 ms', 'buffers'], rows));
} finally {
  await db.close();
  await drop();
}
