import type { Tx } from '../db/transaction.js';
import { DomainError, invalidTransition } from './errors.js';
import type { LockedRun } from './lease.js';

/** The newest declaration of `toolCallId` in one run (by the declaring model call's sequence). */
function findDeclarationInRun(tx: Tx, runId: string, toolCallId: string) {
  return tx.toolCall.findFirst({
    where: { runId, toolCallId },
    orderBy: [{ declaredBy: { sequence: 'desc' } }, { declaredBy: { createdAt: 'desc' } }],
  });
}

/**
 * Binds a tool start to the model call that declared it: the newest declaration in the run
 * itself, else in its resume ancestors, nearest first. A broken ancestry (a missing ancestor,
 * one in another thread, a cycle) fails closed; it is never skipped. Nothing found:
 * MODEL_NOT_FOUND.
 */
export async function findDeclaringToolCall(tx: Tx, run: LockedRun, toolCallId: string) {
  const visited = new Set<string>([run.id]);
  let current: { id: string; resumedFromId: string | null } = run;
  for (;;) {
    const declaration = await findDeclarationInRun(tx, current.id, toolCallId);
    if (declaration) return declaration;
    if (!current.resumedFromId) break;
    const parentId: string = current.resumedFromId;
    if (visited.has(parentId)) throw invalidTransition(`The resume ancestry of run ${run.id} has a cycle at ${parentId}`);
    visited.add(parentId);
    const parent = await tx.run.findUnique({ where: { id: parentId }, select: { id: true, threadId: true, resumedFromId: true } });
    if (!parent) throw invalidTransition(`Run ${current.id} resumes run ${parentId}, which does not exist`);
    if (parent.threadId !== run.threadId) {
      throw invalidTransition(`Run ${current.id} resumes run ${parentId} of another thread`);
    }
    current = parent;
  }
  throw new DomainError(
    'MODEL_NOT_FOUND',
    `No model call in run ${run.id} or its resume ancestry declared tool call ${toolCallId}`,
  );
}
