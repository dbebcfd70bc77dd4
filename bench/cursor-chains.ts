// DATABASE_URL=<admin URL> npx tsx bench/cursor-chains.ts [--batches 5] [--rounds 2] [--singles 2000]
//   PostgreSQL only: two scratch databases, dropped afterwards.
//
// Batches into one thread while an old snapshot is open (migration 20261212000000): N batches of
// 500 events into one thread (one run: model calls started and finished), each sent as the domain
// sends it (lifecycle-events.ts: one audit_record_events call per EVENTS_PER_CALL events, each
// its own transaction), without and with a REPEATABLE READ transaction held open meanwhile by
// another connection of the same database (a pg_dump, a long report). The code before (the
// functions as migrations 20261203170000 and 20261210000000 left them: the thread row updated
// once per change) runs in a second database; the two alternate, round by round, each on a new
// thread. Prints the milliseconds per batch. Then --singles calls of one event each (the unbatched
// write path: a lifecycle mutation's own call), alternating between the two databases in blocks of
// 100, no snapshot held: microseconds per call.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/domain/ids.js';
import { EVENTS_PER_CALL } from '../src/domain/lifecycle-events.js';
import { sqlEventOf } from './lib/lifecycle-calls.js';
import type { Step } from './lib/run-script.js';
import { openScratchDatabase } from './lib/scratch.js';
import { sqlOverDriver, type Sql } from './lib/sql.js';
import { round, summarize, table } from './lib/stats.js';
import { floorCreateRuns, installWriteFloor } from './lib/write-floor.js';

const { values: flags } = parseArgs({
  options: {
    batches: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    singles: { type: 'string', default: '2000' },
  },
});
const batches = Number(flags.batches);
const rounds = Number(flags.rounds);
const singles = Number(flags.singles);
const BATCH_EVENTS = 500;
const OWNER = 'bench-owner';
const WORKER = 'bench-worker';
if (!process.env.DATABASE_URL) throw new Error('cursor-chains measures PostgreSQL: set DATABASE_URL to an admin URL');

/** A function as an earlier migration defined it: the code before, from the migrations themselves. */
function definitionIn(migration: string, name: string): string {
  const text = readFileSync(new URL(`../prisma/migrations/${migration}/migration.sql`, import.meta.url), 'utf8');
  const start = text.indexOf(`CREATE OR REPLACE FUNCTION ${name}(`);
  if (start < 0) throw new Error(`${name} is not defined in ${migration}`);
  return text.slice(start, text.indexOf('END $$;', start) + 'END $$;'.length);
}
const BEFORE = [
  definitionIn('20261203170000_lifecycle_cached_plans', 'audit_next_change'),
  definitionIn('20261210000000_lease_lost_run_status', 'audit_record_events_of'),
].join('\n');

type Code = 'before' | 'after';

interface Side {
  sql: Sql;
  url: string;
  drop: () => Promise<void>;
}

async function openSide(code: Code): Promise<Side> {
  const { db, drop } = await openScratchDatabase(`audit_bench_chains_${code}`);
  await migrate(db.driver, undefined, { log: () => {} });
  const sql = sqlOverDriver(db.driver);
  await installWriteFloor(sql);
  if (code === 'before') await sql.driver.exec(BEFORE);
  const [{ name }] = (await sql.query('SELECT current_database() AS name')) as [{ name: string }];
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return { sql, url: url.toString(), drop };
}

/** A claimed run in a new thread, and the events of its model calls, as the domain sends them. */
async function claimedRun(sql: Sql) {
  const [runId] = await floorCreateRuns(sql, OWNER, 1);
  const [claimed] = await sql.query<{ result: { ok: { run: { lease_epoch: number } } } }>('SELECT audit_record_events($1, $2::jsonb) AS result', [
    WORKER,
    JSON.stringify([sqlEventOf(runId!, null, { op: 'claimRun', leaseSeconds: 3600 })]),
  ]);
  const lease = { runId: runId!, epoch: Number(claimed!.result.ok.run.lease_epoch) };
  let sequence = 0n;
  const modelCall = (): Step[] => {
    const operationId = newId();
    return [
      { op: 'recordModelStarted', operationId, model: 'bench-model', input: { prompt: operationId }, sequence: ++sequence, clockMs: Number(sequence) },
      { op: 'recordModelFinished', operationId, output: { text: 'ok' }, usage: null, toolCalls: [], sequence: ++sequence, clockMs: Number(sequence) },
    ];
  };
  return { events: (count: number) => Array.from({ length: count / 2 }, modelCall).flat().map((step) => sqlEventOf(lease.runId, lease, step)) };
}

