import type { Sql } from '../db/sql.js';
import type { ToolCall } from '../generated/prisma/client.js';
import { DomainError, invalidTransition } from './errors.js';
import type { LockedRun } from './lease.js';

/** The newest declaration of `toolCallId` in one run (by the declaring model call's sequence). */
async function findDeclarationInRun(sql: Sql, runId: string, toolCallId: string): Promise<ToolCall | undefined> {
  const [declaration] = await sql.query<ToolCall>(
    `SELECT tc.* FROM tool_call tc JOIN message m ON m.id = tc.declared_by_id
     WHERE tc.run_id = $1 AND tc.tool_call_id = $2 ORDER BY m.sequence DESC, m.created_at DESC LIMIT 1`,
    [runId, toolCallId],
  );
  return declaration;
}

/**
 * Binds a tool start to the model call that declared it: the newest declaration in the run
 * itself, else in its resume ancestors, nearest first. A broken ancestry (a missing ancestor,
 * one in another thread, a cycle) fails closed; it is never skipped. Nothing found:
 * MODEL_NOT_FOUND.
 */
export async function findDeclaringToolCall(sql: Sql, run: LockedRun, toolCallId: string): Promise<ToolCall> {
  const visited = new Set<string>([run.id]);
  let current: { id: string; resumedFromId: string | null } = run;
  for (;;) {
    const declaration = await findDeclarationInRun(sql, current.id, toolCallId);
    if (declaration) return declaration;
    if (!current.resumedFromId) break;
    const parentId: string = current.resumedFromId;
    if (visited.has(parentId)) throw invalidTransition(`The resume ancestry of run ${run.id} has a cycle at ${parentId}`);
    visited.add(parentId);
    const [parent] = await sql.query<{ id: string; threadId: string; resumedFromId: string | null }>(
      'SELECT id, thread_id, resumed_from_id FROM run WHERE id = $1',
      [parentId],
    );
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
