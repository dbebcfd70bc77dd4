import { Redis } from 'ioredis';
import { log, outsideErrorFields } from '../log.js';

/** How long a SUBSCRIBE that Redis refused on a connection that stays up waits before it is tried again. */
export const RESUBSCRIBE_MS = 1000;

/**
 * The channels a subscriber connection listens to, subscribed on each of its connections (the
 * connection is made with `autoResubscribe: false`). `subscribed()` is true only once every channel
 * is subscribed on the current connection: until then another instance's message is lost, and
 * what it said is read from the database when `onSubscribed` listeners run. A SUBSCRIBE refused
 * on a connection that stays up (an ACL, a Redis busy loading) is tried again every
 * RESUBSCRIBE_MS, not left until the next reconnection.
 */
export function subscribedChannels(subscriber: Redis, failed: (error: unknown) => void) {
  const channels = new Set<string>();
  const subscribedListeners: (() => void)[] = [];
  let subscribed = false;
  // Bumped by each connection and each refusal: only the latest attempt's SUBSCRIBE says the channels are subscribed.
  let attempt = 0;
  let refusalLogged = false;
  let attempted!: () => void;
  const firstAttempt = new Promise<void>((resolve) => (attempted = resolve));
  subscriber.once('error', () => attempted());
  subscribedListeners.push(() => attempted());

  const refused = (error: unknown) => {
    subscribed = false;
    const refusedAttempt = ++attempt;
    attempted();
    failed(error);
    if (subscriber.status !== 'ready') return; // the next connection subscribes them all
    if (!refusalLogged) log.warn({ component: 'realtime', error: outsideErrorFields(error) }, 'Redis refused a SUBSCRIBE; trying again');
    refusalLogged = true;
    setTimeout(() => {
      if (refusedAttempt === attempt && subscriber.status === 'ready') subscribeAll();
    }, RESUBSCRIBE_MS).unref();
  };
  const subscribeAll = () => {
    const current = ++attempt;
    subscribed = false;
    const done = channels.size > 0 ? subscriber.subscribe(...channels) : Promise.resolve();
    done.then(
      () => {
        if (current !== attempt) return;
        subscribed = true;
        refusalLogged = false;
        for (const listener of subscribedListeners) listener();
      },
      (error: unknown) => current === attempt && refused(error),
    );
  };
  subscriber.on('ready', subscribeAll);

  return {
    subscribed: () => subscriber.status === 'ready' && subscribed,
    /** Resolves after the first attempt: subscribed, refused or unreachable. */
    firstAttempt,
    /** Called each time every channel is subscribed again (after a connection, or a refusal). */
    onSubscribed: (listener: () => void) => void subscribedListeners.push(listener),
    add(channel: string) {
      channels.add(channel);
      if (subscriber.status === 'ready') subscriber.subscribe(channel).catch(refused);
    },
    remove(channel: string) {
      channels.delete(channel);
      if (subscriber.status === 'ready') void subscriber.unsubscribe(channel).catch(failed);
    },
  };
}

/**
 * A signal told to every instance on one Redis channel: a publisher and a subscriber connection of
 * their own (named `audit-<name>-…`), the channel subscribed as subscribedChannels says, each
 * message on it handed to `onMessage`. Resolves after the first SUBSCRIBE attempt, as the bus
 * does, so a start is no recovery of subscribers already there. A signal that fails to publish is
 * published again once the publisher is back, as the bus's wake-ups are. Outages are logged by
 * the wake-up bus, which shares this Redis.
 */
export async function connectSignal(url: string, name: string, channel: string, onMessage: (text: string) => void) {
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResubscribe: false, retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000) };
  const publisher = new Redis(url, { ...options, connectionName: `audit-${name}-publisher` });
  const subscriber = new Redis(url, { ...options, connectionName: `audit-${name}-subscriber` });
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  const subscriptions = subscribedChannels(subscriber, () => {});
  subscriptions.add(channel);
  await subscriptions.firstAttempt;
  subscriber.on('message', (from: string, text: string) => {
    if (from === channel) onMessage(text);
  });
  // The signals this instance could not publish (its connection to Redis away), sent once the
  // publisher is back: another instance whose Redis stayed healthy has nothing else to tell it.
  const unsent = new Set<string>();
  const publish = (text: string) => void publisher.publish(channel, text).catch(() => unsent.add(text));
  publisher.on('ready', () => {
    const texts = [...unsent];
    unsent.clear();
    texts.forEach(publish);
  });
  return {
    /** The channel subscribed on the subscriber's current connection: other instances' signals reach this one. */
    subscribed: subscriptions.subscribed,
    /** Called once the channel is subscribed again: a signal sent before is read from the database then. */
    onSubscribed: subscriptions.onSubscribed,
    /** Never throws nor rejects: a signal that cannot be published now is published once the publisher is back. */
    publish,
    async close() {
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
