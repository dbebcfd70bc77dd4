import { requirePrincipal, loadReadableThread } from '../../domain/access.js';
import { encodeCursor, START_COUNTER } from '../../domain/change-cursors.js';
import { badInput } from '../../domain/errors.js';
import { isUuid } from '../../domain/ids.js';
import { appendMessage, createThread, MAX_THREADS_PAGE, readableThreadsPage, threadCursor } from '../../domain/threads.js';
import type { Thread } from '../../generated/prisma/client.js';
import { MAX_THREADS_COUNTED } from '../../shared/thread-counts.js';
import { payloadField } from '../answer-payloads.js';
import { builder, listCost } from '../builder.js';
import { loadRequired } from '../loaders.js';
import { MAX_THREAD_COUNTS_PER_REQUEST } from '../search-limits.js';
import { MessageRoleEnum } from './enums.js';
import { RunRef } from './run.js';

const MAX_HISTORY_PAGE = 1000;
const MAX_RUNS_PAGE = 500;

export const ThreadRef = builder.prismaObject('Thread', {
  description: 'A conversation: its ordinary messages (history) and the runs of the agent in it, owned by the principal who created it.',
  fields: (t) => ({
    id: t.exposeID('id', { description: "The thread's id." }),
    title: t.exposeString('title', { nullable: true, description: 'The title given at creation; null when none was.' }),
    ownerId: t.exposeString('ownerId', { description: 'The `sub` of the principal who created the thread.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When createThread created it.' }),
    messages: t.field({
      type: [MessageRef],
      description: `Ordinary conversation history, oldest first, the first \`first\` messages (0 to ${MAX_HISTORY_PAGE}); with \`after\` (a message of this thread's history), those after it. Never contains audit rows; an \`after\` that is no message of this thread's history reads none.`,
      args: {
        first: t.arg.int({ defaultValue: 100, description: `How many messages at most (0 to ${MAX_HISTORY_PAGE}).` }),
        after: t.arg.id({ description: "A message of this thread's history: read the ones after it." }),
      },
      complexity: ({ first }) => listCost(first, MAX_HISTORY_PAGE),
      // Without the contents (up to MAX_JSON_BYTES each): `content` charges each one's size to
      // the answer before it loads it (answer-payloads.ts).
      resolve: (thread, { first, after }, { loaders }) => {
        if (first == null || first < 0 || first > MAX_HISTORY_PAGE) throw badInput(`first must be between 0 and ${MAX_HISTORY_PAGE}`);
        if (after != null && !isUuid(after)) throw badInput("after must be the id of a message of this thread's history");
        return loaders.threadMessages({ first, after: after ?? null }).load(thread.id);
      },
    }),
    messageCount: t.int({
      description: 'Count of ordinary messages. Audit rows are never counted.',
      resolve: (thread, _args, { loaders }) => loaders.chatMessageCount.load(thread.id),
    }),
    runs: t.field({
      type: [RunRef],
      description: `The thread's runs in creation order, the first \`first\` of them (1 to ${MAX_RUNS_PAGE}); with \`after\` (a run of this thread), those created after it. An \`after\` of no run of this thread reads none.`,
      args: {
        first: t.arg.int({ defaultValue: 100, description: `How many runs at most (1 to ${MAX_RUNS_PAGE}).` }),
        after: t.arg.id({ description: 'A run of this thread: read the runs created after it.' }),
      },
      complexity: ({ first }) => listCost(first, MAX_RUNS_PAGE),
      // Read for a page of threads at once (loaders.ts), without their errors (Run.error loads one when asked).
      resolve: (thread, { first, after }, { loaders }) => {
        if (first == null || first < 1 || first > MAX_RUNS_PAGE) throw badInput(`first must be between 1 and ${MAX_RUNS_PAGE}`);
        if (after != null && !isUuid(after)) throw badInput('after must be the id of a run of this thread');
        return loaders.threadRuns({ first, after: after ?? null }).load(thread.id);
      },
    }),
    latestRun: t.field({
      type: RunRef,
      nullable: true,
      description: 'The most recently created run of the thread, for thread lists.',
      resolve: async (thread, _args, { loaders }) => (await loaders.threadRuns({ first: 1, after: null, newestFirst: true }).load(thread.id))[0] ?? null,
    }),
    changeCursor: t.string({
      description: "The cursor of the thread's latest committed change (see ThreadChange).",
      resolve: (thread, _args, { deps }) => encodeCursor(deps.databaseId, thread.id, thread.changeCursor),
    }),
    startCursor: t.string({
      description:
        'The cursor before the thread\'s first change: `threadChanges(after: startCursor)` first delivers every run and audit of the thread, each once in its latest state, then continues live (a whole copy read as the changes after it are; docs/subscriptions.md, "Copying threads into a warehouse").',
      resolve: (thread, _args, { deps }) => encodeCursor(deps.databaseId, thread.id, START_COUNTER),
    }),
  }),
});

