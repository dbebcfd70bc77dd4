import { getArgumentValues, Kind, type FieldNode, type GraphQLResolveInfo } from 'graphql';
import { canReadAudits, isExecutedInRun } from '../../domain/access.js';
import type { GraphQLContext } from '../context.js';

/** The worker write path (lifecycle.ts): what these return is the calling worker's own write. */
const LIFECYCLE_MUTATIONS = new Set([
  'claimRun',
  'renewLease',
  'recordModelStarted',
  'recordModelFinished',
  'recordToolStarted',
  'recordToolFinished',
  'recordToolError',
  'finishRun',
]);

/** The root field `info` sits under (aliases resolved). */
function rootFieldOf(info: GraphQLResolveInfo): FieldNode | undefined {
  let path = info.path;
  while (path.prev) path = path.prev;
  for (const selection of info.operation.selectionSet.selections) {
    if (selection.kind === Kind.FIELD && (selection.alias?.value ?? selection.name.value) === path.key) return selection;
  }
  return undefined;
}

/**
 * For a worker inside the result of one of its lifecycle mutations: the run whose lease that
 * mutation used (the mutation succeeded, so the worker holds it). `undefined` anywhere else,
 * where the ordinary rules apply.
 */
function leasedRunOf(context: GraphQLContext, info: GraphQLResolveInfo): string | null | undefined {
  if (context.principal?.role !== 'worker' || info.operation.operation !== 'mutation') return undefined;
  const root = rootFieldOf(info);
  const definition = root && LIFECYCLE_MUTATIONS.has(root.name.value) ? info.schema.getMutationType()?.getFields()[root.name.value] : undefined;
  if (!root || !definition) return undefined;
  const args = getArgumentValues(definition, root, info.variableValues) as {
    lease?: { runId?: string };
    input?: { runId?: string; lease?: { runId?: string } };
  };
  const runId = args.input?.lease?.runId ?? args.lease?.runId ?? args.input?.runId;
  return runId?.toLowerCase() ?? null;
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
    return toolCall.runId === leased || (await isExecutedInRun(context.deps.read, toolCall.id, leased));
  }
  const thread = await context.loaders.thread.load(toolCall.threadId);
  return thread !== null && canReadAudits(principal, thread);
}
