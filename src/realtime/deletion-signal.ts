import { Redis } from 'ioredis';
import { subscribedChannels } from './redis-subscriptions.js';
import { errorFields, log } from '../log.js';

/**
 * Deleted threads, told to every instance: one Redis channel (`<prefix>thread-deleted`) whose
 * messages are thread ids; each instance ends its streams of that thread. Kept apart from the
 * change wake-ups (redis-bus.ts): a deletion is no change of the thread, and has no cursor.
 * Best effort, like a wake-up: a signal lost while Redis is away is made up by the poll of
 * subscribed threads' cursors (pubsub.ts), which ends the feed of a thread it no longer finds.
 * Connecting never holds the start up: the connections retry until Redis is there.
 */
export async function connectDeletionSignal(url: string, prefix: string, onDeleted: (threadId: string) => void) {
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResubscribe: false, retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000) };
  const publisher = new Redis(url, { ...options, connectionName: 'audit-deletion-publisher' });
  const subscriber = new Redis(url, { ...options, connectionName: 'audit-deletion-subscriber' });
  const channel = `${prefix}thread-deleted`;
  const logFailure = (error: unknown) => log.error({ component: 'realtime', error: errorFields(error) }, 'could not publish a deletion on Redis; the poll makes up for it');
  // Outages are logged by the wake-up bus, which shares this Redis.
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  const subscriptions = subscribedChannels(subscriber, () => {});
  subscriptions.add(channel);
  // As the bus does: resolves after the first attempt, so a start is no recovery of subscribers already there.
  await subscriptions.firstAttempt;
  subscriber.on('message', (from: string, threadId: string) => {
    if (from === channel) onDeleted(threadId);
  });
  return {
    /** The channel subscribed on the subscriber's current connection: other instances' signals reach this one. */
    subscribed: subscriptions.subscribed,
    /** Called once the channel is subscribed again: a signal sent before is read from the database then. */
    onSubscribed: subscriptions.onSubscribed,
    publish(threadId: string) {
      publisher.publish(channel, threadId).catch(logFailure);
    },
    async close() {
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
