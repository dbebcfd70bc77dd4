import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Config } from '../../src/config.js';
import { maxUnsentBytes } from '../../src/transports/websocket.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { counterOf, payloads, subscribeOn, subscribeSse, THREAD_SNAPSHOT, waitFor, wsClient, type Stream } from '../support/streams.js';
import { kernelSocket, startListeningApp, tcpProxy, testRedisUrl, type ListeningApp } from './support.js';

// docs/subscriptions.md, "A subscriber that falls behind": a client that stops reading never
// holds up writers, other subscribers or the server's memory. (Catching a lagging subscriber up
// from the database is tested in pubsub.unit.test.ts and, over SSE, in thread-changes.e2e.test.ts.)

const CHANGES = `subscription($threadId: ID!) {
  threadChanges(threadId: $threadId) { cursor audit { id status ... on ToolAudit { effectiveInput } } run { id leaseExpiresAt } }
}`;
const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;
const OUTPUT_BYTES = 900_000;
/** /proc/net/tcp's state of an established connection. */
const ESTABLISHED = '01';
const COPIES = ['output', 'again: output', 'thrice: output', 'fourfold: output'];
const LARGE = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status ... on ToolAudit { ${COPIES.join(' ')} } } run { id status } }
}`;

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const subscribers = (threadId: string) => t.app.pubsub.subscriberCount('changes', threadId);
const latestCursorOf = async (app: TestApp, threadId: string, token: string) =>
  (await app.gql(THREAD_CURSOR, { id: threadId }, token)).data.thread.changeCursor as string;
const latestCursor = async (threadId: string, token: string) => (await t.gql(THREAD_CURSOR, { id: threadId }, token)).data.thread.changeCursor as string;
const reached = (stream: Stream, cursor: string) =>
  stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === cursor, `cursor ${cursor}`, 60_000);

/**
 * How many subscriptions, each with one unsent frame of `frameBytes`, hold more than the server
 * keeps unsent for one client plus what the loopback can absorb: the server's send buffer and the
 * proxy's receive buffer, each as large as Linux lets it grow. The receive buffer grows while the
 * client still reads (here up to 32 MiB): with a fixed sixteen frames of 1.8 MB, a CI run once
 * left the client open.
 */
function subscriptionsToOverflow(config: Config, frameBytes: number): number {
  // Without Linux's /proc: 32 MiB each, Linux's largest here.
  const largest = (file: string) => (existsSync(file) ? Number(readFileSync(file, 'utf8').trim().split(/\s+/).at(-1)) : 32 * 1024 * 1024);
  const socketBuffers = largest('/proc/sys/net/ipv4/tcp_wmem') + largest('/proc/sys/net/ipv4/tcp_rmem');
  return Math.ceil((maxUnsentBytes(config) + socketBuffers) / frameBytes) + 1;
}

function expectNoRepeatAndNoError(stream: Stream) {
  const cursors = payloads(stream.results, 'threadChanges').map((change) => change.cursor as string);
  expect(new Set(cursors).size).toBe(cursors.length);
}

describe('a subscriber that falls behind', () => {
  it('two subscriptions on one connection with large frames: neither stalls, each receives every change', async () => {
    // The stall this reproduces: a subscription whose own frame was written waited for the
    // connection's whole buffer to drain, while the other subscription's frame kept it non-empty.
    const { owner, threadId, session } = await runningRun(t);
    // Directly connected (a proxy stalled for long would end the connection by graphql-ws'
    // keep-alive on a busy machine); the deterministic reproduction of the stall is
    // websocket-writes.unit.test.ts.
    const client = wsClient(t.url, owner);
    onTestFinished(() => client.dispose());
    const streams = [subscribeOn(client, CHANGES, { threadId }), subscribeOn(client, CHANGES, { threadId })];
    await waitFor(() => subscribers(threadId) === 2, 'both subscriptions to start');

    for (let i = 0; i < 6; i++) {
      await session.declare(`m${i}`, [{ id: `c${i}`, name: 'read_file' }]);
      must(await session.toolStarted(`c${i}`, 'read_file', { effectiveInput: { i, content: 'x'.repeat(900_000) } }));
    }
    const last = await latestCursor(threadId, owner);
    for (const stream of streams) {
      await reached(stream, last);
      expectNoRepeatAndNoError(stream);
    }
  });

  /**
   * Subscriptions on one connection each selecting a tool's large output four times, a client
   * (behind a TCP proxy that stops reading from the server) that stops reading when the tool
   * finishes: each subscription has one large frame unsent (each waits for its own), together
   * more than the server keeps unsent for one client plus what the socket buffers can absorb.
   * The tool's start frames are small: a burst of large ones would close even a client that reads.
   * Returns once the server has closed the connection as a slow consumer, the proxy still stalled.
   */
  async function closedAsSlowConsumer() {
    const { owner, threadId, session } = await runningRun(t);
    await session.declare('m1', [{ id: 'big', name: 'read_file' }]);
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    onTestFinished(() => proxy.close());
    const client = wsClient(`http://127.0.0.1:${proxy.port}/graphql`, owner);
    onTestFinished(() => client.dispose());
    // The recipe: a snapshot, then changes after its cursor.
    const snapshot = async () => {
      const { data } = await t.gql(THREAD_SNAPSHOT, { threadId }, owner);
      const entities: { id: string; status: string }[] = [...data.thread.runs, ...data.threadAudits.items];
      return { cursor: data.threadAudits.cursor as string, view: new Map(entities.map((entity) => [entity.id, entity.status])) };
    };
    const start = await snapshot();
    const streams = Array.from({ length: subscriptionsToOverflow(t.config, COPIES.length * OUTPUT_BYTES) }, () => subscribeOn(client, LARGE, { threadId, after: start.cursor }));
    await waitFor(() => subscribers(threadId) === streams.length, 'every subscription to start');
    must(await session.toolStarted('big', 'read_file'));
    for (const stream of streams) await stream.take(1);

    proxy.stall();
    must(await session.toolFinished('big', { content: 'y'.repeat(OUTPUT_BYTES) }));
    await waitFor(() => subscribers(threadId) === 0, 'the connection and its subscriptions to be closed', 20_000);
    return { owner, threadId, session, proxy, streams, snapshot, start };
  }

  it('a client that stops reading is closed past the unsent bound with 1013, naming a slow consumer; resuming with after misses nothing', async () => {
    const { owner, threadId, session, proxy, streams, snapshot, start } = await closedAsSlowConsumer();
    proxy.resume();
    for (const stream of streams) {
      const ending = await stream.ended(20_000);
      expect(ending.kind).toBe('error');
      const { code, reason } = (ending as { error: { code?: number; reason?: string } }).error;
      expect(code).toBe(1013);
      expect(reason).toMatch(/slow consumer/i);
    }

    // The client resumes with the last cursor it received, as graphql-ws clients retry 1013.
    const seen = payloads(streams[0]!.results, 'threadChanges');
    const resumed = wsClient(t.url, owner);
    onTestFinished(() => resumed.dispose());
    const again = subscribeOn(resumed, LARGE, { threadId, after: seen.at(-1).cursor });
    must(await session.finish('COMPLETED'));
    const last = await latestCursor(threadId, owner);
    await reached(again, last);
    const view = start.view;
    for (const change of [...seen, ...payloads(again.results, 'threadChanges')]) {
      const entity = change.audit ?? change.run;
      view.set(entity.id, entity.status);
    }
    const final = (await snapshot()).view;
    expect(view).toEqual(final);
  });

  it('a client that never reads again is cut with a TCP reset after the grace: the kernel does not keep what it held for it', async () => {
    // Closed normally, the server's socket would linger in FIN-WAIT-1 holding its unsent bytes
    // for as long as the client kept its window shut.
    const { proxy } = await closedAsSlowConsumer();
    const serverPort = Number(new URL(t.url).port);
    const [proxyPort] = proxy.upstreamPorts();
    await waitFor(() => kernelSocket(serverPort, proxyPort!)?.state !== ESTABLISHED, 'the server to let go of the connection', 60_000);
    expect(kernelSocket(serverPort, proxyPort!)).toBeUndefined();
  }, 90_000);

  it('an SSE response is written only as fast as its client reads: past its queue the subscriber folds instead of the server buffering', async () => {
    // A separate server whose subscribers queue at most 4 changes, so that one that cannot send
    // falls behind quickly. The SSE client reads through a TCP proxy that stops reading: if the
    // server buffered every change for it, the client would get every one when it reads again;
    // writing only as the socket drains, the server held back, and the catch-up folds.
    const small = await startTestApp(testRedisUrl ? { REDIS_URL: testRedisUrl } : {}, { maxPendingEvents: 4 });
    onTestFinished(() => small.close());
    const url = await small.app.start(0);
    const { owner, threadId, session } = await runningRun(small);
    const tools = Array.from({ length: 16 }, (_, i) => ({ id: `big-${i}`, name: 'read_file' }));
    await session.declare('m1', tools);
    const { data: before } = await small.gql(THREAD_SNAPSHOT, { threadId }, owner);
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(url).port) });
    onTestFinished(() => proxy.close());
    const query = `subscription($threadId: ID!, $after: String) {
      threadChanges(threadId: $threadId, after: $after) { cursor audit { id status ... on ToolAudit { effectiveInput } } run { id status } }
    }`;
    const sse = await subscribeSse(`http://127.0.0.1:${proxy.port}/graphql`, query, { threadId, after: before.threadAudits.cursor }, owner);
    onTestFinished(() => sse.close());
    await waitFor(() => small.app.pubsub.subscriberCount('changes', threadId) === 1, 'the SSE subscription to start');

    proxy.stall();
    for (const tool of tools) must(await session.toolStarted(tool.id, tool.name, { effectiveInput: { content: 'x'.repeat(900_000) } }));
    for (let i = 0; i < 20; i++) must(await session.renew(120));
    const committed = Number(counterOf(await latestCursorOf(small, threadId, owner)) - counterOf(before.threadAudits.cursor));

    proxy.resume();
    const last = await latestCursorOf(small, threadId, owner);
    await sse.until((all) => all.at(-1)?.data?.threadChanges?.cursor === last, `cursor ${last}`, 60_000);
    expect(sse.ending).toBeNull();
    const changes = payloads(sse.results, 'threadChanges');
    const counters = changes.map((change) => counterOf(change.cursor));
    expect(counters.every((counter, i) => i === 0 || counter > counters[i - 1]!)).toBe(true);
    // Folded: the renewals of the run came as fewer changes than were committed.
    expect(changes.length).toBeLessThan(committed);
    const view = new Map<string, string>([...before.thread.runs, ...before.threadAudits.items].map((entity: { id: string; status: string }) => [entity.id, entity.status]));
    for (const change of changes) view.set((change.audit ?? change.run).id, (change.audit ?? change.run).status);
    const { data: after } = await small.gql(THREAD_SNAPSHOT, { threadId }, owner);
    expect(view).toEqual(new Map([...after.thread.runs, ...after.threadAudits.items].map((entity: { id: string; status: string }) => [entity.id, entity.status])));
  }, 120_000);
});
