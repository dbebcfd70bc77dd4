import type { Principal } from '../auth/principal.js';
import { insertRow } from '../db/sql.js';
import type { Tx } from '../db/transaction.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { assertCanReadThread, loadReadableThreadForWrite } from './access.js';
import { command } from './command.js';
import { invalidTransition, notFound } from './errors.js';
import { runChanged } from './events.js';
import { newId, rowId } from './ids.js';

export const ENDED_RUN_STATUSES: readonly RunStatus[] = ['INTERRUPTED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const isRunEnded = (status: RunStatus) => ENDED_RUN_STATUSES.includes(status);

/** A run the principal may read: the thread owner, admin or superadmin. */
export async function loadReadableRun(tx: Tx, principal: Principal, runId: string) {
  const run = await tx.run.findUnique({ where: { id: rowId(runId, 'Run') }, include: { thread: true } });
  if (!run) throw notFound('Run', runId);
  assertCanReadThread(principal, run.thread);
  return run;
}

/** Creates a QUEUED run; a resume must name an ended run of the same thread. */
export const createRun = command(
  async ({ sql, emit }, principal: Principal, input: { threadId: string; resumeFromRunId?: string | null }) => {
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
  },
);
