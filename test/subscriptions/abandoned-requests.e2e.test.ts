import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, createRun, createThread } from '../support/lifecycle.js';
import { subscribeOn, subscribeSse, waitFor, wsClient } from '../support/streams.js';
import { testRedisUrl } from './support.js';

// Many dashboards reconnect at once (a proxy restart, laptops waking up): those whose clients gave
// up before the server got to their requests must cost the server nothing, exactly when it is
// busiest. Their clients here send their requests and close their connections before the server
// reads either, as clients do while the server's event loop is blocked; the server then reads the
// request and its end together. What they cost is counted in SQL statements.

let t: TestApp;
let port: number;
let url: string;
const statements: string[] = [];
/** Requests the server answered, counted once their responses closed. */
let closedResponses = 0;
beforeAll(async () => {
  // The sweeper must not add its own statements to a count.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000', ...(testRedisUrl ? { REDIS_URL: testRedisUrl } : {}) }, { onQuery: (sql) => statements.push(sql) });
  url = await t.app.start(0);
  port = Number(new URL(url).port);
  t.app.server.on('request', (_req, res) => res.once('close', () => closedResponses++));
});
afterAll(() => t.close());

/**
 * `n` clients that each send `request` and close their connection before the server has read it;
 * resolves once the server has answered them all (to nobody).
 */
async function abandoned(n: number, request: string): Promise<void> {
  const connected = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(socket)).once('error', reject);
    });
  const sockets = await Promise.all(Array.from({ length: n }, connected));
  const before = closedResponses;
  // In one turn of this process' event loop, which the server shares: it reads none of them before all are closed.
  for (const socket of sockets) {
    socket.write(request);
    socket.destroy();
  }
  await waitFor(() => closedResponses - before === n, `the server to answer the ${n} requests`);
}

const sseGet = (query: string, variables: Record<string, unknown>, token: string) =>
  `GET /graphql?${new URLSearchParams({ query, variables: JSON.stringify(variables) })} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nauthorization: Bearer ${token}\r\n\r\n`;

/** The statements `work` causes. */
async function statementsOf(work: () => Promise<unknown>): Promise<number> {
  statements.length = 0;
  await work();
  return statements.splice(0).length;
}

const SUBSCRIPTIONS = {
  threadChanges: { topic: 'changes', query: 'subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor } }' },
  toolStatusChanged: { topic: 'audit', query: 'subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id status } }' },
} as const;

for (const [name, { topic, query }] of Object.entries(SUBSCRIPTIONS)) {
  it(`${name} over SSE starts nothing for clients that left before the server got to them`, async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    /** One live subscriber, open once its stream is. */
    const live = async () => {
      const stream = await subscribeSse(url, query, { threadId }, who.owner);
      await waitFor(() => t.app.pubsub.subscriberCount(topic, threadId) === 1, 'the live subscription to start');
      await stream.close();
      await waitFor(() => t.app.pubsub.subscriberCount(topic, threadId) === 0, 'the live subscription to end');
    };
    const one = await statementsOf(live);
    expect(one).toBeGreaterThan(0);
    // The abandoned ones, then a live one, started after them: what it costs is all there is.
    const storm = await statementsOf(async () => {
      await abandoned(20, sseGet(query, { threadId }, who.owner));
      await live();
    });
    expect(storm).toBe(one);
  });
}

it('a threadChanges stream whose client leaves while it starts (its first read held) ends with its request', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const { query } = SUBSCRIPTIONS.threadChanges;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // Holds the thread's reads (PGlite: its one connection) until released.
  const holding = t.app.db.sql.transaction(async (tx) => {
    await tx.query('LOCK TABLE thread IN ACCESS EXCLUSIVE MODE');
    await released;
  });
  try {
    statements.length = 0;
    const client = new AbortController();
    const before = closedResponses;
    const response = fetch(url, {
      method: 'POST',
      signal: client.signal,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${who.owner}` },
      body: JSON.stringify({ query, variables: { threadId } }),
    }).catch(() => undefined);
    await waitFor(() => statements.some((sql) => sql.includes('FROM thread WHERE id = $1')), 'the subscription to read its thread');
    client.abort();
    await response;
    await waitFor(() => closedResponses - before === 1, 'the server to see the client gone');
  } finally {
    release();
    await holding;
  }
  // The stream starts once its reads are done, and ends at once: nobody would ever read it.
  await waitFor(() => statements.some((sql) => sql.includes('change_cursor FROM thread')), 'the stream to read its start');
  await expect.poll(() => t.app.pubsub.subscriberCount('changes', threadId)).toBe(0);
});

it('toolActivity over SSE reads no view for clients that left, and serves the next live one its first view at once', async () => {
  // Of different principals: a view read for those who left would not be the live one's.
  const [gone, live] = [await actors(t), await actors(t)];
  const reads = t.app.pubsub.activity.readCount();
  await abandoned(20, sseGet('subscription { toolActivity { runningCount } }', {}, gone.owner));
  const stream = await subscribeSse(url, 'subscription { toolActivity { runningCount } }', {}, live.owner);
  expect((await stream.take(1))[0]!.data?.toolActivity.runningCount).toBe(0);
  await stream.close();
  expect(t.app.pubsub.activity.readCount() - reads).toBe(1);
});

it('a graphql-ws subscription, whose upgrade request was answered long before, starts and delivers', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const client = wsClient(url, who.owner);
  try {
    const first = subscribeOn(client, SUBSCRIPTIONS.threadChanges.query, { threadId });
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the first subscription to start');
    await createRun(t, who.owner, threadId);
    await first.take(1);
    // A second one on the same connection, well after its upgrade.
    const second = subscribeOn(client, SUBSCRIPTIONS.threadChanges.query, { threadId });
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 2, 'the second subscription to start');
    await createRun(t, who.owner, threadId);
    await second.take(1);
  } finally {
    await client.dispose();
  }
});
