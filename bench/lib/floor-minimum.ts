// The minimum-work floor of the write path (issue 18): per lifecycle event one statement, run in
// autocommit, so one transaction and one round trip. It locks the run row, checks the lease, writes
// the audit row (and the ToolCall row where the rule needs it) and, with `cursor`, bumps the thread's
// change cursor and stamps the changed rows with it. When the lease does not hold, nothing is
// written and a second read (the error path only) decides which error it is.
//
// It returns what the worker's client selects of the written audit (packages/client/src/operations.ts),
// nothing more. Compare with lib/floor-write.ts, which repeats the server's own statements.
import { clockReading, type ClockReading, type Step } from './run-script.js';
import type { Sql } from './sql.js';
import type { FloorLease } from './floor-write.js';
import { newId } from '../../src/domain/ids.js';

/**
 * Where the change cursor lives (issue 20's migration 20261130190000_change_cursors: a per-thread
 * counter bumped under the thread row's lock, and on each changed row the cursor and commit time
 * of its latest change, indexed by (thread, cursor)).
 */
export const CURSOR_SCHEMA = {
  counter: { table: 'thread', column: 'change_cursor' },
  rows: [
    { table: 'run', column: 'change_cursor', changedAt: 'changed_at' },
    { table: 'message', column: 'change_cursor', changedAt: 'changed_at' },
  ],
} as const;

export type CursorSource = 'schema' | 'added by the bench';

/**
 * The cursor columns: the migrated schema's when it has them, else added to this scratch database
 * (with the index the catch-up read needs) so the floor can measure their cost before the server
 * has them. Returns which of the two it is.
 */
export async function ensureCursorColumns(sql: Sql): Promise<CursorSource> {
  const { table, column } = CURSOR_SCHEMA.counter;
  const found = await sql.query(`SELECT 1 FROM information_schema.columns WHERE table_name = $1 AND column_name = $2`, [table, column]);
  if (found.length) return 'schema';
  await sql.query(`ALTER TABLE ${table} ADD COLUMN ${column} BIGINT NOT NULL DEFAULT 0`);
  for (const row of CURSOR_SCHEMA.rows) {
    await sql.query(`ALTER TABLE ${row.table} ADD COLUMN ${row.column} BIGINT, ADD COLUMN ${row.changedAt} TIMESTAMPTZ(3)`);
    await sql.query(`CREATE INDEX ${row.table}_thread_${row.column}_idx ON ${row.table} (thread_id, ${row.column})`);
  }
  return 'added by the bench';
}

const AUDIT_COLUMNS = `id, run_id, role, operation_id, sequence, finished_sequence, status, started_at, finished_at, duration_ms,
  name, input, output, error, usage, awaiting_run_terminal, tool_call_row_id`;

// The run row locked only when the lease holds: no row, nothing written.
const LEASED_RUN = `leased AS (
  SELECT id, thread_id FROM run
  WHERE id = $1::uuid AND status = 'RUNNING' AND lease_owner = $2 AND lease_epoch = $3 AND lease_expires_at > now()
  FOR UPDATE)`;

/** The thread's counter bumped by `changes` (a SQL expression) under the thread row's lock, after the run's. */
const bump = (changes = '1') =>
  `bumped AS (UPDATE thread SET change_cursor = change_cursor + ${changes} FROM leased WHERE thread.id = leased.thread_id
     RETURNING thread.change_cursor AS cursor)`;

/** The duration on the run's clock ($4 clock id, $5 nanos), in SQL (src/domain/observation.ts). */
const DURATION = (alias: string) =>
  `CASE WHEN ${alias}.start_clock_id = $4 AND ${alias}.start_clock_nanos IS NOT NULL
     THEN greatest(0, ($5::bigint - ${alias}.start_clock_nanos) / 1000000)::int END`;

