// DATABASE_URL=<admin URL> npx tsx bench/tool-call-counts.ts [--runs 300] [--rounds 6]
//   DATABASE_URL for PostgreSQL (a scratch database, dropped afterwards), else in-memory PGlite
//
// Issue 44: what the triggers that keep toolCallStats' counts (migration tool_call_counts) add
// to the statements the write path sends to tool_call: per run, one INSERT declaring nine calls,
// then for each call an UPDATE to RUNNING and one to COMPLETED (one statement each, as the
// projection mirrors its audit). Rounds alternate with the triggers enabled and disabled on the
// same database; each round writes `runs` runs into one thread. Ratio: enabled / disabled, per round pair.
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { migrate } from '../src/db/migrate.js';
import { openScratchDatabase } from './lib/scratch.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { runs: { type: 'string' }, rounds: { type: 'string' } } });
const runs = Number(flags.runs ?? 300);
const rounds = Number(flags.rounds ?? 6);
const TOOLS = 9;

const { db, drop } = await openScratchDatabase('audit_counts');
console.log(`${new Date().toISOString()} · ${db.kind} · load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
try {
  await migrate(db.driver, undefined, { log: () => {} });
  const threadId = randomUUID();
  await db.driver.query(`INSERT INTO thread (id, owner_id) VALUES ($1, 'bench')`, [threadId]);

  /** The time of the statements before each run's tool calls, left out of the figures. */
  let excluded = 0;
  /** The milliseconds of writing `runs` runs. */
  async function writeRuns(): Promise<number> {
    const started = performance.now();
    for (let r = 0; r < runs; r++) {
      const runStarted = performance.now();
      const runId = randomUUID();
      const modelId = randomUUID();
      await db.driver.query(`INSERT INTO run (id, thread_id, status, lease_epoch) VALUES ($1, $2, 'RUNNING', 1)`, [runId, threadId]);
      await db.driver.query(
        `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status)
         VALUES ($1, $2, $3, 'ASSISTANT', 'model_audit', 'model', 'planner', 0, 'COMPLETED')`,
        [modelId, threadId, runId],
      );
      const timed = performance.now();
      const ids = await db.driver.query<{ id: string }>(
        `INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input)
         SELECT gen_random_uuid(), $1, $2, $3, k, 'call-' || k, 'tool-' || (k % 4), '{}'::jsonb FROM generate_series(0, ${TOOLS - 1}) k
         RETURNING id`,
        [threadId, runId, modelId],
      );
      for (const status of ['RUNNING', 'COMPLETED']) {
        for (const { id } of ids) await db.driver.query(`UPDATE tool_call SET status = $2::"ToolCallStatus" WHERE id = $1`, [id, status]);
      }
      excluded += timed - runStarted;
    }
    return performance.now() - started;
  }
  const rows: (string | number | null)[][] = [];
  const ratios: number[] = [];
  for (let round_ = 0; round_ < rounds; round_++) {
    const perRun: Record<string, number> = {};
    for (const enabled of round_ % 2 === 0 ? [true, false] : [false, true]) {
      await db.driver.query(`ALTER TABLE tool_call ${enabled ? 'ENABLE' : 'DISABLE'} TRIGGER USER`);
      excluded = 0;
      const total = await writeRuns();
      perRun[enabled ? 'on' : 'off'] = (total - excluded) / runs;
    }
    ratios.push(perRun.on! / perRun.off!);
    rows.push([round_ + 1, round(perRun.off!), round(perRun.on!), round(perRun.on! / perRun.off!)]);
  }
  await db.driver.query(`ALTER TABLE tool_call ENABLE TRIGGER USER`);
  console.log(`${runs} runs of ${TOOLS} calls a round: ms per run of the tool_call statements (1 INSERT, ${2 * TOOLS} UPDATEs)`);
  console.log(table(['round', 'triggers off', 'triggers on', 'on / off'], rows));
  console.log(`median ratio ${round(summarize(ratios).p50)}`);
} finally {
  await db.close();
  await drop();
}
