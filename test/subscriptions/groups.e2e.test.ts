import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { claim, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { startTestApp } from '../support/app.js';
import { delivered, payloads, subscribeOn, subscribeSse, subscribeWs, waitFor, wsClient, type Stream } from '../support/streams.js';
import { startListeningApp, testRedisUrl, type ListeningApp } from './support.js';

// docs/subscriptions.md, "Many subscribers": graphql-ws subscriptions with the same document,
// variables and principal share one execution per event. Each of them must still receive every
// event in order, start only if its own access check passes, fall behind on its own, and stop
// costing anything when it leaves.

const TOOL_STATUS = `subscription($threadId: ID!, $runId: ID) {
  toolStatusChanged(threadId: $threadId, runId: $runId) { id runId toolCallId status toolCall { status } }
}`;
const AUDIT_INPUTS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id ... on ToolAudit { effectiveInput } } }`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const audits = (threadId: string) => t.app.pubsub.subscriberCount('audit', threadId);

/** `n` graphql-ws subscriptions of `query`, each on its own connection, live once this resolves. */
async function subscribeMany(n: number, query: string, variables: { threadId: string } & Record<string, unknown>, token: string, topic: 'audit' | 'run' = 'audit') {
  const before = t.app.pubsub.subscriberCount(topic, variables.threadId);
  const streams = Array.from({ length: n }, () => subscribeWs(t.url, query, variables, token));
  for (const stream of streams) onTestFinished(() => stream.close());
  await waitFor(() => t.app.pubsub.subscriberCount(topic, variables.threadId) === before + n, `${n} subscriptions to be live`);
  return streams;
}

describe('identical graphql-ws subscriptions', () => {
  it('each receives every event, in commit order', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await session.declare('m1', [
      { id: 'c1', name: 'a' },
      { id: 'c2', name: 'b' },
    ]);
    const streams = await subscribeMany(3, TOOL_STATUS, { threadId }, owner);

    // Payloads are read at delivery (docs/subscriptions.md): each change is let through before
    // the next one commits, so every payload shows its own event's state.
    must(await session.toolStarted('c1', 'a'));
    await delivered(streams, 1, 'toolStatusChanged');
    must(await session.toolStarted('c2', 'b'));
    await delivered(streams, 2, 'toolStatusChanged');
    must(await session.toolFinished('c2', { content: 'b done' }));
    await delivered(streams, 3, 'toolStatusChanged');
    must(await session.toolFinished('c1', { content: 'a done' }));
    for (const events of await delivered(streams, 4, 'toolStatusChanged')) {
      expect(events.map((e) => `${e.toolCallId}:${e.status}`)).toEqual(['c1:RUNNING', 'c2:RUNNING', 'c2:COMPLETED', 'c1:COMPLETED']);
    }
    // A subscriber joining later receives what is committed from then on, like any other.
    const [late] = await subscribeMany(1, TOOL_STATUS, { threadId }, owner);
    await session.declare('m2', [{ id: 'c3', name: 'c' }]);
    must(await session.toolStarted('c3', 'c'));
    for (const events of await delivered(streams, 5, 'toolStatusChanged')) expect(events[4]).toMatchObject({ toolCallId: 'c3', status: 'RUNNING' });
    expect(payloads(await late!.take(1), 'toolStatusChanged')).toMatchObject([{ toolCallId: 'c3', status: 'RUNNING' }]);
  });

  it('several on one connection, with other subscriptions beside them: each frame carries its own id and result', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'a' }]);
    const client = wsClient(t.url, owner);
    onTestFinished(() => client.dispose());
    const before = audits(threadId);
    // The shared result is serialized once and spliced into each frame (src/transports/websocket.ts).
    const same = [subscribeOn(client, TOOL_STATUS, { threadId }), subscribeOn(client, TOOL_STATUS, { threadId })];
    const inputs = subscribeOn(client, AUDIT_INPUTS, { threadId });
    for (const stream of [...same, inputs]) onTestFinished(() => stream.close());
    await waitFor(() => audits(threadId) === before + 3, '3 subscriptions to be live');

    must(await session.toolStarted('c1', 'a', { effectiveInput: { q: 'x' } }));
    await delivered(same, 1, 'toolStatusChanged');
    must(await session.toolFinished('c1', { content: 'done' }));
    for (const events of await delivered(same, 2, 'toolStatusChanged')) {
      expect(events).toMatchObject([
        { toolCallId: 'c1', status: 'RUNNING', toolCall: { status: 'RUNNING' } },
        { toolCallId: 'c1', status: 'COMPLETED', toolCall: { status: 'COMPLETED' } },
      ]);
    }
    expect(payloads(await inputs.take(2), 'auditChanged')).toEqual([
      { id: expect.any(String), effectiveInput: { q: 'x' } },
      { id: expect.any(String), effectiveInput: { q: 'x' } },
    ]);
  });

  it('subscriptions with different variables are not mixed: each gets its own run', async () => {
    const first = await runningRun(t);
    const secondRunId = await createRun(t, first.owner, first.threadId);
    const second = await claim(t, first.worker, secondRunId);
    await first.session.declare('m1', [{ id: 'call-1', name: 'a' }]);
    await second.declare('m1', [{ id: 'call-2', name: 'b' }]);
    const { threadId, owner } = first;
    const firstOnly = await subscribeMany(2, TOOL_STATUS, { threadId, runId: first.runId }, owner);
    const secondOnly = await subscribeMany(2, TOOL_STATUS, { threadId, runId: secondRunId }, owner);
    const all = await subscribeMany(1, TOOL_STATUS, { threadId }, owner);

    // Each change is delivered everywhere before the next commits (payloads are read at delivery).
    must(await first.session.toolStarted('call-1', 'a'));
    await delivered([...all, ...firstOnly], 1, 'toolStatusChanged');
    must(await second.toolStarted('call-2', 'b'));
    await delivered([...all, ...secondOnly], 1, 'toolStatusChanged');
    await delivered(all, 2, 'toolStatusChanged');
    must(await first.session.toolFinished('call-1', { content: 'done' }));
    const fence = await delivered(all, 3, 'toolStatusChanged');
    expect(fence[0]!.map((e) => `${e.toolCallId}:${e.status}`)).toEqual(['call-1:RUNNING', 'call-2:RUNNING', 'call-1:COMPLETED']);
    for (const events of await delivered(firstOnly, 2, 'toolStatusChanged')) {
      expect(events).toMatchObject([
        { runId: first.runId, toolCallId: 'call-1', status: 'RUNNING' },
        { runId: first.runId, toolCallId: 'call-1', status: 'COMPLETED' },
      ]);
    }
    for (const events of await delivered(secondOnly, 1, 'toolStatusChanged')) {
      expect(events).toMatchObject([{ runId: secondRunId, toolCallId: 'call-2', status: 'RUNNING' }]);
    }
    // Nothing more arrived: everything of the thread was delivered to `all` after these.
    for (const stream of firstOnly) expect(stream.results).toHaveLength(2);
    for (const stream of secondOnly) expect(stream.results).toHaveLength(1);
  });

  it('a principal without access is refused with the same document, while the others keep receiving', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'a' }]);
    const members = await subscribeMany(2, TOOL_STATUS, { threadId }, owner);

    const stranger = subscribeWs(t.url, TOOL_STATUS, { threadId }, await t.token('someone-else', 'superadmin'));
    onTestFinished(() => stranger.close());
    const [refusal] = await stranger.take(1);
    expect(refusal?.data ?? null).toBeNull();
    expect(refusal?.errors?.map((error) => error.extensions?.code)).toEqual(['NOT_FOUND']);
    expect(await stranger.ended()).toEqual({ kind: 'complete' });

    must(await session.toolStarted('c1', 'a'));
    for (const events of await delivered(members, 1, 'toolStatusChanged')) expect(events).toMatchObject([{ toolCallId: 'c1', status: 'RUNNING' }]);
    expect(stranger.results).toHaveLength(1);
  });

  it('different principals allowed on the same stream each receive it', async () => {
    const ownerSub = `owner-${Date.now()}`;
    const owner = await t.token(ownerSub, 'user');
    const threadId = await createThread(t, owner);
    const byOwner = await subscribeMany(2, RUNS, { threadId }, owner, 'run');
    const byAdmin = await subscribeMany(2, RUNS, { threadId }, await t.token('an-admin', 'admin'), 'run');

    const runId = await createRun(t, owner, threadId);
    for (const events of await delivered([...byOwner, ...byAdmin], 1, 'runChanged')) expect(events).toEqual([{ id: runId, status: 'QUEUED' }]);
  });

  it('the group stops listening when its last member leaves', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'a' }]);
    const [first, second] = (await subscribeMany(2, TOOL_STATUS, { threadId }, owner)) as [Stream, Stream];

    await first.close();
    await waitFor(() => audits(threadId) === 1, 'the first member to stop listening');
    must(await session.toolStarted('c1', 'a'));
    expect(payloads(await second.take(1), 'toolStatusChanged')).toMatchObject([{ toolCallId: 'c1', status: 'RUNNING' }]);

    await second.close();
    await waitFor(() => audits(threadId) === 0, 'the last member to stop listening');
  });
});

describe('identical SSE subscriptions', () => {
  it('each receives every event in commit order; other principals and variables are not mixed in', async () => {
    const first = await runningRun(t);
    const { session, owner, threadId } = first;
    const secondRunId = await createRun(t, owner, threadId);
    const second = await claim(t, first.worker, secondRunId);
    await session.declare('m1', [{ id: 'c1', name: 'a' }]);
    await second.declare('m1', [{ id: 'c2', name: 'b' }]);
    const sse = (variables: Record<string, unknown>, token: string) => subscribeSse(t.url, TOOL_STATUS, { threadId, ...variables }, token);
    const same = await Promise.all([sse({}, owner), sse({}, owner), sse({}, owner)]);
    const firstRunOnly = await sse({ runId: first.runId }, owner);
    const runs = await subscribeSse(t.url, RUNS, { threadId }, await t.token('an-admin', 'admin'));
    for (const stream of [...same, firstRunOnly, runs]) onTestFinished(() => stream.close());
    await waitFor(() => audits(threadId) === 4 && t.app.pubsub.subscriberCount('run', threadId) === 1, 'the SSE subscriptions to be live');

    must(await session.toolStarted('c1', 'a'));
    await delivered(same, 1, 'toolStatusChanged');
    must(await second.toolStarted('c2', 'b'));
    await delivered(same, 2, 'toolStatusChanged');
    must(await session.toolFinished('c1', { content: 'done' }));
    for (const events of await delivered(same, 3, 'toolStatusChanged')) {
      expect(events.map((e) => `${e.toolCallId}:${e.status}:${e.toolCall.status}`)).toEqual(['c1:RUNNING:RUNNING', 'c2:RUNNING:RUNNING', 'c1:COMPLETED:COMPLETED']);
    }
    expect(payloads(await firstRunOnly.take(2), 'toolStatusChanged').map((e) => `${e.toolCallId}:${e.status}`)).toEqual(['c1:RUNNING', 'c1:COMPLETED']);
    must(await second.finish('COMPLETED'));
    expect(payloads(await runs.take(1), 'runChanged')).toEqual([{ id: secondRunId, status: 'COMPLETED' }]);
  });
});

describe('reads at delivery', () => {
  it('a change is never re-read, whatever the number of subscribers and documents receiving it (WebSocket and SSE)', async () => {
    const statements: string[] = [];
    const app = await startTestApp(testRedisUrl ? { REDIS_URL: testRedisUrl } : {}, { onQuery: (sql) => statements.push(sql) });
    onTestFinished(() => app.close());
    const url = await app.app.start(0);
    const { session, owner, threadId } = await runningRun(app);
    await session.declare('m1', [{ id: 'c1', name: 'a' }]);
    const live = () => app.app.pubsub.subscriberCount('audit', threadId);
    const streams = [
      ...Array.from({ length: 3 }, () => subscribeWs(url, TOOL_STATUS, { threadId }, owner)),
      ...Array.from({ length: 2 }, () => subscribeWs(url, AUDIT_INPUTS, { threadId }, owner)),
      await subscribeSse(url, TOOL_STATUS, { threadId }, owner),
    ];
    for (const stream of streams) onTestFinished(() => stream.close());
    await waitFor(() => live() === streams.length, 'every subscription to be live');

    const before = statements.length;
    must(await session.toolStarted('c1', 'a', { effectiveInput: { q: 'x' } }));
    const received = await Promise.all(streams.map((stream) => stream.take(1)));
    expect(received.map(([result]) => result?.errors)).toEqual(streams.map(() => undefined));
    // The committed row travels with the change: delivering it reads no audit row at all.
    const auditReads = statements.slice(before).filter((sql) => /^SELECT \* FROM message WHERE id = ANY/.test(sql));
    expect(auditReads).toHaveLength(0);
  });
});