export const PageInfoRef = builder.objectRef<{ hasNextPage: boolean; endCursor: string | null }>('PageInfo').implement({
  description: 'Where a page ends (Relay connection).',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', { description: 'More items follow: pass `endCursor` as `after` to read them.' }),
    endCursor: t.exposeString('endCursor', { nullable: true, description: "The cursor of the page's last item; null for an empty page." }),
  }),
});

const ThreadEdgeRef = builder.objectRef<Thread>('ThreadEdge').implement({
  description: 'A thread of a page, with its position.',
  fields: (t) => ({
    cursor: t.string({
      description: "The thread's position in the newest-first order (an opaque string): pass it as `after` to read the threads after it.",
      resolve: (thread) => threadCursor(thread),
    }),
    node: t.field({ type: ThreadRef, description: 'The thread.', resolve: (thread) => thread }),
  }),
});

const ThreadConnectionRef = builder
  .objectRef<{ threads: Thread[]; hasNextPage: boolean; count: () => Promise<number> }>('ThreadConnection')
  .implement({
    description: 'A page of threads, newest first (Relay connection).',
    fields: (t) => ({
      // The page's size is counted once, on `threads(first)`.
      edges: t.field({
        type: [ThreadEdgeRef],
        description: "The page's threads, newest first.",
        complexity: { field: 1, multiplier: 1 },
        resolve: (page) => page.threads,
      }),
      totalCount: t.int({
        description: `How many threads match \`title\` and \`ownerId\` on every page (not only after \`after\`), counted when read, up to ${(MAX_THREADS_COUNTED + 1).toLocaleString('en')}: ${(MAX_THREADS_COUNTED + 1).toLocaleString('en')} means more than ${MAX_THREADS_COUNTED.toLocaleString('en')} (the page shows "${MAX_THREADS_COUNTED.toLocaleString('en')}+"), so a count reads at most that many threads, however many the server holds. At most ${MAX_THREAD_COUNTS_PER_REQUEST} counts per request (aliases and fragments included), else BAD_USER_INPUT before anything runs.`,
        resolve: (page) => page.count(),
      }),
      pageInfo: t.field({
        type: PageInfoRef,
        description: 'Whether more threads follow, and the cursor to read them.',
        resolve: ({ threads, hasNextPage }) => ({
          hasNextPage,
          endCursor: threads.length ? threadCursor(threads[threads.length - 1]!) : null,
        }),
      }),
    }),
  });

const MessageRef = builder.prismaObject('Message', {
  description: 'An ordinary conversation message (history, memory and dashboard views read these).',
  fields: (t) => ({
    id: t.exposeID('id', { description: "The message's id (an `after` of Thread.messages)." }),
    role: t.expose('role', { type: MessageRoleEnum, description: 'Who the message speaks for, as appended.' }),
    content: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The content as appended (any JSON).',
      // Reads leave it out (`messages`); a mutation's own row holds it.
      resolve: (message, _args, { loaders }) =>
        payloadField(
          (message as Partial<Pick<typeof message, 'content'>>).content,
          async () => (await loadRequired(loaders.messageContentBytes, message.id)).contentBytes,
          async () => (await loadRequired(loaders.messageContent, message.id)).content,
        ),
    }),
    contentBytes: t.int({
      nullable: true,
      description: 'The bytes of `content` as stored (its JSON text), null when it has none: read it before a large content.',
      resolve: async (message, _args, { loaders }) => (await loadRequired(loaders.messageContentBytes, message.id)).contentBytes,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When appendMessage appended it.' }),
  }),
});

