import { afterAll, beforeAll, expect, it } from 'vitest';
import { PING_MS } from '../../src/transports/sse-event-ids.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, createRun, createThread } from '../support/lifecycle.js';
import { sseEvents, sseResponse, waitFor } from '../support/streams.js';

// A dashboard that closes its tab leaves the server's subscription at once: the SSE stream ends
// with the request (its abort), not when the next keep-alive comment finds the socket gone. The
// same holds in process, through yoga's fetch: there no socket closes, only the request's signal
// aborts or the reader cancels the body.

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp();
  url = await t.app.start(0);
});
afterAll(() => t.close());

const RUN_CHANGED = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;

it('an SSE subscription ends when its HTTP client aborts the request', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const client = new AbortController();
  const response = await sseResponse(url, RUN_CHANGED, { threadId }, who.owner, client.signal);
  expect(response.status).toBe(200);
  await response.body!.getReader().read(); // the first byte: the stream is open
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');

  client.abort();
  // Well before the next keep-alive comment, which would otherwise be the first to find the client gone.
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 0, 'the subscription to end', PING_MS / 2);
});

it('an SSE subscription made through yoga\'s fetch ends when its request is aborted, while it waits for its next event', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const client = new AbortController();
  const response = await sseResponse(t.app, RUN_CHANGED, { threadId }, who.owner, client.signal);
  expect(response.status).toBe(200);
  const events = sseEvents(response.body!.getReader());
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');
  await createRun(t, who.owner, threadId);
  for await (const { event } of events) if (event === 'next') break; // one delivered: the server now waits for the next

  client.abort();
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 0, 'the subscription to end', PING_MS / 2);
});

it('an SSE subscription made through yoga\'s fetch ends when its reader cancels the body', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const response = await sseResponse(t.app, RUN_CHANGED, { threadId }, who.owner);
  const reader = response.body!.getReader();
  await reader.read();
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');

  await reader.cancel();
  await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 0, 'the subscription to end', PING_MS / 2);
});
