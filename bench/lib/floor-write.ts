// The write-path floor: the transactions the domain (src/domain/*.ts) runs for each lifecycle
// event, written as plain SQL. Same statements in the same order (lock the run row, check the
// lease, read the audit, write the message row, mirror the tool_call row), same checks in JS,
// no GraphQL and no ORM. What the server adds on top of this is its overhead.
import { randomUUID } from 'node:crypto';
import type { Sql, SqlSession } from './sql.js';
import { clockReading, type ClockReading, type Step } from './run-script.js';

const LOCKED_RUN = `SELECT id, thread_id, status::text AS status, lease_owner, lease_epoch, resumed_from_id,
  coalesce(lease_expires_at <= now(), false) AS expired FROM run WHERE id = $1::uuid FOR UPDATE`;

interface LockedRun {
  id: string;
  thread_id: string;
  status: string;
  lease_owner: string | null;
  lease_epoch: number;
  resumed_from_id: string | null;
  expired: boolean;
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

const findAudit = (tx: SqlSession, runId: string, role: 'ASSISTANT' | 'TOOL', operationId: string) =>
  tx.query(`SELECT * FROM message WHERE run_id = $1 AND role = $2::"MessageRole" AND operation_id = $3`, [runId, role, operationId]);

function durationMs(startClockId: string | null, startNanos: string | null, end: ClockReading): number | null {
  if (startClockId !== end.clockId || startNanos === null) return null;
  const nanos = end.nanos - BigInt(startNanos);
  return nanos <= 0n ? 0 : Number(nanos / 1_000_000n);
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

export const floorCreateThread = (sql: Sql, ownerSub: string) =>
  sql.transaction(async (tx) => {
    const [thread] = await tx.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, $3) RETURNING *`, [randomUUID(), ownerSub, 'bench']);
    return thread!.id as string;
  });

export const floorCreateRun = (sql: Sql, ownerSub: string, threadId: string) =>
  sql.transaction(async (tx) => {
    const [thread] = await tx.query(`SELECT * FROM thread WHERE id = $1`, [threadId]);
    if (!thread || thread.owner_id !== ownerSub) throw new Error('NOT_FOUND thread');
    const [run] = await tx.query(`INSERT INTO run (id, thread_id, resumed_from_id) VALUES ($1, $2, NULL) RETURNING *`, [randomUUID(), threadId]);
    return run!.id as string;
  });

/** Runs one lifecycle step as one transaction; a claim returns the new lease. */
export async function floorStep(sql: Sql, workerSub: string, runId: string, lease: FloorLease | null, step: Step): Promise<FloorLease | null> {
  const observedAt = new Date();
  const clockId = `bench-clock-${runId}`;
  switch (step.op) {
    case 'claimRun':
      return sql.transaction(async (tx) => {
        const [claimed] = await tx.query(
          `UPDATE run SET status = 'RUNNING', lease_owner = $2, lease_epoch = lease_epoch + 1,
             lease_expires_at = now() + make_interval(secs => $3), started_at = coalesce(started_at, now())
           WHERE id = $1::uuid AND status = 'QUEUED'
           RETURNING id, thread_id, status::text AS status, lease_owner, lease_epoch, lease_expires_at`,
          [runId, workerSub, step.leaseSeconds],
        );
        if (!claimed) throw new Error('INVALID_TRANSITION claim');
        return { runId, epoch: claimed.lease_epoch as number };
      });
    case 'recordModelStarted':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [existing] = await findAudit(tx, run.id, 'ASSISTANT', step.operationId);
        if (existing) return existing;
        const clock = clockReading(step.clockMs, clockId);
        return (
          await tx.query(
            `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input,
               sequence, started_at, start_clock_id, start_clock_nanos)
             VALUES ($1, $2, $3, 'ASSISTANT', 'model_audit', $4, $5, 'RUNNING', $6, $7, $8, $9, $10) RETURNING *`,
            [randomUUID(), run.thread_id, run.id, step.operationId, step.model, json(step.input), step.sequence, observedAt, clock.clockId, clock.nanos],
          )
        )[0];
      });
      return lease;
    case 'recordModelFinished':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [audit] = await findAudit(tx, run.id, 'ASSISTANT', step.operationId);
        if (!audit) throw new Error('INVALID_TRANSITION no model call');
        if (audit.status !== 'RUNNING') return audit;
        const clock = clockReading(step.clockMs, clockId);
        const [closed] = await tx.query(
          `UPDATE message SET status = 'COMPLETED', output = $2, error = NULL, usage = $3, finished_at = $4, finished_sequence = $5,
             end_clock_id = $6, end_clock_nanos = $7, duration_ms = $8 WHERE id = $1 RETURNING *`,
          [audit.id, json(step.output), json(step.usage), observedAt, step.sequence, clock.clockId, clock.nanos,
            durationMs(audit.start_clock_id, audit.start_clock_nanos, clock)],
        );
        if (step.toolCalls.length > 0) {
          const values: unknown[] = [];
          const rows = step.toolCalls.map((call, position) => {
            values.push(randomUUID(), run.thread_id, run.id, audit.id, position, call.id, call.name, json(call.args));
            const at = values.length - 8;
            return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, $${at + 6}, $${at + 7}, $${at + 8})`;
          });
          await tx.query(
            `INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input) VALUES ${rows.join(', ')}`,
            values,
          );
        }
        return closed;
      });
      return lease;
    case 'recordToolStarted':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [existing] = await findAudit(tx, run.id, 'TOOL', step.toolCallId);
        if (existing) return existing;
        // The declaring model call: the newest declaration in this run (no resume ancestry here).
        const [toolCall] = await tx.query(
          `SELECT tc.* FROM tool_call tc JOIN message m ON m.id = tc.declared_by_id
           WHERE tc.run_id = $1 AND tc.tool_call_id = $2 ORDER BY m.sequence DESC, m.created_at DESC LIMIT 1`,
          [run.id, step.toolCallId],
        );
        if (!toolCall) throw new Error('MODEL_NOT_FOUND');
        // Only the declared intent starts (lockToolCall): the row is locked against a sibling resume.
        const [locked] = await tx.query(`SELECT status::text AS status FROM tool_call WHERE id = $1::uuid FOR UPDATE`, [toolCall.id]);
        if (locked!.status !== 'PENDING') throw new Error('INVALID_TRANSITION not pending');
        const clock = clockReading(step.clockMs, clockId);
        const [audit] = await tx.query(
          `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id,
             sequence, started_at, start_clock_id, start_clock_nanos)
           VALUES ($1, $2, $3, 'TOOL', 'tool_audit', $4, $5, 'RUNNING', $6, $7, $8, $9, $10, $11) RETURNING *`,
          [randomUUID(), run.thread_id, run.id, step.toolCallId, step.name, json(step.effectiveInput), toolCall.id, step.sequence,
            observedAt, clock.clockId, clock.nanos],
        );
        await mirrorOntoToolCall(tx, audit!);
        return audit;
      });
      return lease;
    case 'recordToolFinished':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [audit] = await findAudit(tx, run.id, 'TOOL', step.toolCallId);
        if (!audit) throw new Error('INVALID_TRANSITION no tool call');
        if (audit.status !== 'RUNNING') return audit;
        const clock = clockReading(step.clockMs, clockId);
        const [closed] = await tx.query(
          `UPDATE message SET status = $2::"AuditStatus", output = $3, awaiting_run_terminal = false, finished_at = $4,
             finished_sequence = $5, end_clock_id = $6, end_clock_nanos = $7, duration_ms = $8 WHERE id = $1 RETURNING *`,
          [audit.id, step.output.status === 'error' ? 'FAILED' : 'COMPLETED', json(step.output), observedAt, step.sequence,
            clock.clockId, clock.nanos, durationMs(audit.start_clock_id, audit.start_clock_nanos, clock)],
        );
        await mirrorOntoToolCall(tx, closed!);
        return closed;
      });
      return lease;
    case 'finishRun':
      await sql.transaction(async (tx) => {
        const run = await requireLease(tx, workerSub, lease!);
        const [ended] = await tx.query(
          `UPDATE run SET status = $2::"RunStatus", finished_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 RETURNING *`,
          [run.id, step.status],
        );
        const open = await tx.query(
          `SELECT * FROM message WHERE run_id = $1 AND status = 'RUNNING' AND message_type IN ('model_audit', 'tool_audit') ORDER BY sequence`,
          [run.id],
        );
        for (const audit of open) {
          const [closed] = await tx.query(
            `UPDATE message SET status = 'ABANDONED', finished_at = coalesce(finished_at, now()), awaiting_run_terminal = false,
               error = coalesce(error, $2) WHERE id = $1 RETURNING *`,
            [audit.id, json({ code: 'RUN_COMPLETED', message: 'Closed when the run ended (COMPLETED)' })],
          );
          if (closed!.message_type === 'tool_audit') await mirrorOntoToolCall(tx, closed!);
        }
        return ended;
      });
      return null;
  }
}
