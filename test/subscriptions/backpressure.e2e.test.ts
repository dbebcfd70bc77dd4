import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { DEFAULT_MAX_PENDING_EVENTS } from '../../src/realtime/pubsub.js';
import { must, runningRun } from '../support/lifecycle.js';
import { payloads, sseResponse, sseStream, subscribeOn, subscribeSse, waitFor, wsClient, type Stream } from '../support/streams.js';
import { startListeningApp, tcpProxy, type ListeningApp } from './support.js';

// docs/subscriptions.md, "A subscriber that falls behind": a client that stops reading never
// holds up writers, other subscribers or the server's memory. Its stream is cut off at the
// source and, if it reads again, it is told so (SUBSCRIPTION_INTERRUPTED) before the stream ends.

const AUDIT_IDS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id status } }`;
const AUDIT_INPUTS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id ... on ToolAudit { effectiveInput } } }`;

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

/** A thread with one tool audit whose row is `inputBytes` large: each delivery of it is too. */
async function threadWithLargeAudit(inputBytes: number) {
  const run = await runningRun(t);
  await run.session.declare('m1', [{ id: 'big', name: 'read_file' }]);
  const audit = must(await run.session.toolStarted('big', 'read_file', { effectiveInput: { content: 'x'.repeat(inputBytes) } }));
  const event: DomainEvent = { kind: 'audit', threadId: run.threadId, runId: run.runId, auditId: audit.id, role: 'TOOL' };
  return { ...run, event };
}

const subscribers = (threadId: string) => t.app.pubsub.subscriberCount('audit', threadId);

function expectInterrupted(stream: Stream) {
  const last = stream.results.at(-1);
  expect(last?.data ?? null).toBeNull();
  expect(last?.errors?.[0]?.extensions).toMatchObject({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SUBSCRIBER_LAGGING' });
  // Everything before it is ordinary data.
  payloads(stream.results.slice(0, -1), 'auditChanged');
}

describe('a subscriber that falls behind', () => {
  it(`is cut off once more than ${DEFAULT_MAX_PENDING_EVENTS} events wait for it (SSE, a reader that stopped)`, async () => {
    const { owner, threadId, session, event } = await threadWithLargeAudit(10);
    // The response is never read from until the end: this client has stopped reading.
    const response = await sseResponse(t.app, AUDIT_IDS, { threadId }, owner);
    await waitFor(() => subscribers(threadId) === 1, 'the subscription to be live');

    // Many commits at once, as the domain's event sink receives them.
    t.app.deps.publish(Array.from({ length: DEFAULT_MAX_PENDING_EVENTS + 10 }, () => event));
    await waitFor(() => subscribers(threadId) === 0, 'the lagging subscription to be dropped at the source');
    must(await session.toolFinished('big', { content: 'done' }));

    const stream = sseStream(response);
    onTestFinished(() => stream.close());
    expect(await stream.ended()).toEqual({ kind: 'complete' });
    expectInterrupted(stream);
    expect(stream.results.length).toBeLessThan(DEFAULT_MAX_PENDING_EVENTS);
  });

  it('over a WebSocket that stopped reading, only that subscriber is cut off; the others get every event', async () => {
    const { owner, threadId, event } = await threadWithLargeAudit(200_000);
    const port = Number(new URL(t.url).port);
    const proxy = await tcpProxy({ host: '127.0.0.1', port });
    onTestFinished(() => proxy.close());
    const stalledClient = wsClient(`http://127.0.0.1:${proxy.port}/graphql`, owner);
    onTestFinished(() => stalledClient.dispose());
    const stalled = subscribeOn(stalledClient, AUDIT_INPUTS, { threadId });
    const healthy = await subscribeSse(t.app, AUDIT_IDS, { threadId }, owner);
    onTestFinished(() => healthy.close());
    await waitFor(() => subscribers(threadId) === 2, 'both subscriptions to be live');

    proxy.stall();
    // Commits at a pace the reading subscriber keeps up with. The stalled one first fills the
    // socket buffers with 200 kB results, then its queue, until it is cut off.
    let published = 0;
    while (subscribers(threadId) === 2) {
      if (published > 20 * DEFAULT_MAX_PENDING_EVENTS) throw new Error('the stalled subscriber was never cut off');
      t.app.deps.publish(Array.from({ length: 32 }, () => event));
      published += 32;
      await healthy.take(published);
    }
    expect(payloads(healthy.results, 'auditChanged')).toHaveLength(published);
    expect(subscribers(threadId)).toBe(1);

    proxy.resume();
    expect(await stalled.ended()).toEqual({ kind: 'complete' });
    expectInterrupted(stalled);
    expect(stalled.results.length).toBeLessThan(published);
    expect(healthy.ending).toBeNull();
  });

  it('a WebSocket holding too much unsent data is dropped, with all its subscriptions', async () => {
    // 64 subscriptions on one connection, each about to send a 512 kB result: more than the
    // server keeps unsent for one client (16 MiB) plus what the socket buffers absorb.
    const { owner, threadId, event } = await threadWithLargeAudit(512 * 1024);
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    onTestFinished(() => proxy.close());
    const client = wsClient(`http://127.0.0.1:${proxy.port}/graphql`, owner);
    onTestFinished(() => client.dispose());
    const streams = Array.from({ length: 64 }, () => subscribeOn(client, AUDIT_INPUTS, { threadId }));
    await waitFor(() => subscribers(threadId) === streams.length, 'every subscription to be live');

    proxy.stall();
    t.app.deps.publish([event]);
    await waitFor(() => subscribers(threadId) === 0, 'the connection and its subscriptions to be dropped', 20_000);

    proxy.resume();
    for (const stream of streams) {
      const ending = await stream.ended();
      expect(ending.kind).toBe('error');
      // The server terminated the connection: no close frame (1006).
      expect((ending as { error: { code?: number } }).error.code).toBe(1006);
    }
  });
});
