// The write-path floor: the statements the domain (src/domain/*.ts) sends for each lifecycle
// event, as plain SQL, with no GraphQL and no ORM. Every lifecycle event is the server's own
// one-statement fast path (src/domain/fast-write.ts: the very statement texts, imported, with the
// same parameters; finishRun's for a run with no audit open, as the bench's runs end); createRun
// is the server's transaction, statement for statement (the thread checked, the run inserted, the
// change cursor stamped). What the server adds on top of this is its overhead.
import { STAMP } from '../../src/domain/change-cursors.js';
import { FINISH_QUIET_RUN } from '../../src/domain/convergence.js';
import { CLAIM_QUEUED } from '../../src/domain/lease.js';
import { FINISH_MODEL, START_MODEL } from '../../src/domain/model-audits.js';
import { FINISH_TOOL, START_TOOL } from '../../src/domain/tool-audits.js';
import type { Sql, SqlSession } from './sql.js';
import { clockReading, type ClockReading, type Step } from './run-script.js';
import { newId } from '../../src/domain/ids.js';

export interface FloorLease {
  runId: string;
  epoch: number;
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

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
    case 'claimRun': {
      const [claimed] = await sql.query(CLAIM_QUEUED, [runId, workerSub, step.leaseSeconds, null]);
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
      await fast(sql, FINISH_QUIET_RUN, [...leaseParams(), step.status, null]);
      return null;
  }
}
