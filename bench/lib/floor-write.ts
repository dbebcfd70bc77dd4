// The write-path floor: the statements the domain (src/domain/*.ts) sends for each lifecycle
// event, as plain SQL, with no GraphQL and no ORM. The four audit events are the server's own
// one-statement fast path (src/domain/fast-write.ts: the very statement texts, imported, with the
// same parameters); claimRun, finishRun and createRun are the server's transactions, statement
// for statement (lock the run row, check the lease in JS, write, stamp the change cursors). What
// the server adds on top of this is its overhead.
import { STAMP } from '../../src/domain/change-cursors.js';
import { FINISH_MODEL, START_MODEL } from '../../src/domain/model-audits.js';
import { FINISH_TOOL, START_TOOL } from '../../src/domain/tool-audits.js';
import type { Sql, SqlSession } from './sql.js';
import { clockReading, type ClockReading, type Step } from './run-script.js';
import { newId } from '../../src/domain/ids.js';

const LOCKED_RUN = `SELECT id, thread_id, status::text AS status, lease_owner, lease_epoch, resumed_from_id,
  coalesce(lease_expires_at <= now(), false) AS expired, now() AS database_now FROM run WHERE id = $1::uuid FOR UPDATE`;

interface LockedRun {
  id: string;
  thread_id: string;
  status: string;
  lease_owner: string | null;
  lease_epoch: number;
  resumed_from_id: string | null;
  expired: boolean;
  database_now: Date;
}

export interface FloorLease {
  runId: string;
  epoch: number;
}