/** Sends `events` as the domain does, a call per EVENTS_PER_CALL; every one must apply. */
async function send(sql: Sql, events: Record<string, unknown>[]): Promise<void> {
  for (let first = 0; first < events.length; first += EVENTS_PER_CALL) {
    const rows = await sql.query<{ result: { refused?: unknown } }>('SELECT audit_record_events($1, $2::jsonb) AS result', [
      WORKER,
      JSON.stringify(events.slice(first, first + EVENTS_PER_CALL)),
    ]);
    const refused = rows.find((row) => row.result.refused);
    if (refused) throw new Error(`refused: ${JSON.stringify(refused.result.refused)}`);
  }
}

/** N batches into one new thread, with an old snapshot open on another connection or not: ms each. */
async function batchesIntoOneThread(side: Side, oldSnapshot: boolean): Promise<number[]> {
  const run = await claimedRun(side.sql);
  const holder = oldSnapshot ? new pg.Client({ connectionString: side.url }) : undefined;
  if (holder) {
    await holder.connect();
    await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await holder.query('SELECT count(*) FROM thread'); // the snapshot is taken by the first statement
  }
  try {
    const ms: number[] = [];
    for (let batch = 0; batch < batches; batch++) {
      const events = run.events(BATCH_EVENTS);
      const began = performance.now();
      await send(side.sql, events);
      ms.push(performance.now() - began);
    }
    return ms;
  } finally {
    await holder?.query('COMMIT');
    await holder?.end();
  }
}

const sides = { before: await openSide('before'), after: await openSide('after') };
try {
  const conditions = ['no snapshot', 'old snapshot'] as const;
  const ms = Object.fromEntries(
    (['before', 'after'] as const).flatMap((code) => conditions.map((condition) => [`${code}, ${condition}`, Array.from({ length: batches }, () => 0)])),
  ) as Record<string, number[]>;
  for (let index = 0; index < rounds; index++) {
    const order: Code[] = index % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    for (const condition of conditions) {
      for (const code of order) {
        const times = await batchesIntoOneThread(sides[code], condition === 'old snapshot');
        times.forEach((time, batch) => (ms[`${code}, ${condition}`]![batch]! += time / rounds));
        console.error(`round ${index + 1}, ${code}, ${condition}: ${times.map((time) => Math.round(time)).join(', ')} ms`);
      }
    }
  }
  const columns = Object.keys(ms);
  const rows = Array.from({ length: batches }, (_, batch) => [
    `batch ${batch + 1}`,
    ...columns.map((column) => Math.round(ms[column]![batch]!)),
    round(ms['after, old snapshot']![batch]! / ms['before, old snapshot']![batch]!),
  ]);
  console.log(`${BATCH_EVENTS} events a batch into one thread, ms (mean of ${rounds} rounds)`);
  console.log(table(['', ...columns, 'after/before, old snapshot'], rows));

  if (singles > 0) {
    const perCall: Record<Code, number[]> = { before: [], after: [] };
    const runs = { before: await claimedRun(sides.before.sql), after: await claimedRun(sides.after.sql) };
    for (let block = 0; block < singles / 100; block++) {
      for (const code of block % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
        for (const event of runs[code].events(100)) {
          const began = performance.now();
          await send(sides[code].sql, [event]);
          perCall[code].push((performance.now() - began) * 1000);
        }
      }
    }
    const before = summarize(perCall.before);
    const after = summarize(perCall.after);
    console.log(`\nsingle-event calls (${singles} each, alternating in blocks of 100), µs per call`);
    console.log(
      table(
        ['', 'mean', 'p50', 'p99'],
        [
          ['before', round(before.mean, 0), round(before.p50, 0), round(before.p99, 0)],
          ['after', round(after.mean, 0), round(after.p50, 0), round(after.p99, 0)],
          ['after/before', round(after.mean / before.mean), round(after.p50 / before.p50), round(after.p99 / before.p99)],
        ],
      ),
    );
  }
} finally {
  for (const side of Object.values(sides)) {
    await side.sql.close();
    await side.drop();
  }
}
