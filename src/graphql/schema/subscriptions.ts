import { initContextCache } from '@pothos/core';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { createGraphQLError, filter, pipe } from 'graphql-yoga';
import { loadAuditThread, loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { StreamInterrupted } from '../../realtime/pubsub.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { createLoaders } from '../loaders.js';
import { AuditRef, ToolAuditRef } from './audit.js';

/**
 * A stream that could not deliver every event (its subscriber fell behind, or Redis went away)
 * ends with this error; docs/subscriptions.md tells clients to re-read and subscribe again.
 */
function payloadOf<E>(delivery: E | StreamInterrupted): E {
  if (delivery instanceof StreamInterrupted) {
    throw createGraphQLError(delivery.message, {
      extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: delivery.reason },
    });
  }
  return delivery;
}

/**
 * Payloads carry ids only; every delivery re-reads the committed row. The context lives as long
 * as the stream, so its caches (our loaders, Pothos' per-context caches) are replaced per event:
 * the second event is never served what the first one read.
 */
function freshContext(context: GraphQLContext): GraphQLContext {
  context.loaders = createLoaders(context.deps.prisma);
  Object.assign(context, initContextCache());
  return context;
}

builder.subscriptionFields((t) => ({
  toolStatusChanged: t.field({
    type: ToolAuditRef,
    description: 'Every tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }), runId: t.arg.id() },
    subscribe: async (_root, { threadId, runId }, { deps, principal, pubsub }) => {
      const thread = await loadAuditThread(deps.prisma, requirePrincipal(principal), threadId);
      return pipe(
        await pubsub.subscribe('audit', thread.id),
        filter(
          (event) => event instanceof StreamInterrupted || (event.role === 'TOOL' && (!runId || event.runId === runId)),
        ),
      );
    },
    resolve: (delivery, _args, context, info) => {
      const { auditId } = payloadOf(delivery);
      freshContext(context);
      return context.deps.prisma.message.findUniqueOrThrow({ ...queryFromInfo({ context, info }), where: { id: auditId } });
    },
  }),
  auditChanged: t.field({
    type: AuditRef,
    description: 'Every model or tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const thread = await loadAuditThread(deps.prisma, requirePrincipal(principal), threadId);
      return pubsub.subscribe('audit', thread.id);
    },
    resolve: (delivery, _args, context, info) => {
      const { auditId } = payloadOf(delivery);
      freshContext(context);
      return context.deps.prisma.message.findUniqueOrThrow({ ...queryFromInfo({ context, info }), where: { id: auditId } });
    },
  }),
  runChanged: t.prismaField({
    type: 'Run',
    description: 'Every run status change in the thread. The thread owner or an admin.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const thread = await loadReadableThread(deps.prisma, requirePrincipal(principal), threadId);
      return pubsub.subscribe('run', thread.id);
    },
    // The query is computed again after the caches are replaced: it registers what it loads in them.
    resolve: (_query, delivery, _args, context, info) => {
      const { runId } = payloadOf(delivery);
      freshContext(context);
      return context.deps.prisma.run.findUniqueOrThrow({ ...queryFromInfo({ context, info }), where: { id: runId } });
    },
  }),
}));
