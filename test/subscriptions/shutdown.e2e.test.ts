import { describe, expect, it } from 'vitest';
import { runningRun } from '../support/lifecycle.js';
import { subscribeSse, waitFor } from '../support/streams.js';
import { startListeningApp } from './support.js';

// docs/subscriptions.md, "Errors": a server that stops ends its SSE streams with
// SUBSCRIPTION_INTERRUPTED, so clients know to subscribe again (elsewhere), and it can finish.

describe('stopping the server', () => {
  it('ends open SSE subscriptions with SUBSCRIPTION_INTERRUPTED, then completes them', async () => {
    const t = await startListeningApp();
    const { owner, threadId } = await runningRun(t);
    const stream = await subscribeSse(t.url, 'subscription($t: ID!) { runChanged(threadId: $t) { id } }', { t: threadId }, owner);
    await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');

    await t.close();
    expect(await stream.ended()).toEqual({ kind: 'complete' });
    expect(stream.results.map((result) => result.errors?.[0]?.extensions)).toEqual([
      { code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SERVER_STOPPING' },
    ]);
  });
});
