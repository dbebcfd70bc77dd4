import { initContextCache } from '@pothos/core';
import { createGraphQLError } from 'graphql-yoga';
import { loadAuditThread, loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { perEvent } from '../../realtime/per-event.js';
import { StreamInterrupted, type Delivery } from '../../realtime/pubsub.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { createLoaders, loadRequired, type Loaders } from '../loaders.js';
import { AuditRef, ToolAuditRef } from './audit.js';
import { RunRef } from './run.js';

/**
 * A stream that could not deliver every event (its subscriber fell behind, Redis went away, its
 * token expired) ends with this error; docs/subscriptions.md tells clients to re-read and subscribe again.
 */
function payloadOf<E>(delivery: E | StreamInterrupted): E {
  if (delivery instanceof StreamInterrupted) {
    throw createGraphQLError(delivery.message, {
      extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: delivery.reason },
    });
  }
  return delivery;
}

/** One set of loaders per published event, shared by every subscriber that receives it. */
const loadersOnce = perEvent<Loaders>();

/**
 * One delivery: unwrap the event and give the long-lived subscription context fresh caches for it.
 * Payloads carry ids only; the committed rows are read through the event's loaders, so each row
 * (and each relation the selections reach) is read once per event however many subscribers and
 * documents receive it (docs/subscriptions.md). A subscriber reads an event only after the
 * previous one, so what it sees never goes backwards. Pothos' per-context caches are replaced too:
 * the second event is never served what the first one decided.
 */
function loadersFor<E extends object>(delivery: E | StreamInterrupted, context: GraphQLContext): { event: E; loaders: Loaders } {
  const event = payloadOf(delivery);
  context.loaders = loadersOnce(event, 'loaders', () => createLoaders(context.deps));
  Object.assign(context, initContextCache());
  return { event, loaders: context.loaders };
}

const deliveredAudit = (delivery: Delivery<'audit'>, context: GraphQLContext) => {
  const { event, loaders } = loadersFor(delivery, context);
  return loadRequired(loaders.audit, event.auditId);
};

builder.subscriptionFields((t) => ({
  toolStatusChanged: t.field({
    type: ToolAuditRef,
    description: 'Every tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }), runId: t.arg.id() },
    subscribe: async (_root, { threadId, runId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadAuditThread(deps.prisma, viewer, threadId);
      return pubsub.subscribe('audit', thread.id, {
        accept: (event) => event.role === 'TOOL' && (!runId || event.runId === runId),
        endsAtMs: viewer.expiresAtMs,
      });
    },
    resolve: (delivery, _args, context) => deliveredAudit(delivery, context),
  }),
  auditChanged: t.field({
    type: AuditRef,
    description: 'Every model or tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadAuditThread(deps.prisma, viewer, threadId);
      return pubsub.subscribe('audit', thread.id, { endsAtMs: viewer.expiresAtMs });
    },
    resolve: (delivery, _args, context) => deliveredAudit(delivery, context),
  }),
  runChanged: t.field({
    type: RunRef,
    description: 'Every run status change in the thread. The thread owner or an admin.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadReadableThread(deps.prisma, viewer, threadId);
      return pubsub.subscribe('run', thread.id, { endsAtMs: viewer.expiresAtMs });
    },
    resolve: (delivery, _args, context) => {
      const { event, loaders } = loadersFor(delivery, context);
      return loadRequired(loaders.run, event.runId);
    },
  }),
}));