// Apart from the type: a thread's history and its messages' thread name each other.
builder.objectField(MessageRef, 'thread', (t) =>
  t.field({
    type: ThreadRef,
    description:
      "The thread whose history holds it. Select it in appendMessage's answer to update the thread (`messageCount`, `messages`) in a client's cache without reading it again.",
    resolve: (message, _args, { loaders }) => loadRequired(loaders.thread, message.threadId),
  })
);

const CreateThreadInput = builder.inputType('CreateThreadInput', {
  description: 'A thread to create: an optional title and idempotency key.',
  fields: (t) => ({
    title: t.string({ description: "The thread's title (at most 1,000 characters); none leaves it null." }),
    createId: t.string({
      description:
        "The caller's idempotency key for this creation (1 to 256 characters). The same caller sending\nthe same createId again gets the thread the first send created, instead of a second one; with\nanother title it is CONFLICT. Keys are per caller, and a deleted thread's key is free again.",
    }),
  }),
});

const AppendMessageInput = builder.inputType('AppendMessageInput', {
  description: "One ordinary message to append to a thread's history (never an audit).",
  fields: (t) => ({
    threadId: t.id({ required: true, description: 'The thread to append it to.' }),
    role: t.field({ type: MessageRoleEnum, required: true, description: 'Who the message speaks for.' }),
    content: t.field({ type: 'JSON', required: true, description: 'The content: any JSON value (at most MAX_JSON_BYTES).' }),
  }),
});

builder.queryField('threads', (t) =>
  t.field({
    type: ThreadConnectionRef,
    description:
      'Threads the caller may read (its own; every thread for admins and superadmins), newest first. `first` is 1 to 100.',
    authScopes: { authenticated: true },
    args: {
      first: t.arg.int({ defaultValue: 20, description: `How many threads at most (1 to ${MAX_THREADS_PAGE}).` }),
      after: t.arg.string({ description: "A previous page's `endCursor` (or an edge's `cursor`): read the threads after it." }),
      title: t.arg.string({ description: 'Only threads whose title holds this text (any case); pass the same `title` with `after`.' }),
      ownerId: t.arg.string({
        description: "Only threads of this owner (the `sub` of the token that created them), e.g. to erase one person's threads (docs/deletion.md); pass the same `ownerId` with `after`.",
      }),
    },
    complexity: ({ first }) => listCost(first, MAX_THREADS_PAGE),
    resolve: (_root, { first, after, title, ownerId }, { deps, principal }) =>
      readableThreadsPage(deps.db, requirePrincipal(principal), { first: first ?? 20, after, title, ownerId }),
  }),
);

builder.queryField('thread', (t) =>
  t.field({
    type: ThreadRef,
    nullable: true,
    description:
      'A thread by id: its owner, an admin or a superadmin (anyone else is FORBIDDEN); a thread that does not exist, or whose deletion began, is NOT_FOUND.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true, description: "The thread's id." }) },
    // Its lists and counts are read below it, each with the thread's deletion mark (loaders.ts).
    resolve: (_root, { id }, { deps, principal }) => loadReadableThread(deps.db, requirePrincipal(principal), id),
  }),
);

builder.mutationFields((t) => ({
  createThread: t.prismaField({
    type: 'Thread',
    description: 'Any authenticated user; the caller becomes the owner.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateThreadInput, required: true, description: 'Its title and idempotency key.' }) },
    resolve: (_query, _root, { input }, { deps, principal }) => createThread(deps, requirePrincipal(principal), input),
  }),
  appendMessage: t.prismaField({
    type: 'Message',
    description: 'The thread owner, an admin or a superadmin. Ordinary history only.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: AppendMessageInput, required: true, description: 'The thread, and the role and content of the message.' }) },
    resolve: (_query, _root, { input }, { deps, principal }) => appendMessage(deps, requirePrincipal(principal), input),
  }),
}));
