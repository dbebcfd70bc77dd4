// The write path's floor: the least work each lifecycle rule needs, done inside the database.
// Each event is one call of a PL/pgSQL function (one round trip, one transaction, plans cached
// per connection), written from the rules, not from the server's statements:
//
// - one lock per event, the thread row's: bumping the thread's change cursor is needed anyway
//   (every change gets the next cursor of its thread), and since every change of a run (its
//   claim, its events, its end) takes that lock first, the lease read after it, on a fresh
//   snapshot, cannot be overtaken; the run row itself is not locked;
// - the lease: the run RUNNING, held by this worker at this epoch, not expired;
// - the audit row written (inserted at a start, closed at a finish) with the cursor it changed at;
// - a tool start bound to the tool call of that id declared by the run's newest model call, still
//   PENDING; the ToolCall row kept in step with its audit (the status, input, output and times
//   the timeline reads from it);
// - a refusal raises, so the call writes nothing.
//
// The functions live in a schema of their own (bench_floor) in the bench's scratch database.
import { newId } from '../../src/domain/ids.js';
import { clockReading, type Step } from './run-script.js';
import type { Lease } from './server-worker.js';
import type { Sql, SqlSession } from './sql.js';

const FUNCTIONS = /* SQL */ `
CREATE SCHEMA IF NOT EXISTS bench_floor;

-- The thread's next cursor for a change of run p_run, under the thread row's lock; then the lease.
CREATE OR REPLACE FUNCTION bench_floor.leased_change(p_run uuid, p_worker text, p_epoch int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint;
BEGIN
  UPDATE thread SET change_cursor = thread.change_cursor + 1 FROM run
    WHERE run.id = p_run AND thread.id = run.thread_id RETURNING thread.change_cursor INTO next_cursor;
  PERFORM FROM run WHERE id = p_run AND status = 'RUNNING' AND lease_owner = p_worker AND lease_epoch = p_epoch
    AND lease_expires_at > now();
  IF NOT FOUND THEN RAISE EXCEPTION 'LEASE_LOST or LEASE_EXPIRED' USING ERRCODE = 'P0001'; END IF;
  RETURN next_cursor;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.create_run(p_id uuid, p_thread uuid, p_owner text) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint;
BEGIN
  UPDATE thread SET change_cursor = change_cursor + 1 WHERE id = p_thread AND owner_id = p_owner AND deleted_at IS NULL
    RETURNING change_cursor INTO next_cursor;
  IF NOT FOUND THEN RAISE EXCEPTION 'NOT_FOUND thread' USING ERRCODE = 'P0001'; END IF;
  INSERT INTO run (id, thread_id, change_cursor, changed_at) VALUES (p_id, p_thread, next_cursor, clock_timestamp());
  RETURN p_id;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.claim_run(p_run uuid, p_worker text, p_seconds int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint; epoch int;
BEGIN
  UPDATE thread SET change_cursor = thread.change_cursor + 1 FROM run
    WHERE run.id = p_run AND thread.id = run.thread_id RETURNING thread.change_cursor INTO next_cursor;
  UPDATE run SET status = 'RUNNING', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
      lease_expires_at = now() + make_interval(secs => p_seconds), started_at = coalesce(started_at, now()),
      change_cursor = next_cursor, changed_at = clock_timestamp()
    WHERE id = p_run AND status = 'QUEUED' RETURNING lease_epoch INTO epoch;
  IF NOT FOUND THEN RAISE EXCEPTION 'INVALID_TRANSITION claim' USING ERRCODE = 'P0001'; END IF;
  RETURN epoch;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.start_model(p_run uuid, p_worker text, p_epoch int, p_id uuid, p_operation text,
  p_model text, p_input jsonb, p_sequence bigint, p_at timestamptz, p_clock text, p_nanos bigint) RETURNS SETOF message
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint := bench_floor.leased_change(p_run, p_worker, p_epoch);
BEGIN
  RETURN QUERY INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, sequence,
      started_at, start_clock_id, start_clock_nanos, change_cursor, changed_at)
    SELECT p_id, thread_id, p_run, 'ASSISTANT', 'model_audit', p_operation, p_model, 'RUNNING', p_input, p_sequence,
      p_at, p_clock, p_nanos, next_cursor, clock_timestamp() FROM run WHERE id = p_run
    RETURNING *;
END $$;

-- p_calls: [{rowId, id, name, args}] in declaration order.
CREATE OR REPLACE FUNCTION bench_floor.finish_model(p_run uuid, p_worker text, p_epoch int, p_operation text, p_output jsonb,
  p_usage jsonb, p_sequence bigint, p_at timestamptz, p_clock text, p_nanos bigint, p_calls jsonb) RETURNS SETOF message
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint := bench_floor.leased_change(p_run, p_worker, p_epoch); closed message;
BEGIN
  UPDATE message SET status = 'COMPLETED', output = p_output, usage = p_usage, finished_at = p_at, finished_sequence = p_sequence,
      end_clock_id = p_clock, end_clock_nanos = p_nanos,
      duration_ms = CASE WHEN start_clock_id = p_clock THEN greatest(0, (p_nanos - start_clock_nanos) / 1000000)::int END,
      change_cursor = next_cursor, changed_at = clock_timestamp()
    WHERE run_id = p_run AND role = 'ASSISTANT' AND operation_id = p_operation AND status = 'RUNNING'
    RETURNING * INTO closed;
  IF NOT FOUND THEN RAISE EXCEPTION 'INVALID_TRANSITION model call not running' USING ERRCODE = 'P0001'; END IF;
  INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input)
    SELECT (call ->> 'rowId')::uuid, closed.thread_id, p_run, closed.id, (position - 1)::int, call ->> 'id', call ->> 'name', call -> 'args'
    FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS declared(call, position);
  RETURN NEXT closed;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.start_tool(p_run uuid, p_worker text, p_epoch int, p_id uuid, p_call text,
  p_name text, p_input jsonb, p_sequence bigint, p_at timestamptz, p_clock text, p_nanos bigint) RETURNS SETOF message
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint := bench_floor.leased_change(p_run, p_worker, p_epoch); bound uuid;
BEGIN
  UPDATE tool_call SET status = 'RUNNING', effective_input = p_input, started_at = p_at
    WHERE id = (SELECT tc.id FROM tool_call tc JOIN message declaring ON declaring.id = tc.declared_by_id
                WHERE tc.run_id = p_run AND tc.tool_call_id = p_call ORDER BY declaring.sequence DESC LIMIT 1)
      AND status = 'PENDING'
    RETURNING id INTO bound;
  IF NOT FOUND THEN RAISE EXCEPTION 'INVALID_TRANSITION no PENDING declaration' USING ERRCODE = 'P0001'; END IF;
  RETURN QUERY INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id,
      sequence, started_at, start_clock_id, start_clock_nanos, change_cursor, changed_at)
    SELECT p_id, thread_id, p_run, 'TOOL', 'tool_audit', p_call, p_name, 'RUNNING', p_input, bound,
      p_sequence, p_at, p_clock, p_nanos, next_cursor, clock_timestamp() FROM run WHERE id = p_run
    RETURNING *;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.finish_tool(p_run uuid, p_worker text, p_epoch int, p_call text, p_output jsonb,
  p_sequence bigint, p_at timestamptz, p_clock text, p_nanos bigint) RETURNS SETOF message
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint := bench_floor.leased_change(p_run, p_worker, p_epoch); closed message;
BEGIN
  UPDATE message SET status = CASE WHEN p_output ->> 'status' = 'error' THEN 'FAILED' ELSE 'COMPLETED' END::"AuditStatus",
      output = p_output, finished_at = p_at, finished_sequence = p_sequence, end_clock_id = p_clock, end_clock_nanos = p_nanos,
      duration_ms = CASE WHEN start_clock_id = p_clock THEN greatest(0, (p_nanos - start_clock_nanos) / 1000000)::int END,
      change_cursor = next_cursor, changed_at = clock_timestamp()
    WHERE run_id = p_run AND role = 'TOOL' AND operation_id = p_call AND status = 'RUNNING'
    RETURNING * INTO closed;
  IF NOT FOUND THEN RAISE EXCEPTION 'INVALID_TRANSITION tool call not running' USING ERRCODE = 'P0001'; END IF;
  UPDATE tool_call SET status = closed.status::text::"ToolCallStatus", output = coalesce(p_output -> 'content', '""'),
      finished_at = closed.finished_at, duration_ms = closed.duration_ms
    WHERE id = closed.tool_call_row_id;
  RETURN NEXT closed;
END $$;

-- A run with no audit left open (as the bench's runs end): the check, and the run ended.
CREATE OR REPLACE FUNCTION bench_floor.finish_run(p_run uuid, p_worker text, p_epoch int, p_status text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE next_cursor bigint := bench_floor.leased_change(p_run, p_worker, p_epoch);
BEGIN
  IF EXISTS (SELECT FROM message WHERE run_id = p_run AND status = 'RUNNING') THEN
    RAISE EXCEPTION 'audits open: closing them is not a path the bench drives' USING ERRCODE = 'P0001';
  END IF;
  UPDATE run SET status = p_status::"RunStatus", finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
      change_cursor = next_cursor, changed_at = clock_timestamp()
    WHERE id = p_run;
END $$;
`;

