import { filter, pipe } from 'graphql-yoga';
import { loadAuditThread, loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { createLoaders } from '../loaders.js';
import { AuditRef, ToolAuditRef } from './audit.js';

/**
 * Payloads carry ids only; every delivery re-reads the committed row, with fresh per-event
 * caches so the second event of a stream is never served stale data.
 */
function freshRead(context: GraphQLContext) {
  context.loaders = createLoaders(context.deps.prisma);
  return context.deps.prisma;
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
        pubsub.subscribe('audit', thread.id),
        filter((event) => event.role === 'TOOL' && (!runId || event.runId === runId)),
      );
    },
    resolve: (event, _args, context) => freshRead(context).message.findUniqueOrThrow({ where: { id: event.auditId } }),
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
    resolve: (event, _args, context) => freshRead(context).message.findUniqueOrThrow({ where: { id: event.auditId } }),
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
    resolve: (query, event, _args, context) =>
      freshRead(context).run.findUniqueOrThrow({ ...query, where: { id: event.runId } }),
  }),
}));
