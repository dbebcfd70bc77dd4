// One step of runs driven straight through the lifecycle functions (audit_record_events, one call
// for the step of all the given runs), without the server: the events as the domain sends them.
import { newId } from '../../src/domain/ids.js';
import type { Step } from './run-script.js';
import { stepRequest, type Lease } from './server-worker.js';
import type { SqlSession } from './sql.js';

/** A step as the domain sends it to audit_record_events (lifecycle-events.ts SqlEvent). */
export function sqlEventOf(runId: string, lease: Lease | null, step: Step): Record<string, unknown> {
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

/** Drives `runIds` through one step as one audit_record_events call; returns the leases after it. */
export async function functionsStep(sql: SqlSession, worker: string, runIds: string[], leases: (Lease | null)[], op: Step): Promise<(Lease | null)[]> {
  const events = runIds.map((runId, run) => sqlEventOf(runId, leases[run]!, op));
  const rows = await sql.query<{ result: { ok?: { run?: { lease_epoch: number } }; refused?: unknown } }>(
    'SELECT result FROM audit_record_events($1, $2::jsonb) AS result',
    [worker, JSON.stringify(events)],
  );
  const refused = rows.find((row) => row.result.refused);
  if (refused) throw new Error(`${op.op} refused: ${JSON.stringify(refused.result.refused)}`);
  if (op.op === 'claimRun') return rows.map((row, run) => ({ runId: runIds[run]!, epoch: Number(row.result.ok!.run!.lease_epoch) }));
  return op.op === 'finishRun' ? runIds.map(() => null) : leases;
}
