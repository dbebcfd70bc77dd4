import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { subscribedChannels } from './redis-subscriptions.js';

/**
 * Owners whose tool audits changed, told to every instance: one Redis channel
 * (`<prefix>tool-activity`) whose messages are `<instance> <owner id>`; each instance's dashboard feeds of that
 * owner read a new view (activity-feeds.ts). Best effort: a signal lost while Redis is away is
 * made up by the feeds' idle reads. Kept apart from the per-thread wake-ups (redis-bus.ts): a
 * dashboard spans every thread of its owner.
 */
export async function connectActivitySignal(url: string, prefix: string, onChanged: (ownerId: string) => void) {
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResubscribe: false, retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000) };
  const publisher = new Redis(url, { ...options, connectionName: 'audit-activity-publisher' });
  const subscriber = new Redis(url, { ...options, connectionName: 'audit-activity-subscriber' });
  const channel = `${prefix}tool-activity`;
  // This instance's own signals come back to it: its feeds already heard of those changes.
  const origin = randomUUID();
  // Outages are logged by the wake-up bus, which shares this Redis.
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  const subscriptions = subscribedChannels(subscriber, () => {});
  subscriptions.add(channel);
  // As the bus does: resolves after the first attempt, so a start is no recovery of subscribers already there.
  await subscriptions.firstAttempt;
  subscriber.on('message', (from: string, text: string) => {
    const space = text.indexOf(' ');
    if (from === channel && space > 0 && text.slice(0, space) !== origin) onChanged(text.slice(space + 1));
  });
  return {
    /** The channel subscribed on the subscriber's current connection: other instances' signals reach this one. */
    subscribed: subscriptions.subscribed,
    /** Called once the channel is subscribed again: a signal sent before is read from the database then. */
    onSubscribed: subscriptions.onSubscribed,
    publish(ownerId: string) {
      publisher.publish(channel, `${origin} ${ownerId}`).catch(() => {});
    },
    async close() {
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
