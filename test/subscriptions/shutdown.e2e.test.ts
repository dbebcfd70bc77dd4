import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.js';
import { runningRun } from '../support/lifecycle.js';
import { redisEnv, sseStream, waitFor } from './support.js';

// docs/subscriptions.md, "Errors": a server that stops ends its SSE streams with
// SUBSCRIPTION_INTERRUPTED, so clients know to subscribe again (elsewhere), and it can finish.

describe('stopping the server', () => {
  it('ends open SSE subscriptions with SUBSCRIPTION_INTERRUPTED, then completes them', async () => {
    const t = await startTestApp(redisEnv());
    const url = await t.app.start(0);
    const { owner, threadId } = await runningRun(t);
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${owner}` },
      body: JSON.stringify({ query: 'subscription($t: ID!) { runChanged(threadId: $t) { id } }', variables: { t: threadId } }),
    });
    const stream = sseStream(response);
    await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');

    await t.close();
    expect(await stream.ended()).toEqual({ kind: 'complete' });
    expect(stream.results.map((result) => result.errors?.[0]?.extensions)).toEqual([
      { code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SERVER_STOPPING' },
    ]);
  });
});
