import type { GraphQLResolveInfo } from 'graphql';
import { canReadAudits } from '../../domain/access.js';
import type { GraphQLContext } from '../context.js';

/**
 * Audit objects are superadmin-on-own-thread data wherever they are reached. The one exception:
 * a worker reads what its own lifecycle mutation returned.
 */
export async function mayReadAuditsOf(threadId: string, context: GraphQLContext, info: GraphQLResolveInfo): Promise<boolean> {
  const principal = context.principal;
  if (!principal) return false;
  if (principal.role === 'worker') return info.operation.operation === 'mutation';
  const ownerId = await context.loaders.threadOwner.load(threadId);
  return ownerId !== null && canReadAudits(principal, { id: threadId, ownerId });
}
