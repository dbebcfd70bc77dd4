import type { Principal } from '../auth/principal.js';
import type { Tx } from '../db/transaction.js';
import type { RunStatus } from '../generated/prisma/client.js';
import { assertCanReadThread, loadReadableThread } from './access.js';
import { command } from './command.js';
import { invalidTransition, notFound } from './errors.js';
import { runChanged } from './events.js';
import { rowId } from './ids.js';

export const ENDED_RUN_STATUSES: readonly RunStatus[] = ['INTERRUPTED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const isRunEnded = (status: RunStatus) => ENDED_RUN_STATUSES.includes(status);

export async function findRun(tx: Tx, runId: string) {
  return tx.run.findUnique({ where: { id: rowId(runId, 'Run') } });
}

/** A run the principal may read: the thread owner, admin or superadmin. */
export async function loadReadableRun(tx: Tx, principal: Principal, runId: string) {
  const run = await tx.run.findUnique({ where: { id: rowId(runId, 'Run') }, include: { thread: true } });
  if (!run) throw notFound('Run', runId);
  assertCanReadThread(principal, run.thread);
  return run;
}

/** Creates a QUEUED run; a resume must name an ended run of the same thread. */
export const createRun = command(
  async ({ tx, emit }, principal: Principal, input: { threadId: string; resumeFromRunId?: string | null }) => {
    const thread = await loadReadableThread(tx, principal, input.threadId);
    if (input.resumeFromRunId) {
      const parent = await findRun(tx, input.resumeFromRunId);
      if (!parent) throw notFound('Run', input.resumeFromRunId);
      if (parent.threadId !== thread.id) throw invalidTransition('A run can only resume a run of the same thread');
      if (!isRunEnded(parent.status)) throw invalidTransition(`Run ${parent.id} has not ended (${parent.status})`);
    }
    const run = await tx.run.create({
      data: { threadId: thread.id, resumedFromId: input.resumeFromRunId ? rowId(input.resumeFromRunId, 'Run') : null },
    });
    emit(runChanged(run));
    return run;
  },
);
