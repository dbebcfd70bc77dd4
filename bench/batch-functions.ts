// npx tsx bench/batch-functions.ts [--threads 32] [--runs 10] [--rounds 3]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards); PGlite without.
//
// The lifecycle functions' own cost per batch (issue 45), with nothing else running: one
// connection, no server, no concurrency. Each round drives T threads of R runs through the
// standard run (claim … finishRun), one step at a time: for each thread, one audit_record_events
// call of its R runs' events (as a worker's batch of R runs at once), then the batch floor's
// transaction of the same step for R floor runs of the same thread (lib/write-floor.ts).
// Prints the milliseconds of database time per batch, by step, and their ratio.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/domain/ids.js';
import { stepRequest, type Lease } from './lib/server-worker.js';
import { runScript, type Step } from './lib/run-script.js';
import { openScratchDatabase } from './lib/scratch.js';
import { sqlOverDriver } from './lib/sql.js';
import { round, table } from './lib/stats.js';
import { floorCreateRun, floorCreateThread, floorStep, installWriteFloor } from './lib/write-floor.js';

const { values: flags } = parseArgs({
  options: { threads: { type: 'string', default: '32' }, runs: { type: 'string', default: '10' }, rounds: { type: 'string', default: '3' } },
});
const threads = Number(flags.threads);
const runsAtOnce = Number(flags.runs);
const rounds = Number(flags.rounds);
const OWNER = 'bench-owner';
const WORKER = 'bench-worker';

/** A step as the domain sends it to audit_record_events (lifecycle-events.ts SqlEvent). */
function sqlEventOf(runId: string, lease: Lease | null, step: Step): Record<string, unknown> {
  if (step.op === 'claimRun') return { kind: 'claimRun', runId, leaseSeconds: step.leaseSeconds, claimId: null };
  const { lease: _lease, ...fields } = stepRequest(runId, lease, step).variables.input as Record<string, unknown>;
  const fenced = { runId, epoch: lease!.epoch };
  switch (step.op) {
    case 'recordModelStarted':
      return { kind: 'modelStarted', ...fenced, ...fields, rowId: newId() };
    case 'recordModelFinished':
      return { kind: 'modelFinished', ...fenced, ...fields, toolCalls: step.toolCalls.map((call) => ({ rowId: newId(), ...call })) };
    case 'recordToolStarted':
      return { kind: 'toolStarted', ...fenced, ...fields, rowId: newId() };
    case 'recordToolFinished':
      return { kind: 'toolFinished', ...fenced, ...fields };
    case 'finishRun':
      return { kind: 'finishRun', ...fenced, status: step.status, error: null, stateMessages: [] };
  }
}

const { db, drop } = await openScratchDatabase('audit_bench_batchfn');
try {
  await migrate(db.driver, undefined, { log: () => {} });
  const sql = sqlOverDriver(db.driver);
  await installWriteFloor(sql);
  const steps = runScript();
  const fnMs = steps.map(() => 0);
  const floorMs = steps.map(() => 0);
  const load = loadavg()[0]!.toFixed(1);
  for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
    for (let thread = 0; thread < threads; thread++) {
      const threadId = await floorCreateThread(sql, OWNER);
      const fnRuns: string[] = [];
      const floorRuns: string[] = [];
      for (let run = 0; run < runsAtOnce; run++) {
        fnRuns.push(await floorCreateRun(sql, OWNER, threadId));
        floorRuns.push(await floorCreateRun(sql, OWNER, threadId));
      }
      let fnLeases: (Lease | null)[] = fnRuns.map(() => null);
      let floorLeases: (Lease | null)[] = floorRuns.map(() => null);
      for (const [index, step] of steps.entries()) {
        const events = fnRuns.map((runId, run) => sqlEventOf(runId, fnLeases[run]!, step));
        let began = performance.now();
        const rows = await sql.query<{ result: { ok?: { run?: { id: string; lease_epoch: number } }; refused?: unknown } }>(
          'SELECT result FROM audit_record_events($1, $2::jsonb) AS result',
          [WORKER, JSON.stringify(events)],
        );
        fnMs[index]! += performance.now() - began;
        const refused = rows.find((row) => row.result.refused);
        if (refused) throw new Error(`${step.op} refused: ${JSON.stringify(refused.result.refused)}`);
        if (step.op === 'claimRun') fnLeases = rows.map((row, run) => ({ runId: fnRuns[run]!, epoch: Number(row.result.ok!.run!.lease_epoch) }));
        began = performance.now();
        floorLeases = await sql.transaction(async (tx) => {
          const next: (Lease | null)[] = [];
          for (const [run, runId] of floorRuns.entries()) next.push(await floorStep(tx, WORKER, runId, floorLeases[run]!, step));
          return next;
        });
        floorMs[index]! += performance.now() - began;
      }
    }
  }
  const batches = rounds * threads;
  console.log(`${batches} batches of ${runsAtOnce} events a step, load ${load} → ${loadavg()[0]!.toFixed(1)}`);
  const total = (list: number[]) => list.reduce((sum, value) => sum + value, 0);
  console.log(
    table(
      ['step', 'functions ms/batch', 'batch floor ms/batch', 'ratio'],
      [
        ...steps.map((step, index) => [step.op, round(fnMs[index]! / batches, 2), round(floorMs[index]! / batches, 2), round(fnMs[index]! / floorMs[index]!, 2)]),
        ['whole run', round(total(fnMs) / batches, 2), round(total(floorMs) / batches, 2), round(total(fnMs) / total(floorMs), 2)],
      ],
    ),
  );
} finally {
  await db.close();
  await drop();
}
