import { randomUUID } from 'node:crypto';
import { connectSignal } from './redis-subscriptions.js';

/**
 * Owners whose tool audits changed, told to every instance: one Redis channel
 * (`<prefix>tool-activity`) whose messages are `<instance> <owner id>`; each instance's dashboard feeds of that
 * owner read a new view (activity-feeds.ts). A signal this instance could not publish is held and
 * published again (connectSignal); every dashboard of an instance whose own connection
 * was away reads a new view once it is back (pubsub.ts). Kept apart from the per-thread wake-ups (redis-bus.ts): a
 * dashboard spans every thread of its owner.
 */
export async function connectActivitySignal(url: string, prefix: string, onChanged: (ownerId: string) => void, maxUnsent?: number) {
  // This instance's own signals come back to it: its feeds already heard of those changes.
  const origin = randomUUID();
  const signal = await connectSignal(url, 'activity', `${prefix}tool-activity`, (text) => {
    const space = text.indexOf(' ');
    if (space > 0 && text.slice(0, space) !== origin) onChanged(text.slice(space + 1));
  }, { prefix, maxUnsent });
  return {
    ...signal,
    publish(ownerId: string) {
      signal.publish(`${origin} ${ownerId}`);
    },
  };
}
