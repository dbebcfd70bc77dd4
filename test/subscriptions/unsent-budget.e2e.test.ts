import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { must, runningRun } from '../support/lifecycle.js';
import { startTestApp } from '../support/app.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { counterOf, payloads, sseEvents, sseStream, subscribeOn, subscribeSse, subscribeWs, waitFor, wsClient, type Stream } from '../support/streams.js';
import { tcpProxy, testRedisUrl, type ListeningApp } from './support.js';

// docs/subscriptions.md, "A subscriber that falls behind": one principal's streams together may
// hold at most MAX_UNSENT_BYTES_PER_PRINCIPAL unsent. A principal that keeps many streams open and
// reads none of them has the streams past that ended as slow consumers (resumable), while another
// principal's streams get every change and its writes go on.

const BUDGET = 16 * 1024 * 1024;
const PAYLOAD = 'x'.repeat(900_000);
const CHANGES = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status ... on ToolAudit { effectiveInput } } run { id status } }
}`;
const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;

let t: ListeningApp;
beforeAll(async () => {
  // Each connection's own bound (16 × MAX_JSON_BYTES: 32 MiB) above the budget and a write: the
  // budget keeps a principal's streams within 16 MiB, so a connection it leaves open never reaches
  // its own. With both at 16 MiB, the last connection left holds the whole budget, and the next
  // write closes it by its own bound instead.
  const app = await startTestApp({
    MAX_UNSENT_BYTES_PER_PRINCIPAL: String(BUDGET),
    MAX_JSON_BYTES: String(2 * 1024 * 1024),
    ...(testRedisUrl ? { REDIS_URL: testRedisUrl } : {}),
  });
  t = Object.assign(app, { url: await app.app.start(0) });
});
afterAll(() => t?.close());

const latestCursor = async (threadId: string, token: string) => (await t.gql(THREAD_CURSOR, { id: threadId }, token)).data.thread.changeCursor as string;
const subscribers = (threadId: string) => t.app.pubsub.subscriberCount('changes', threadId);
const scrape = async () => parsePrometheusText(await (await fetch(t.url.replace('/graphql', '/metrics'))).text()).samples;

/** A raw SSE stream: the last event id, the comments other than keep-alives, and how it ended. */
async function rawSse(url: string, token: string, threadId: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: CHANGES, variables: { threadId } }),
  });
  expect(response.status).toBe(200);
  const seen = { lastId: undefined as string | undefined, comments: [] as string[], completed: false, ended: false };
  const reader = response.body!.getReader();
  onTestFinished(() => reader.cancel().catch(() => {}));
  void (async () => {
    try {
      for await (const { event, id, comment } of sseEvents(reader)) {
        if (id) seen.lastId = id;
        if (comment) seen.comments.push(comment);
        if (event === 'complete') seen.completed = true;
      }
    } catch {
      // a cut connection ends it too
    }
    seen.ended = true;
  })();
  return seen;
}

/** Every cursor of the thread after `from` up to `to`, in order, none missing or repeated. */
function expectEveryChange(stream: Stream, from: string, to: string) {
  const counters = payloads(stream.results, 'threadChanges').map((change) => counterOf(change.cursor));
  const expected = [];
  for (let counter = counterOf(from) + 1n; counter <= counterOf(to); counter++) expected.push(counter);
  expect(counters).toEqual(expected);
}

/** A running run whose lease outlasts a test: on a busy machine one takes longer than the default lease (30 s). */
async function longRun() {
  const run = await runningRun(t);
  must(await run.session.renew(600));
  return run;
}

/**
 * Another principal's thread, followed over SSE and graphql-ws by a client that reads: the quiet
 * tenant, writing small changes between the other principal's large ones.
 */
async function quietTenant() {
  const { owner, threadId, session } = await longRun();
  const from = await latestCursor(threadId, owner);
  const streams = [await subscribeSse(t.url, CHANGES, { threadId }, owner), subscribeWs(t.url, CHANGES, { threadId }, owner)];
  for (const stream of streams) onTestFinished(() => stream.close());
  await waitFor(() => subscribers(threadId) === 2, 'the quiet tenant to subscribe');
  const tools = Array.from({ length: 60 }, (_, i) => ({ id: `q${i}`, name: 'read_file' }));
  await session.declare('quiet', tools);
  let written = 0;
  return {
    write: async () => must(await session.toolStarted(`q${written++}`, 'read_file', { effectiveInput: { n: written } })),
    async expectEveryChange() {
      const last = await latestCursor(threadId, owner);
      for (const stream of streams) {
        await stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === last, `cursor ${last}`, 30_000);
        expectEveryChange(stream, from, last);
      }
    },
  };
}

/**
 * Large changes on the noisy principal's thread, each followed by one of the quiet tenant's, until
 * the server ended some of the noisy principal's streams (or 40 of them were written).
 */
async function writeUntilEnded(session: Awaited<ReturnType<typeof runningRun>>['session'], quiet: Awaited<ReturnType<typeof quietTenant>>, ended: () => boolean) {
  const tools = Array.from({ length: 40 }, (_, i) => ({ id: `big${i}`, name: 'read_file' }));
  await session.declare('noisy', tools);
  for (const tool of tools) {
    must(await session.toolStarted(tool.id, tool.name, { effectiveInput: { content: PAYLOAD } }));
    await quiet.write();
    if (ended()) break;
  }
  expect(ended()).toBe(true);
  // A few more: the streams still open must stay within the budget, not be ended in turn.
  for (let i = 0; i < 3; i++) await quiet.write();
}

describe('unsent bytes per principal (MAX_UNSENT_BYTES_PER_PRINCIPAL)', () => {
  it('SSE: the unread streams past the budget end as slow consumers, resumable; the others stay; another principal gets every change', async () => {
    const quiet = await quietTenant();
    const noisy = await longRun();
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    onTestFinished(() => proxy.close());
    const STREAMS = 20;
    const streams = await Promise.all(Array.from({ length: STREAMS }, () => rawSse(`http://127.0.0.1:${proxy.port}/graphql`, noisy.owner, noisy.threadId)));
    await waitFor(() => subscribers(noisy.threadId) === STREAMS, 'every noisy stream to start');
    const before = (await scrape()).get('agent_audit_slow_consumer_closes_total{transport="sse",bound="principal"}') ?? 0;

    proxy.stall();
    await writeUntilEnded(noisy.session, quiet, () => subscribers(noisy.threadId) < STREAMS);
    const open = subscribers(noisy.threadId);
    const metrics = await scrape();
    expect(metrics.get('agent_audit_slow_consumer_closes_total{transport="sse",bound="principal"}')! - before).toBe(STREAMS - open);
    // What the principal's open streams hold unsent stays within the budget.
    expect(metrics.get('agent_audit_unsent_bytes_largest_principal')).toBeLessThanOrEqual(BUDGET);
    await quiet.expectEveryChange();

    proxy.resume();
    await waitFor(() => streams.filter((stream) => stream.ended).length === STREAMS - open, 'the ended streams to reach their client', 90_000);
    const ended = streams.filter((stream) => stream.ended);
    expect(ended.length).toBeGreaterThan(0);
    expect(open).toBeGreaterThan(0); // only the streams past the budget were ended
    for (const stream of ended) {
      // Ended as a dropped connection is (no `complete`), saying why in a comment line.
      expect(stream.completed).toBe(false);
      expect(stream.comments).toEqual([expect.stringMatching(/slow consumer.*Last-Event-ID/i)]);
    }

    // Resuming after the last event id received misses nothing.
    const resumed = ended[0]!;
    const response = await fetch(t.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${noisy.owner}`, 'last-event-id': resumed.lastId! },
      body: JSON.stringify({ query: `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor } }`, variables: { threadId: noisy.threadId } }),
    });
    const again = sseStream(response);
    onTestFinished(() => again.close());
    await waitFor(() => subscribers(noisy.threadId) === open + 1, 'the resumed stream to start');
    must(await noisy.session.renew(120));
    const last = await latestCursor(noisy.threadId, noisy.owner);
    await again.until((all) => all.at(-1)?.data?.threadChanges?.cursor === last, `cursor ${last}`, 30_000);
    const counters = payloads(again.results, 'threadChanges').map((change) => counterOf(change.cursor));
    expect(counters[0]).toBe(counterOf(resumed.lastId!) + 1n);
  }, 180_000);

  it('graphql-ws: the unread connections past the budget close with 1013 (slow consumer), each far below its own bound; another principal gets every change', async () => {
    const quiet = await quietTenant();
    const noisy = await longRun();
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    onTestFinished(() => proxy.close());
    const CONNECTIONS = 10;
    const streams: Stream[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const client = wsClient(`http://127.0.0.1:${proxy.port}/graphql`, noisy.owner);
      onTestFinished(() => client.dispose());
      streams.push(subscribeOn(client, CHANGES, { threadId: noisy.threadId }), subscribeOn(client, CHANGES, { threadId: noisy.threadId }));
    }
    await waitFor(() => subscribers(noisy.threadId) === streams.length, 'every noisy subscription to start');
    // The counters are the process's: a file run before in the same worker may have counted closes.
    const counted = await scrape();
    const closes = (bound: string) => `agent_audit_slow_consumer_closes_total{transport="ws",bound="${bound}"}`;
    const [before, beforeOwnBound] = [counted.get(closes('principal')) ?? 0, counted.get(closes('connection')) ?? 0];

    proxy.stall();
    await writeUntilEnded(noisy.session, quiet, () => subscribers(noisy.threadId) < streams.length);
    const open = subscribers(noisy.threadId);
    const metrics = await scrape();
    const closed = metrics.get(closes('principal'))! - before;
    expect(closed).toBe((streams.length - open) / 2);
    expect((metrics.get(closes('connection')) ?? 0) - beforeOwnBound).toBe(0);
    expect(metrics.get('agent_audit_unsent_bytes_largest_principal')).toBeLessThanOrEqual(BUDGET);
    await quiet.expectEveryChange();

    proxy.resume();
    await waitFor(() => streams.filter((stream) => stream.ending).length === streams.length - open, 'the closed connections to reach their client', 30_000);
    expect(open).toBeGreaterThan(0);
    for (const stream of streams.filter((stream) => stream.ending)) {
      const { code, reason } = (stream.ending as { error: { code?: number; reason?: string } }).error;
      expect(code).toBe(1013);
      expect(reason).toMatch(/slow consumer/i);
    }
  }, 180_000);
});
