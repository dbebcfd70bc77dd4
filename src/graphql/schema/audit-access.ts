import { Kind, type GraphQLResolveInfo } from 'graphql';
import { canReadAudits } from '../../domain/access.js';
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

/** The root field `info` sits under, by name (aliases resolved). */
function rootFieldName(info: GraphQLResolveInfo): string | undefined {
  let path = info.path;
  while (path.prev) path = path.prev;
  for (const selection of info.operation.selectionSet.selections) {
    if (selection.kind === Kind.FIELD && (selection.alias?.value ?? selection.name.value) === path.key) {
      return selection.name.value;
    }
  }
  return undefined;
}

/**
 * Audit objects are superadmin-on-own-thread data wherever they are reached. The one exception:
 * a worker reads what its own lifecycle mutation returned.
 */
export async function mayReadAuditsOf(threadId: string, context: GraphQLContext, info: GraphQLResolveInfo): Promise<boolean> {
  const principal = context.principal;
  if (!principal) return false;
  if (principal.role === 'worker') {
    return info.operation.operation === 'mutation' && LIFECYCLE_MUTATIONS.has(rootFieldName(info) ?? '');
  }
  const thread = await context.loaders.thread.load(threadId);
  return thread !== null && canReadAudits(principal, thread);
}
