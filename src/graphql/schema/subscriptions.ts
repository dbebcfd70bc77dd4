import { createGraphQLError } from 'graphql-yoga';
import { loadAuditThread, loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { decodeCursor, encodeCursor } from '../../domain/change-cursors.js';
import type { CommittedChange } from '../../domain/events.js';
import { runOfThread, runStatusChanges } from '../../domain/runs.js';
import type { Message, Run, Thread } from '../../generated/prisma/client.js';
import { deliveredWith } from '../../realtime/per-event.js';
import { StreamInterrupted, type Delivery } from '../../realtime/pubsub.js';
import { builder } from '../builder.js';
import { echoed } from '../errors.js';
import type { GraphQLContext } from '../context.js';
import { createLoaders, loadersForEvent, primedForBurst } from '../loaders.js';
import { AuditRef, ToolAuditRef } from './audit.js';
import { RunRef } from './run.js';

/** Only the server stopping or the token expiring ends a stream early (SEMANTICS.md, "Subscriptions"). */
function payloadOf(delivery: Delivery): CommittedChange {
  if (delivery instanceof StreamInterrupted) {
    throw createGraphQLError(delivery.message, {
      extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: delivery.reason },
    });
  }
  return delivery;
}

/**
 * One delivery: the change carries its entity as committed by that change, never re-read. Its
 * nested fields (an audit's run, tool call, declaring model call) are read when it is delivered,
 * through loaders fresh for this change and shared by its subscribers; those of changes delivered
 * together, one after another (a catch-up page, one command's or batch's changes), are read
 * together when the first of them is delivered (primedForBurst). Pothos' per-context caches are
 * replaced too, so the second change is never served what the first one decided.
 */
function committed(delivery: Delivery, context: GraphQLContext): CommittedChange {
  const change = payloadOf(delivery);
  const burst = deliveredWith(change) as readonly CommittedChange[] | undefined;
  if (burst === undefined) loadersForEvent(context, change, () => createLoaders(context.deps));
  else loadersForEvent(context, burst, () => primedForBurst(createLoaders(context.deps), burst));
  return change;
}

const runIdOf = (change: CommittedChange) => (change.kind === 'run' ? change.row.id : change.row.runId);

/**
 * The cursor a threadChanges stream resumes after: SSE's Last-Event-ID (a reconnecting
 * EventSource) wins over `after`. An empty Last-Event-ID is none, as the SSE standard has it (an
 * EventSource whose last event ID is empty sends no header), so `after` applies; an empty `after`
 * is a cursor like any other given one, and malformed.
 */
function resumeCursor(thread: Thread, after: string | null | undefined, context: GraphQLContext): bigint | undefined {
  const text = context.request?.headers.get('last-event-id') || after;
  // No cursor is longer than 100 characters: one cut by `echoed` is malformed, and quoted cut.
  return text == null ? undefined : decodeCursor(context.deps.databaseId, thread, echoed(text));
}

interface ThreadChangeShape {
  cursor: string;
  committedAt: Date;
  audit: Message | null;
  run: Run | null;
}

const ThreadChangeRef = builder.objectRef<ThreadChangeShape>('ThreadChange').implement({
  description:
    'One committed change of a thread, in the thread\'s commit order. Exactly one of `audit` and\n`run` is set; it shows that entity as committed by this change (never a later state).',
  fields: (t) => ({
    cursor: t.exposeString('cursor', { description: 'Strictly increasing within the thread; pass it as `after` to resume after this change.' }),
    committedAt: t.expose('committedAt', { type: 'DateTime', description: "When the change was made (the database's clock)." }),
    audit: t.field({
      type: AuditRef,
      nullable: true,
      description: 'The model or tool audit as this change left it; null for a change of a run.',
      resolve: (change) => change.audit,
    }),
    run: t.field({ type: RunRef, nullable: true, description: 'The run as this change left it; null for a change of an audit.', resolve: (change) => change.run }),
  }),
});

const watchedThread = { description: 'The thread to follow.' };
const onlyRun = { description: "Only this run's changes (a run of this thread, else BAD_USER_INPUT)." };

builder.subscriptionFields((t) => ({
  toolStatusChanged: t.field({
    type: ToolAuditRef,
    description: 'Every tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true, ...watchedThread }), runId: t.arg.id(onlyRun) },
    subscribe: async (_root, { threadId, runId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadAuditThread(deps.db, viewer, threadId);
      const run = runId == null ? null : await runOfThread(deps.db, thread.id, runId);
      return pubsub.subscribe('audit', thread.id, {
        accept: (change) => change.kind === 'audit' && change.row.role === 'TOOL' && (!run || change.row.runId === run),
        endsAtMs: viewer.expiresAtMs,
      });
    },
    resolve: (delivery: Delivery, _args, context) => committed(delivery, context).row as Message,
  }),
  auditChanged: t.field({
    type: AuditRef,
    description: 'Every model or tool audit change in the thread, after it is committed. Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true, ...watchedThread }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadAuditThread(deps.db, viewer, threadId);
      return pubsub.subscribe('audit', thread.id, { accept: (change) => change.kind === 'audit', endsAtMs: viewer.expiresAtMs });
    },
    resolve: (delivery: Delivery, _args, context) => committed(delivery, context).row as Message,
  }),
  runChanged: t.field({
    type: RunRef,
    description: 'Every run status change in the thread. The thread owner, an admin or a superadmin.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true, ...watchedThread }) },
    subscribe: async (_root, { threadId }, { deps, principal, pubsub }) => {
      const viewer = requirePrincipal(principal);
      const thread = await loadReadableThread(deps.db, viewer, threadId);
      return pubsub.subscribe('run', thread.id, {
        accept: await runStatusChanges(deps.db, thread.id),
        endsAtMs: viewer.expiresAtMs,
      });
    },
    resolve: (delivery: Delivery, _args, context) => committed(delivery, context).row as Run,
  }),
  threadChanges: t.field({
    type: ThreadChangeRef,
    description:
      'Every committed change of the thread\'s runs and audits, each with its cursor. With `after`,\nfirst every change committed after that cursor, then live; resumable, gapless, no\nduplicates (docs/semantics.md, "Change cursors"). Same access rule as threadAudits.',
    authScopes: { authenticated: true },
    args: {
      threadId: t.arg.id({ required: true, ...watchedThread }),
      after: t.arg.string({
        description:
          "A cursor of this thread (a ThreadChange's, threadAudits' or Thread.changeCursor or startCursor): first every change committed after it. An SSE request's Last-Event-ID takes its place.",
      }),
      runId: t.arg.id(onlyRun),
    },
    subscribe: async (_root, { threadId, after, runId }, context) => {
      const viewer = requirePrincipal(context.principal);
      const thread = await loadAuditThread(context.deps.db, viewer, threadId);
      const run = runId == null ? null : await runOfThread(context.deps.db, thread.id, runId);
      return context.pubsub.subscribe('changes', thread.id, {
        after: resumeCursor(thread, after, context),
        accept: (change) => !run || runIdOf(change) === run,
        endsAtMs: viewer.expiresAtMs,
      });
    },
    resolve: (delivery: Delivery, _args, context) => {
      const change = committed(delivery, context);
      return {
        cursor: encodeCursor(context.deps.databaseId, change.threadId, change.cursor),
        committedAt: change.committedAt,
        audit: change.kind === 'audit' ? change.row : null,
        run: change.kind === 'run' ? change.row : null,
      };
    },
  }),
}));