/** The ToolCall mirror's columns from an audit row (src/domain/tool-call-projection.ts). */
const MIRROR = (audit: string) => `status = (CASE WHEN ${audit}.status = 'ABANDONED' THEN 'FAILED' ELSE ${audit}.status::text END)::"ToolCallStatus",
  effective_input = ${audit}.input,
  output = CASE WHEN ${audit}.output IS NULL THEN NULL ELSE to_jsonb(coalesce(${audit}.output ->> 'content', '')) END,
  error = ${audit}.error, started_at = ${audit}.started_at, finished_at = ${audit}.finished_at, duration_ms = ${audit}.duration_ms`;

/**
 * The statement of each lifecycle step, with and without the cursor. Parameters: $1 run id, $2 the
 * worker, $3 the lease epoch, $4/$5 the run's clock reading, then each step's own from $6.
 */
function statements(cursor: boolean) {
  const withCursor = (text: string) => (cursor ? text : '');
  return {
    createRun: cursor
      ? `WITH bumped AS (UPDATE thread SET change_cursor = change_cursor + 1 WHERE id = $2::uuid AND owner_id = $3 RETURNING id, change_cursor)
         INSERT INTO run (id, thread_id, change_cursor, changed_at) SELECT $1::uuid, id, change_cursor, clock_timestamp() FROM bumped RETURNING id`
      : `INSERT INTO run (id, thread_id) SELECT $1::uuid, id FROM thread WHERE id = $2::uuid AND owner_id = $3 RETURNING id`,
    claimRun: `WITH queued AS (SELECT id, thread_id FROM run WHERE id = $1::uuid AND status = 'QUEUED' FOR UPDATE)
      ${withCursor(`, bumped AS (UPDATE thread SET change_cursor = change_cursor + 1 FROM queued WHERE thread.id = queued.thread_id RETURNING thread.change_cursor AS cursor)`)}
      UPDATE run SET status = 'RUNNING', lease_owner = $2, lease_epoch = run.lease_epoch + 1,
        lease_expires_at = now() + make_interval(secs => $3), started_at = coalesce(run.started_at, now())
        ${withCursor(', change_cursor = bumped.cursor, changed_at = clock_timestamp()')}
      FROM queued${withCursor(', bumped')} WHERE run.id = queued.id
      RETURNING run.lease_epoch`,
    // $6 id, $7 operation id, $8 model, $9 input, $10 sequence, $11 observed at
    recordModelStarted: `WITH ${LEASED_RUN}${withCursor(`, ${bump()}`)}
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, sequence, started_at,
        start_clock_id, start_clock_nanos${withCursor(', change_cursor, changed_at')})
      SELECT $6::uuid, leased.thread_id, leased.id, 'ASSISTANT'::"MessageRole", 'model_audit'::"MessageType", $7::text, $8::text,
        'RUNNING'::"AuditStatus", $9::jsonb, $10::bigint, $11::timestamptz, $4::text, $5::bigint${withCursor(', bumped.cursor, clock_timestamp()')}
      FROM leased${withCursor(', bumped')}
      ON CONFLICT (run_id, role, operation_id) DO NOTHING
      RETURNING ${AUDIT_COLUMNS}`,
    // $6 operation id, $7 output, $8 usage, $9 finished sequence, $10 observed at, $11 the declared tool calls
    recordModelFinished: `WITH ${LEASED_RUN}${withCursor(`, ${bump()}`)},
      closed AS (
        UPDATE message m SET status = 'COMPLETED', output = $7::jsonb, error = NULL, usage = $8::jsonb, finished_at = $10::timestamptz,
          finished_sequence = $9::bigint, end_clock_id = $4, end_clock_nanos = $5::bigint, duration_ms = ${DURATION('m')}
          ${withCursor(', change_cursor = bumped.cursor, changed_at = clock_timestamp()')}
        FROM leased${withCursor(', bumped')}
        WHERE m.run_id = leased.id AND m.role = 'ASSISTANT' AND m.operation_id = $6 AND m.status = 'RUNNING'
        RETURNING m.*),
      declared AS (
        INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input)
        SELECT (call.value ->> 'rowId')::uuid, closed.thread_id, closed.run_id, closed.id, call.position - 1, call.value ->> 'id', call.value ->> 'name', call.value -> 'args'
        FROM closed, jsonb_array_elements($11::jsonb) WITH ORDINALITY AS call(value, position))
      SELECT ${AUDIT_COLUMNS} FROM closed`,
    // $6 id, $7 tool call id, $8 name, $9 effective input, $10 sequence, $11 observed at
    recordToolStarted: `WITH ${LEASED_RUN},
      declaration AS (
        SELECT tc.id FROM tool_call tc JOIN leased ON tc.run_id = leased.id JOIN message d ON d.id = tc.declared_by_id
        WHERE tc.tool_call_id = $7 AND tc.status = 'PENDING'
        ORDER BY d.sequence DESC, d.created_at DESC LIMIT 1
        FOR UPDATE OF tc)${withCursor(`, ${bump()}`)},
      started AS (
        INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id, sequence,
          started_at, start_clock_id, start_clock_nanos${withCursor(', change_cursor, changed_at')})
        SELECT $6::uuid, leased.thread_id, leased.id, 'TOOL'::"MessageRole", 'tool_audit'::"MessageType", $7::text, $8::text,
          'RUNNING'::"AuditStatus", $9::jsonb, declaration.id, $10::bigint, $11::timestamptz, $4::text, $5::bigint${withCursor(', bumped.cursor, clock_timestamp()')}
        FROM leased, declaration${withCursor(', bumped')}
        ON CONFLICT (run_id, role, operation_id) DO NOTHING
        RETURNING *),
      mirrored AS (UPDATE tool_call SET ${MIRROR('started')} FROM started WHERE tool_call.id = started.tool_call_row_id)
      SELECT ${AUDIT_COLUMNS} FROM started`,
    // $6 status, $7 tool call id, $8 output, $9 finished sequence, $10 observed at
    recordToolFinished: `WITH ${LEASED_RUN}${withCursor(`, ${bump()}`)},
      closed AS (
        UPDATE message m SET status = $6::"AuditStatus", output = $8::jsonb, awaiting_run_terminal = false, finished_at = $10::timestamptz,
          finished_sequence = $9::bigint, end_clock_id = $4, end_clock_nanos = $5::bigint, duration_ms = ${DURATION('m')}
          ${withCursor(', change_cursor = bumped.cursor, changed_at = clock_timestamp()')}
        FROM leased${withCursor(', bumped')}
        WHERE m.run_id = leased.id AND m.role = 'TOOL' AND m.operation_id = $7 AND m.status = 'RUNNING'
        RETURNING m.*),
      mirrored AS (UPDATE tool_call SET ${MIRROR('closed')} FROM closed WHERE tool_call.id = closed.tool_call_row_id)
      SELECT ${AUDIT_COLUMNS} FROM closed`,
    // $4 the run's final status, $5 the error of audits left open. Each change gets its own cursor:
    // the run's, then each closed audit's.
    finishRun: `WITH ${LEASED_RUN},
      open AS (
        SELECT m.id, row_number() OVER (ORDER BY m.sequence, m.id) AS position FROM message m JOIN leased ON m.run_id = leased.id
        WHERE m.status = 'RUNNING' AND m.message_type IN ('model_audit', 'tool_audit'))${withCursor(`, ${bump('1 + (SELECT count(*) FROM open)')}`)},
      ended AS (
        UPDATE run SET status = $4::"RunStatus", finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
          ${withCursor(', change_cursor = bumped.cursor - (SELECT count(*) FROM open), changed_at = clock_timestamp()')}
        FROM leased${withCursor(', bumped')} WHERE run.id = leased.id
        RETURNING run.id, run.status),
      abandoned AS (
        UPDATE message m SET status = 'ABANDONED', finished_at = coalesce(m.finished_at, now()), awaiting_run_terminal = false,
          error = coalesce(m.error, $5::jsonb)${withCursor(', change_cursor = bumped.cursor - (SELECT count(*) FROM open) + open.position, changed_at = clock_timestamp()')}
        FROM open${withCursor(', bumped')} WHERE m.id = open.id
        RETURNING m.*),
      mirrored AS (UPDATE tool_call SET ${MIRROR('abandoned')} FROM abandoned WHERE tool_call.id = abandoned.tool_call_row_id)
      SELECT id, status FROM ended`,
  };
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** Why a step wrote nothing: read only on the error path, as the domain would to name the error. */
async function refusal(sql: Sql, workerSub: string, lease: FloorLease): Promise<Error> {
  const [run] = await sql.query(
    `SELECT status::text AS status, lease_owner, lease_epoch, coalesce(lease_expires_at <= now(), false) AS expired FROM run WHERE id = $1::uuid`,
    [lease.runId],
  );
  if (!run) return new Error(`NOT_FOUND run ${lease.runId}`);
  if (run.status !== 'RUNNING' || run.lease_owner !== workerSub || run.lease_epoch !== lease.epoch) return new Error('LEASE_LOST');
  if (run.expired) return new Error('LEASE_EXPIRED');
  return new Error('INVALID_TRANSITION (or a replay: the audit exists)');
}

export interface MinimumFloor {
  createRun(ownerSub: string, threadId: string): Promise<string>;
  step(workerSub: string, runId: string, lease: FloorLease | null, step: Step): Promise<FloorLease | null>;
}

/** The minimum-work floor over `sql`, with or without the change cursor. */
export function minimumFloor(sql: Sql, options: { cursor: boolean }): MinimumFloor {
  const text = statements(options.cursor);
  const one = async (statement: string, params: unknown[]) => (await sql.query(statement, params))[0];
  return {
    async createRun(ownerSub, threadId) {
      const run = await one(text.createRun, [newId(), threadId, ownerSub]);
      if (!run) throw new Error('NOT_FOUND thread');
      return run.id as string;
    },
    async step(workerSub, runId, lease, step) {
      const observedAt = new Date();
      const clockId = `bench-clock-${runId}`;
      const leaseParams = (clock?: ClockReading) => [lease!.runId, workerSub, lease!.epoch, ...(clock ? [clock.clockId, clock.nanos] : [])];
      const written = async (statement: string, params: unknown[]) => {
        if (!(await one(statement, params))) throw await refusal(sql, workerSub, lease!);
      };
      switch (step.op) {
        case 'claimRun': {
          const claimed = await one(text.claimRun, [runId, workerSub, step.leaseSeconds]);
          if (!claimed) throw new Error('INVALID_TRANSITION claim');
          return { runId, epoch: claimed.lease_epoch as number };
        }
        case 'recordModelStarted': {
          const clock = clockReading(step.clockMs, clockId);
          await written(text.recordModelStarted, [
            ...leaseParams(clock), newId(), step.operationId, step.model, json(step.input), step.sequence, observedAt,
          ]);
          return lease;
        }
        case 'recordModelFinished': {
          const clock = clockReading(step.clockMs, clockId);
          await written(text.recordModelFinished, [
            ...leaseParams(clock), step.operationId, json(step.output), json(step.usage), step.sequence, observedAt, JSON.stringify(step.toolCalls.map((call) => ({ rowId: newId(), ...call }))),
          ]);
          return lease;
        }
        case 'recordToolStarted': {
          const clock = clockReading(step.clockMs, clockId);
          await written(text.recordToolStarted, [
            ...leaseParams(clock), newId(), step.toolCallId, step.name, json(step.effectiveInput), step.sequence, observedAt,
          ]);
          return lease;
        }
        case 'recordToolFinished': {
          const clock = clockReading(step.clockMs, clockId);
          await written(text.recordToolFinished, [
            ...leaseParams(clock), step.output.status === 'error' ? 'FAILED' : 'COMPLETED', step.toolCallId, json(step.output), step.sequence, observedAt,
          ]);
          return lease;
        }
        case 'finishRun':
          await written(text.finishRun, [
            ...leaseParams(), step.status, json({ code: `RUN_${step.status}`, message: `Closed when the run ended (${step.status})` }),
          ]);
          return null;
      }
    },
  };
}
