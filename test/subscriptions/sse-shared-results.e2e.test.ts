import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { runningRun } from '../support/lifecycle.js';
import { sseResponse, waitFor } from '../support/streams.js';

// docs/subscriptions.md, "Many subscribers": identical SSE subscriptions share one execution per
// event, and so one serialization of its result. Each stream serialized its own copy: a principal
// with 500 streams on a thread turned one write of two 1 MB payloads into 1 GB of JSON built and
// held on the instance, seconds of its event loop that every other principal waited for.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const AUDIT_OUTPUTS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id ... on ToolAudit { output } } }`;

/** The body's chunks until the first `event: next` one, which it returns. */
async function firstResultChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array> {
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before its first result');
    if (new TextDecoder().decode(value).includes('event: next')) return value;
  }
}

it('identical SSE subscriptions write one serialized result, shared', async () => {
  const { session, owner, threadId } = await runningRun(t);
  const responses = await Promise.all([1, 2, 3].map(() => sseResponse(t.app, AUDIT_OUTPUTS, { threadId }, owner)));
  const readers = responses.map((response) => response.body!.getReader());
  await waitFor(() => t.app.pubsub.subscriberCount('audit', threadId) === 3, 'the subscriptions to be live');

  await session.declare('m1', [{ id: 'c1', name: 'search' }]);
  const chunks = await Promise.all(readers.map(firstResultChunk));

  expect(chunks[1]).toBe(chunks[0]);
  expect(chunks[2]).toBe(chunks[0]);
  const data = /^data: (.*)$/m.exec(new TextDecoder().decode(chunks[0]))![1]!;
  expect(JSON.parse(data)).toMatchObject({ data: { auditChanged: { id: expect.any(String) } } });
  for (const reader of readers) await reader.cancel();
});