/** Creates the floor's functions in `sql`'s database (after the migrations). */
export async function installWriteFloor(sql: Sql) {
  await sql.driver.exec(FUNCTIONS);
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** A thread of the floor's own, owned by `ownerSub`. */
export async function floorCreateThread(sql: SqlSession, ownerSub: string): Promise<string> {
  const [thread] = await sql.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, 'bench floor') RETURNING id`, [newId(), ownerSub]);
  return thread!.id as string;
}

export async function floorCreateRun(sql: SqlSession, ownerSub: string, threadId: string): Promise<string> {
  const [run] = await sql.query('SELECT bench_floor.create_run($1, $2, $3) AS id', [newId(), threadId, ownerSub]);
  return run!.id as string;
}

/** A new thread of `count` new runs, owned by `ownerSub`: the runs' ids. */
export async function floorCreateRuns(sql: SqlSession, ownerSub: string, count: number): Promise<string[]> {
  const threadId = await floorCreateThread(sql, ownerSub);
  const runIds: string[] = [];
  for (let run = 0; run < count; run++) runIds.push(await floorCreateRun(sql, ownerSub, threadId));
  return runIds;
}

/** One lifecycle event as one function call; a claim returns the new lease. */
export async function floorStep(sql: SqlSession, workerSub: string, runId: string, lease: Lease | null, step: Step): Promise<Lease | null> {
  if (step.op === 'claimRun') {
    const [claimed] = await sql.query('SELECT bench_floor.claim_run($1, $2, $3) AS epoch', [runId, workerSub, step.leaseSeconds]);
    return { runId, epoch: claimed!.epoch as number };
  }
  const fence = [runId, workerSub, lease!.epoch];
  if (step.op === 'finishRun') {
    await sql.query('SELECT bench_floor.finish_run($1, $2, $3, $4)', [...fence, step.status]);
    return null;
  }
  const clock = clockReading(step.clockMs, `bench-clock-${runId}`);
  const observed = [step.sequence, new Date(), clock.clockId, clock.nanos];
  const call = (fn: string, params: unknown[]) => {
    const placeholders = params.map((_, index) => `$${index + 1}`).join(', ');
    return sql.query(`SELECT id FROM bench_floor.${fn}(${placeholders})`, params);
  };
  switch (step.op) {
    case 'recordModelStarted':
      await call('start_model', [...fence, newId(), step.operationId, step.model, json(step.input), ...observed]);
      break;
    case 'recordModelFinished':
      await call('finish_model', [
        ...fence, step.operationId, json(step.output), json(step.usage), ...observed,
        JSON.stringify(step.toolCalls.map((declared) => ({ rowId: newId(), ...declared }))),
      ]);
      break;
    case 'recordToolStarted':
      await call('start_tool', [...fence, newId(), step.toolCallId, step.name, json(step.effectiveInput), ...observed]);
      break;
    case 'recordToolFinished':
      await call('finish_tool', [...fence, step.toolCallId, json(step.output), ...observed]);
      break;
  }
  return lease;
}