async function requireLease(tx: SqlSession, workerSub: string, lease: FloorLease): Promise<LockedRun> {
  const [run] = await tx.query<LockedRun>(LOCKED_RUN, [lease.runId]);
  if (!run) throw new Error(`NOT_FOUND run ${lease.runId}`);
  if (run.status !== 'RUNNING' || run.lease_owner !== workerSub || run.lease_epoch !== lease.epoch) throw new Error('LEASE_LOST');
  if (run.expired) throw new Error('LEASE_EXPIRED');
  return run;
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** The ToolCall mirror of a tool audit row (src/domain/tool-call-projection.ts). */
async function mirrorOntoToolCall(tx: SqlSession, audit: Record<string, any>) {
  const status = audit.status === 'ABANDONED' ? 'FAILED' : audit.status;
  const content = audit.output === null ? null : JSON.stringify(audit.output?.content ?? '');
  await tx.query(
    `UPDATE tool_call SET status = $2::"ToolCallStatus", effective_input = $3, output = $4, error = $5,
       started_at = $6, finished_at = $7, duration_ms = $8 WHERE id = $1`,
    [audit.tool_call_row_id, status, json(audit.input), content, json(audit.error ?? undefined), audit.started_at, audit.finished_at, audit.duration_ms],
  );
}

/** The cursor stamp that ends each server transaction (src/domain/change-cursors.ts), for one thread's changed rows. */
const stamp = (tx: SqlSession, threadId: string, changes: [id: string, kind: 'run' | 'audit'][]) =>
  tx.query(STAMP, [threadId, changes.length, changes.map(([id]) => id), changes.map(([, kind]) => kind)]);

export const floorCreateThread = (sql: Sql, ownerSub: string) =>
  sql.transaction(async (tx) => {
    const [thread] = await tx.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, $3) RETURNING *`, [newId(), ownerSub, 'bench']);
    return thread!.id as string;
  });

export const floorCreateRun = (sql: Sql, ownerSub: string, threadId: string) =>
  sql.transaction(async (tx) => {
    const [thread] = await tx.query(`SELECT * FROM thread WHERE id = $1`, [threadId]);
    if (!thread || thread.owner_id !== ownerSub) throw new Error('NOT_FOUND thread');
    const [run] = await tx.query(`INSERT INTO run (id, thread_id, resumed_from_id) VALUES ($1, $2, NULL) RETURNING *`, [newId(), threadId]);
    await stamp(tx, threadId, [[run!.id, 'run']]);
    return run!.id as string;
  });

/** One fast-path statement in autocommit; nothing back is an error here (the bench's run is never refused). */
async function fast(sql: Sql, text: string, params: unknown[]) {
  const [row] = await sql.query(text, params);
  if (!row) throw new Error('the fast path wrote nothing');
}

/** Runs one lifecycle step as the server does; a claim returns the new lease. */
export async function floorStep(sql: Sql, workerSub: string, runId: string, lease: FloorLease | null, step: Step): Promise<FloorLease | null> {
  const observedAt = new Date();
  const clockId = `bench-clock-${runId}`;
  const leaseParams = () => [lease!.runId, workerSub, lease!.epoch];
  // The parameters of src/domain/fast-write.ts startParams and endParams.
  const started = (sequence: bigint, clock: ClockReading) => [sequence.toString(), observedAt, clock.clockId, clock.nanos.toString()];
  const ended = (sequence: bigint, clock: ClockReading) => [observedAt, sequence.toString(), clock.clockId, clock.nanos.toString()];
  switch (step.op) {
    case 'claimRun':
      return sql.transaction(async (tx) => {
        const [run] = await tx.query<LockedRun>(LOCKED_RUN, [runId]);
        if (!run || run.status !== 'QUEUED') throw new Error('INVALID_TRANSITION claim');
        const [claimed] = await tx.query(
          `UPDATE run SET status = 'RUNNING', lease_owner = $2, lease_epoch = lease_epoch + 1, claim_id = $4,
             lease_expires_at = now() + make_interval(secs => $3), started_at = coalesce(started_at, now())
           WHERE id = $1::uuid
           RETURNING *`,
          [runId, workerSub, step.leaseSeconds, null],
        );
        await stamp(tx, run.thread_id, [[runId, 'run']]);
        return { runId, epoch: claimed!.lease_epoch as number };
      });
    case 'recordModelStarted':
      await fast(sql, START_MODEL, [
        ...leaseParams(), newId(), step.operationId, step.model, json(step.input),
        ...started(step.sequence, clockReading(step.clockMs, clockId)),
      ]);
      return lease;
    case 'recordModelFinished':
      await fast(sql, FINISH_MODEL, [
        ...leaseParams(), step.operationId, 'COMPLETED', json(step.output), null, json(step.usage),
        ...ended(step.sequence, clockReading(step.clockMs, clockId)), JSON.stringify(step.toolCalls.map((call) => ({ rowId: newId(), ...call }))),
      ]);
      return lease;
    case 'recordToolStarted':
      await fast(sql, START_TOOL, [
        ...leaseParams(), step.toolCallId, newId(), step.name, json(step.effectiveInput),
        ...started(step.sequence, clockReading(step.clockMs, clockId)),
      ]);
      return lease;
    case 'recordToolFinished': {
      const failed = step.output.status === 'error';
      const content = JSON.stringify(step.output.content ?? '');
      await fast(sql, FINISH_TOOL, [
        ...leaseParams(), step.toolCallId, failed ? 'FAILED' : 'COMPLETED', json(step.output), failed ? `{"message":${content}}` : null,
        ...ended(step.sequence, clockReading(step.clockMs, clockId)), content,
      ]);
      return lease;
    }
    case 'finishRun':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [ended] = await tx.query(
          `UPDATE run SET status = $2::"RunStatus", finished_at = $3, lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 RETURNING *`,
          [run.id, step.status, run.database_now],
        );
        const open = await tx.query(
          `SELECT * FROM message WHERE run_id = $1 AND status = 'RUNNING' AND message_type IN ('model_audit', 'tool_audit') ORDER BY sequence`,
          [run.id],
        );
        for (const audit of open) {
          const [closed] = await tx.query(
            `UPDATE message SET status = 'ABANDONED', finished_at = coalesce(finished_at, $3), awaiting_run_terminal = false,
               error = coalesce(error, $2) WHERE id = $1 RETURNING *`,
            [audit.id, json({ code: 'RUN_COMPLETED', message: 'Closed when the run ended (COMPLETED)' }), run.database_now],
          );
          if (closed!.message_type === 'tool_audit') await mirrorOntoToolCall(tx, closed!);
        }
        await stamp(tx, run.thread_id, [...open.map((audit): [string, 'audit'] => [audit.id, 'audit']), [run.id, 'run']]);
        return ended;
      });
      return null;
  }
}
