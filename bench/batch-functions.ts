// npx tsx bench/batch-functions.ts [--threads 32] [--runs 10] [--rounds 3] [--concurrency 1] [--patch <file.sql>]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards); PGlite without.
//   With a PostgreSQL URL ending in `?options=-c%20synchronous_commit%3Doff` the commits' flush
//   is left out of both sides (the same one commit a batch on each).
//
// The lifecycle functions' own cost per batch (issue 45), without the server: T threads of R runs
// each driven through the standard run (claim … finishRun); each step of a thread's runs is one
// audit_record_events call of R events (a worker's batch of R runs at once), against the batch
// floor's transaction of the same step for R floor runs (lib/write-floor.ts), on the same pool of
// 10 connections. --concurrency 1 (the default): one thread after another, the function's call and
// the floor's transaction alternating step by step; prints the milliseconds per batch by step.
// --concurrency N: each round drives the T threads N at a time through the functions, then
// through the floor; prints events a second of each. --patch runs a SQL file after the migrations
// (an experiment: a function replaced, to time the functions with one of their parts taken out).
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { migrate } from '../src/db/migrate.js';
import { functionsStep } from './lib/lifecycle-calls.js';
import type { Lease } from './lib/server-worker.js';
import { runScript, type Step } from './lib/run-script.js';
import { openScratchDatabase } from './lib/scratch.js';
import { sqlOverDriver, type Sql } from './lib/sql.js';
import { round, table } from './lib/stats.js';
import { floorCreateRuns, floorStep, installWriteFloor } from './lib/write-floor.js';

const { values: flags } = parseArgs({
  options: {
    threads: { type: 'string', default: '32' },
    runs: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '1' },
    patch: { type: 'string' },
  },
});
const threads = Number(flags.threads);
const runsAtOnce = Number(flags.runs);
const rounds = Number(flags.rounds);
const concurrency = Number(flags.concurrency);
const OWNER = 'bench-owner';
const WORKER = 'bench-worker';

type Target = 'functions' | 'floor';

/** Drives `runIds` (runs of one thread) through one step as one batch; returns the new leases. */
async function step(sql: Sql, target: Target, runIds: string[], leases: (Lease | null)[], op: Step): Promise<(Lease | null)[]> {
  if (target === 'floor') {
    return sql.transaction(async (tx) => {
      const next: (Lease | null)[] = [];
      for (const [run, runId] of runIds.entries()) next.push(await floorStep(tx, WORKER, runId, leases[run]!, op));
      return next;
    });
  }
  return functionsStep(sql, WORKER, runIds, leases, op);
}

/** A thread of `runsAtOnce` new runs. */
const createRuns = (sql: Sql) => floorCreateRuns(sql, OWNER, runsAtOnce);

const { db, drop } = await openScratchDatabase('audit_bench_batchfn');
try {
  await migrate(db.driver, undefined, { log: () => {} });
  const sql = sqlOverDriver(db.driver);
  await installWriteFloor(sql);
  if (flags.patch) await sql.driver.exec(readFileSync(flags.patch, 'utf8'));
  const steps = runScript();
  const load = loadavg()[0]!.toFixed(1);
  if (concurrency === 1) {
    const ms: Record<Target, number[]> = { functions: steps.map(() => 0), floor: steps.map(() => 0) };
    for (let index = 0; index < rounds * threads; index++) {
      const runs = { functions: await createRuns(sql), floor: await createRuns(sql) };
      const leases: Record<Target, (Lease | null)[]> = { functions: runs.functions.map(() => null), floor: runs.floor.map(() => null) };
      for (const [position, op] of steps.entries()) {
        for (const target of ['functions', 'floor'] as const) {
          const began = performance.now();
          leases[target] = await step(sql, target, runs[target], leases[target], op);
          ms[target][position]! += performance.now() - began;
        }
      }
    }
    const batches = rounds * threads;
    const total = (list: number[]) => list.reduce((sum, value) => sum + value, 0);
    console.log(`${batches} batches of ${runsAtOnce} events a step, one at a time; load ${load} → ${loadavg()[0]!.toFixed(1)}`);
    console.log(
      table(
        ['step', 'functions ms/batch', 'batch floor ms/batch', 'ratio'],
        [
          ...steps.map((op, index) => [op.op, round(ms.functions[index]! / batches), round(ms.floor[index]! / batches), round(ms.functions[index]! / ms.floor[index]!)]),
          ['whole run', round(total(ms.functions) / batches), round(total(ms.floor) / batches), round(total(ms.functions) / total(ms.floor))],
        ],
      ),
    );
  } else {
    const rows: (string | number | null)[][] = [];
    for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
      const perSecond: Record<Target, number> = { functions: 0, floor: 0 };
      for (const target of ['functions', 'floor'] as const) {
        const threadRuns: string[][] = [];
        for (let thread = 0; thread < threads; thread++) threadRuns.push(await createRuns(sql));
        let next = 0;
        const began = performance.now();
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (next < threadRuns.length) {
              const runIds = threadRuns[next++]!;
              let leases: (Lease | null)[] = runIds.map(() => null);
              for (const op of steps) leases = await step(sql, target, runIds, leases, op);
            }
          }),
        );
        perSecond[target] = (threads * runsAtOnce * steps.length) / ((performance.now() - began) / 1000);
      }
      rows.push([roundIndex + 1, Math.round(perSecond.functions), Math.round(perSecond.floor), round(perSecond.functions / perSecond.floor)]);
    }
    console.log(`${threads} threads of ${runsAtOnce} runs, ${concurrency} at a time; load ${load} → ${loadavg()[0]!.toFixed(1)}`);
    console.log(table(['round', 'functions events/s', 'batch floor events/s', 'ratio'], rows));
  }
} finally {
  await db.close();
  await drop();
}
