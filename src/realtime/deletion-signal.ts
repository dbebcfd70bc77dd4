import { Redis } from 'ioredis';

/**
 * Deleted threads, told to every instance: one Redis channel (`<prefix>thread-deleted`) whose
 * messages are thread ids; each instance ends its streams of that thread. Kept apart from the
 * change wake-ups (redis-bus.ts): a deletion is no change of the thread, and has no cursor. A
 * signal lost while Redis is down is made up by the poll of subscribed threads' cursors
 * (pubsub.ts), which ends the feed of a thread it no longer finds.
 */
export async function connectDeletionSignal(url: string, prefix: string, onDeleted: (threadId: string) => void) {
  const options = { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 } as const;
  const publisher = new Redis(url, { ...options, connectionName: 'audit-deletion-publisher' });
  const subscriber = new Redis(url, { ...options, connectionName: 'audit-deletion-subscriber' });
  const channel = `${prefix}thread-deleted`;
  const logFailure = (error: unknown) => console.error('[realtime] Redis deletion signal:', String(error));
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  try {
    await Promise.all([publisher.connect(), subscriber.connect()]);
    await subscriber.subscribe(channel);
  } catch (error) {
    publisher.disconnect();
    subscriber.disconnect();
    throw new Error(`REDIS_URL is set but Redis cannot be reached: ${String(error)}`);
  }
  // ioredis subscribes again by itself after a reconnect (autoResubscribe, its default).
  subscriber.on('message', (from: string, threadId: string) => {
    if (from === channel) onDeleted(threadId);
  });
  return {
    publish(threadId: string) {
      publisher.publish(channel, threadId).catch(logFailure);
    },
    async close() {
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
