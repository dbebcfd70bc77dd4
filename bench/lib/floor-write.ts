// The write-path floor: the statements the domain (src/domain/*.ts) sends for each lifecycle
// event, as plain SQL, with no GraphQL and no ORM. Every lifecycle event is the server's own
// one-statement fast path (src/domain/fenced-statements.ts: the very statement texts, imported, with the
// same parameters; finishRun's for a run with no audit open, as the bench's runs end), and so is
// createRun's. What the server adds on top of this is its overhead.
import { FINISH_QUIET_RUN } from '../../src/domain/convergence.js';
import { CLAIM_RUN } from '../../src/domain/lease.js';
import { CREATE_RUN } from '../../src/domain/runs.js';
import { FINISH_MODEL, START_MODEL } from '../../src/domain/model-audits.js';
import { FINISH_TOOL, START_TOOL } from '../../src/domain/tool-audits.js';
import type { Sql } from './sql.js';
import { clockReading, type ClockReading, type Step } from './run-script.js';
import { newId } from '../../src/domain/ids.js';

export interface FloorLease {
  runId: string;
  epoch: number;
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

export const floorCreateThread = (sql: Sql, ownerSub: string) =>
  sql.transaction(async (tx) => {
    const [thread] = await tx.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, $3) RETURNING *`, [newId(), ownerSub, 'bench']);
    return thread!.id as string;
  });

export async function floorCreateRun(sql: Sql, ownerSub: string, threadId: string): Promise<string> {
  const [run] = await sql.query(CREATE_RUN, [threadId, ownerSub, false, newId(), null]);
  if (!run) throw new Error('NOT_FOUND thread');
  return run.id as string;
}

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
  // The parameters of src/domain/fenced-statements.ts startParams and endParams.
  const started = (sequence: bigint, clock: ClockReading) => [sequence.toString(), observedAt, clock.clockId, clock.nanos.toString()];
  const ended = (sequence: bigint, clock: ClockReading) => [observedAt, sequence.toString(), clock.clockId, clock.nanos.toString()];
  switch (step.op) {
    case 'claimRun': {
      const [claimed] = await sql.query(CLAIM_RUN, [runId, workerSub, step.leaseSeconds, null]);
      if (!claimed) throw new Error('INVALID_TRANSITION claim');
      return { runId, epoch: claimed.lease_epoch as number };
    }
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
        ...started(step.sequence, clockReading(step.clockMs, clockId)), null,
      ]);
      return lease;
    case 'recordToolFinished':
      await fast(sql, FINISH_TOOL, [...leaseParams(), step.toolCallId, json(step.output), ...ended(step.sequence, clockReading(step.clockMs, clockId))]);
      return lease;
    case 'finishRun':
      await fast(sql, FINISH_QUIET_RUN, [...leaseParams(), step.status, null]);
      return null;
  }
}
