import type { Sql } from '../db/sql.js';
import type { Message, MessageRole } from '../generated/prisma/client.js';
import { invalidTransition } from './errors.js';
import type { LockedRun } from './lease.js';
import type { Observation } from './observation.js';

/** Audit rows are keyed by (run, role, operation id): a model and a tool call may share an id. */
export async function findAudit(sql: Sql, runId: string, role: MessageRole, operationId: string): Promise<Message | null> {
  const [audit] = await sql.query<Message>(
    'SELECT * FROM message WHERE run_id = $1 AND role = $2::"MessageRole" AND operation_id = $3',
    [runId, role, operationId],
  );
  return audit ?? null;
}

export async function requireAudit(sql: Sql, run: LockedRun, role: MessageRole, operationId: string): Promise<Message> {
  const audit = await findAudit(sql, run.id, role, operationId);
  if (!audit) {
    const what = role === 'TOOL' ? 'tool call' : 'model call';
    throw invalidTransition(`No ${what} ${operationId} was started in run ${run.id}`);
  }
  return audit;
}

/** A replayed terminal may omit its sequence; one that names a different sequence differs. */
export const sameFinishedSequence = (audit: Message, observation: Observation) =>
  observation.sequence === undefined || observation.sequence === null || observation.sequence === audit.finishedSequence;
