import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { POLL_MS, StreamInterrupted, createPubSubFor, type ChangeStore } from '../../src/realtime/pubsub.js';
import { servicesRequired } from '../support/database.js';
import { testRedisUrl } from '../subscriptions/support.js';

// How a deleted thread's streams end on every instance (src/realtime/deletion-signal.ts): a signal
// on Redis, and, should it be lost, the poll of subscribed threads' cursors, which no longer finds
// the thread. Stores here list threads as the database would; the instances share the real Redis.

if (servicesRequired && !testRedisUrl) throw new Error('REQUIRE_SERVICES=1: TEST_REDIS_URL must be set');

/** A store that knows the threads in `existing` (at cursor 0) and no change of any. */
function storeOf(existing: Set<string>): ChangeStore {
  return {
    changesAfter: async () => [],
    threadCursors: async (threadIds) => threadIds.filter((id) => existing.has(id)).map((id) => ({ id, changeCursor: 0n })),
  };
}

const reasonOf = async (stream: AsyncIterator<unknown>) => {
  const { value } = await stream.next();
  return value instanceof StreamInterrupted ? value.reason : value;
};

describe('the end of a deleted thread\'s streams', () => {
  afterEach(() => vi.useRealTimers());

  it('in process: its streams end with THREAD_DELETED, another thread\'s stay open', async () => {
    const threads = new Set(['doomed', 'kept']);
    const { pubsub, threadDeleted, close } = await createPubSubFor(loadConfig({}), storeOf(threads));
    onTestFinished(close);
    const doomed = [await pubsub.subscribe('audit', 'doomed'), await pubsub.subscribe('changes', 'doomed')];
    const kept = await pubsub.subscribe('audit', 'kept');
    threadDeleted('doomed', 'owner');
    expect(await Promise.all(doomed.map(reasonOf))).toEqual(['THREAD_DELETED', 'THREAD_DELETED']);
    expect(pubsub.subscriberCount('audit', 'kept')).toBe(1);
    await kept.return!();
  });

  describe.skipIf(!testRedisUrl)('two instances sharing Redis', () => {
    it('a deletion on one instance ends the thread\'s streams on the other through Redis', { timeout: 90_000 }, async () => {
      // The other instance's store still lists the thread: only the signal can end its streams.
      const config = loadConfig({ REDIS_URL: testRedisUrl!, REDIS_PREFIX: `test-${randomUUID()}:` });
      const thread = `thread-${randomUUID()}`;
      const [a, b] = await Promise.all([0, 1].map(() => createPubSubFor(config, storeOf(new Set([thread, 'kept'])))));
      onTestFinished(async () => void (await Promise.all([a!.close(), b!.close()])));
      const onB = await b!.pubsub.subscribe('run', thread);
      const keptOnB = await b!.pubsub.subscribe('run', 'kept');
      // Sent again until it arrives: B's subscription to the channel is made in the background, in
      // seconds on a loaded machine (tries for 30 s).
      const ended = reasonOf(onB);
      let arrived = false;
      void ended.then(() => (arrived = true));
      for (let tries = 0; !arrived && tries < 300; tries++) {
        a!.threadDeleted(thread, 'owner');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await ended).toBe('THREAD_DELETED');
      expect(b!.pubsub.subscriberCount('run', 'kept')).toBe(1);
      await keptOnB.return!();
    });

    it('a lost signal: the poll finds the thread gone and ends its streams', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const threads = new Set(['doomed', 'kept']);
      const config = loadConfig({ REDIS_URL: testRedisUrl!, REDIS_PREFIX: `test-${randomUUID()}:` });
      const { pubsub, close } = await createPubSubFor(config, storeOf(threads));
      onTestFinished(close);
      const doomed = await pubsub.subscribe('audit', 'doomed');
      await pubsub.subscribe('audit', 'kept');
      threads.delete('doomed'); // deleted elsewhere; no signal ever arrives here
      await vi.advanceTimersByTimeAsync(POLL_MS.healthy);
      expect(await reasonOf(doomed)).toBe('THREAD_DELETED');
      expect(pubsub.subscriberCount('audit', 'kept')).toBe(1);
    });
  });
});
