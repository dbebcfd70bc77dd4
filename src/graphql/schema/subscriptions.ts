import { initContextCache } from '@pothos/core';
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { GraphQLResolveInfo } from 'graphql';
import { createGraphQLError } from 'graphql-yoga';
import { loadAuditThread, loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { perEvent } from '../../realtime/per-event.js';
import { StreamInterrupted } from '../../realtime/pubsub.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { createLoaders, type Loaders } from '../loaders.js';
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
 * Payloads carry ids only; the committed row is read once per published event and selection, when
 * the first subscriber receives it, and shared by all the others (docs/subscriptions.md). A
 * subscriber reads an event only after the previous one, so what it sees never goes backwards.
 */
const readOnce = perEvent<Promise<unknown>>();
const loadersOnce = perEvent<Loaders>();

/**
 * The context lives as long as the stream, so its caches (our loaders, Pothos' per-context caches)
 * are replaced per event: the second event is never served what the first one read. The loaders
 * (rows, no decisions) are shared by every subscriber of the event, so its relations are read once.
 */
function freshContext(context: GraphQLContext, event: object): GraphQLContext {
  context.loaders = loadersOnce(event, 'loaders', () => createLoaders(context.deps));
  Object.assign(context, initContextCache());
  return context;
}

/**
 * One delivery: unwrap the event, replace the caches, then plan the Prisma query (planning
 * registers what it loads in the fresh caches) and read the row once per event and selection.
 */
function readDelivered<E extends object, Row>(
  delivery: E | StreamInterrupted,
  context: GraphQLContext,
  info: GraphQLResolveInfo,
  read: (event: E, query: object) => Promise<Row>,
): Promise<Row> {
  const event = payloadOf(delivery);
  const query = queryFromInfo({ context: freshContext(context, event), info });
  return readOnce(event, JSON.stringify(query), () => read(event, query)) as Promise<Row>;
}

builder.subscriptionFields((t) => ({
  toolStatusChanged: t.field({
    type: ToolAuditRef,
    description: 'Every tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }), runId: t.arg.id() },
    subscribe: async (_root, { threadId, runId }, { deps, principal, pubsub }) => {
      const thread = await loadAuditThread(deps.prisma, requirePrincipal(principal), threadId);
      return pubsub.subscribe('audit', thread.id, (event) => event.role === 'TOOL' && (!runId || event.runId === runId));
    },
    resolve: (delivery, _args, context, info) =>
      readDelivered(delivery, context, info, (event, query) =>
        context.deps.prisma.message.findUniqueOrThrow({ ...query, where: { id: event.auditId } }),
      ),
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
    resolve: (delivery, _args, context, info) =>
      readDelivered(delivery, context, info, (event, query) =>
        context.deps.prisma.message.findUniqueOrThrow({ ...query, where: { id: event.auditId } }),
      ),
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
    // The query is planned again after the caches are replaced (readDelivered), not taken from here.
    resolve: (_query, delivery, _args, context, info) =>
      readDelivered(delivery, context, info, (event, query) =>
        context.deps.prisma.run.findUniqueOrThrow({ ...query, where: { id: event.runId } }),
      ),
  }),
}));
