import type { GraphQLResolveInfo } from 'graphql';
import { canReadAudits, isExecutedInRun } from '../../domain/access.js';
import type { GraphQLContext } from '../context.js';
import { loadRequired } from '../loaders.js';

/**
 * Where a lifecycle result sits: the root field's response key, and for an entry of a batch's
 * results (`recordEvents`), its index too.
 */
function resultKeyOf(info: GraphQLResolveInfo, index?: number): string {
  let path = info.path;
  let below: typeof path | undefined;
  while (path.prev) {
    below = path;
    path = path.prev;
  }
  const at = index ?? (typeof below?.key === 'number' ? below.key : undefined);
  return at === undefined ? String(path.key) : `${path.key}.${at}`;
}

/**
 * Called by a worker's lifecycle mutation once it succeeded (lifecycle.ts): what its result
 * reaches is the worker's own write, scoped to the run whose lease it used; for a batch, per
 * event (`index`).
 */
export function scopeToLeasedRun(context: GraphQLContext, info: GraphQLResolveInfo, runId: string, index?: number): void {
  if (context.principal?.role !== 'worker') return;
  (context.leasedRuns ??= new Map()).set(resultKeyOf(info, index), runId.toLowerCase());
}

/**
 * For a worker inside the result of one of its lifecycle mutations: the run whose lease that
 * mutation used. `undefined` anywhere else, where the ordinary rules apply.
 */
function leasedRunOf(context: GraphQLContext, info: GraphQLResolveInfo): string | undefined {
  if (context.principal?.role !== 'worker' || info.operation.operation !== 'mutation') return undefined;
  return context.leasedRuns?.get(resultKeyOf(info));
}

/**
 * Whether an object of run `runId` (null: of no run, e.g. a thread) may be reached here: inside a
 * worker's lifecycle result only its leased run's, elsewhere by the ordinary rules checked where
 * the read started.
 */
export function mayReachRun(runId: string | null, context: GraphQLContext, info: GraphQLResolveInfo): boolean {
  const leased = leasedRunOf(context, info);
  return leased === undefined || (runId !== null && leased === runId);
}

/**
 * Audit objects are superadmin-on-own-thread data wherever they are reached. The one exception:
 * a worker, in its own lifecycle result, reads the model audit that declared a tool call of its
 * leased run, declared there or executed there (bound through resume ancestry).
 */
export async function mayReadDeclaringAudit(
  toolCall: { id: string; runId: string; threadId: string },
  context: GraphQLContext,
  info: GraphQLResolveInfo,
): Promise<boolean> {
  const principal = context.principal;
  if (!principal) return false;
  if (principal.role === 'worker') {
    const leased = leasedRunOf(context, info);
    if (!leased) return false;
    return toolCall.runId === leased || (await isExecutedInRun(context.deps.db, toolCall.id, leased));
  }
  // A thread deleted since the tool call was read is NOT_FOUND (the loader reads live threads only), as every read of it is, not FORBIDDEN.
  const thread = await loadRequired(context.loaders.thread, toolCall.threadId);
  return canReadAudits(principal, thread);
}
