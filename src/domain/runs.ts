import type { Principal } from '../auth/principal.js';
import { insertRow } from '../db/sql.js';
import type { Tx } from '../db/transaction.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { assertCanReadThread, canReadEveryThread, loadReadableThreadForWrite } from './access.js';
import { command, type DomainDeps } from './command.js';
import { invalidTransition, notFound } from './errors.js';
import { runChanged } from './events.js';
import { bump, fastStatement } from './fast-write.js';
import { isUuid, newId, rowId } from './ids.js';

export const ENDED_RUN_STATUSES: readonly RunStatus[] = ['INTERRUPTED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const isRunEnded = (status: RunStatus) => ENDED_RUN_STATUSES.includes(status);

/** A run the principal may read: the thread owner, admin or superadmin. */
export async function loadReadableRun(tx: Tx, principal: Principal, runId: string) {
  const run = await tx.run.findUnique({ where: { id: rowId(runId, 'Run') }, include: { thread: true } });
  if (!run || run.thread.deletedAt) throw notFound('Run', runId);
  assertCanReadThread(principal, run.thread);
  return run;
}

/**
 * The fast path of a fresh run (fast-write.ts): the thread, only where the caller may write it,
 * bumped and the run inserted with its cursor. A resume, or a thread not found or not the
 * caller's, takes the transaction, which checks the parent run and names the refusal.
 */
export const CREATE_FRESH_RUN = `WITH target AS (
  SELECT id AS thread_id FROM thread WHERE id = $1::uuid AND (owner_id = $2 OR $3::boolean) AND deleted_at IS NULL),
${bump('target')},
created AS (
  INSERT INTO run (id, thread_id, resumed_from_id, change_cursor, changed_at)
  SELECT $4::uuid, target.thread_id, NULL, bumped.cursor, bumped.at FROM target, bumped
  RETURNING *)
SELECT * FROM created`;

interface CreateRunInput {
  threadId: string;
  resumeFromRunId?: string | null;
}

async function createFreshRunFast(deps: DomainDeps, principal: Principal, input: CreateRunInput) {
  if (input.resumeFromRunId != null || !isUuid(input.threadId)) return undefined;
  const [run] = await fastStatement<Run>(deps.statement, CREATE_FRESH_RUN, [
    input.threadId.toLowerCase(),
    principal.sub,
    canReadEveryThread(principal),
    newId(),
  ]);
  return run && { value: run, changes: [runChanged(run)] };
}

/** Creates a QUEUED run; a resume must name an ended run of the same thread. */
export const createRun = command(async ({ sql, emit }, principal: Principal, input: CreateRunInput) => {
  const thread = await loadReadableThreadForWrite(sql, principal, input.threadId);
  // Present means meant: a blank id is malformed, never a run that resumes nothing.
  const resumedFromId = input.resumeFromRunId != null ? rowId(input.resumeFromRunId, 'Run') : null;
  if (resumedFromId !== null) {
    const [parent] = await sql.query<Run>('SELECT * FROM run WHERE id = $1', [resumedFromId]);
    if (!parent) throw notFound('Run', input.resumeFromRunId!);
    if (parent.threadId !== thread.id) throw invalidTransition('A run can only resume a run of the same thread');
    if (!isRunEnded(parent.status)) throw invalidTransition(`Run ${parent.id} has not ended (${parent.status})`);
  }
  const run = await insertRow<Run>(sql, 'run', {
    id: newId(),
    threadId: thread.id,
    resumedFromId,
  });
  emit(runChanged(run));
  return run;
}, createFreshRunFast);
