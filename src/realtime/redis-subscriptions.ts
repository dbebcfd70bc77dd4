import { Redis, ReplyError } from 'ioredis';
import { log, outsideErrorFields } from '../log.js';

/** How long a SUBSCRIBE that Redis refused on a connection that stays up waits before it is tried again. */
export const RESUBSCRIBE_MS = 1000;

/**
 * The channels a subscriber connection listens to, subscribed on each of its connections (the
 * connection is made with `autoResubscribe: false`). `subscribed()` is true only once every channel
 * is subscribed on the current connection: until then another instance's message is lost, and
 * what it said is read from the database when `onSubscribed` listeners run. A SUBSCRIBE refused
 * on a connection that stays up (an ACL, a Redis busy loading) is tried again every
 * RESUBSCRIBE_MS, not left until the next reconnection. Each refusal goes to `failed`, which
 * logs it (the bus's outage log, once per outage); nothing is logged here.
 */
export function subscribedChannels(subscriber: Redis, failed: (error: unknown) => void) {
  const channels = new Set<string>();
  const subscribedListeners: (() => void)[] = [];
  let subscribed = false;
  // Bumped by each connection and each refusal: only the latest attempt's SUBSCRIBE says the channels are subscribed.
  let attempt = 0;
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

/** Past this many threads or owners held unsent, a publisher holds one "everything changed" instead (heldSignals). */
export const MAX_UNSENT_SIGNALS = 1000;
/** The first wait before a PUBLISH that Redis refused on a connection that stays up is tried again; it doubles up to `max`. */
export const REPUBLISH_MS = { first: 1000, max: 30_000 };

/**
 * The channel of "everything changed": an instance that held more signals than it may keeps none
 * and sends this one instead, and each instance that hears it reads what a recovery reads (every
 * subscribed thread's cursor, a new view for every dashboard).
 */
export const everythingChangedChannel = (prefix: string) => `${prefix}everything-changed`;

/**
 * What one publisher could not publish, by key (a thread, an owner), sent again through `resend`:
 * once its connection is back, or, when Redis refused the PUBLISH on a connection that stays up
 * (an ACL), after a wait doubling from REPUBLISH_MS.first (logged once when the refusal begins,
 * once when it ends). Past `limit` keys it holds one "everything changed" instead: an outage of
 * any length holds at most `limit` keys, and a missed signal is never lost.
 */
export function heldSignals<V>(
  publisher: Redis,
  { prefix, limit = MAX_UNSENT_SIGNALS, resend, merge = (_held, value) => value }: { prefix: string; limit?: number; resend: (key: string, value: V) => void; merge?: (held: V, value: V) => V },
) {
  const held = new Map<string, V>();
  let everything = false;
  let refusal: { channel: string; sinceMs: number; waitMs: number; timer: NodeJS.Timeout | null } | null = null;
  const redis = `${publisher.options.host}:${publisher.options.port}`;

  const hold = (key: string | null, value?: V) => {
    if (everything) return;
    if (key === null || (!held.has(key) && held.size >= limit)) {
      everything = true;
      held.clear();
    } else held.set(key, held.has(key) ? merge(held.get(key)!, value!) : value!);
  };
  const sendHeld = () => {
    if (everything) {
      everything = false;
      publish(everythingChangedChannel(prefix), 'everything', null);
    }
    const entries = [...held];
    held.clear();
    for (const [key, value] of entries) resend(key, value);
  };
  const accepted = () => {
    if (!refusal || refusal.timer || everything || held.size > 0) return;
    log.info({ component: 'realtime', redis, channel: refusal.channel, refusedForMs: Date.now() - refusal.sinceMs }, 'Redis accepts PUBLISH again');
    refusal = null;
  };
  const failed = (channel: string, error: unknown) => {
    // Refused for want of a connection: the next one sends what is held ('ready').
    if (!(error instanceof ReplyError) || publisher.status !== 'ready') return;
    if (!refusal) {
      refusal = { channel, sinceMs: Date.now(), waitMs: REPUBLISH_MS.first, timer: null };
      log.warn(
        { component: 'realtime', redis, channel, error: outsideErrorFields(error) },
        "Redis refused PUBLISH: other instances do not hear of this instance's changes on it until it accepts it; sending again meanwhile",
      );
    }
    if (refusal.timer) return;
    const current = refusal;
    current.timer = setTimeout(() => {
      current.timer = null;
      current.waitMs = Math.min(current.waitMs * 2, REPUBLISH_MS.max);
      sendHeld();
    }, current.waitMs).unref();
  };
  /** Never rejects: what Redis does not take is held, `key` null holding "everything changed". */
  const publish = (channel: string, text: string, key: string | null, value?: V) =>
    void publisher.publish(channel, text).then(accepted, (error: unknown) => {
      hold(key, value);
      failed(channel, error);
    });
  publisher.on('ready', () => {
    if (refusal?.timer) clearTimeout(refusal.timer);
    if (refusal) refusal.timer = null;
    sendHeld();
  });

  return {
    publish,
    /** How many signals are held: threads or owners, or 1 for "everything changed". */
    count: () => (everything ? 1 : held.size),
    close() {
      if (refusal?.timer) clearTimeout(refusal.timer);
    },
  };
}

/**
 * A signal told to every instance on one Redis channel: a publisher and a subscriber connection of
 * their own (named `audit-<name>-…`), the channel subscribed as subscribedChannels says, each
 * message on it handed to `onMessage`. Resolves after the first SUBSCRIBE attempt, as the bus
 * does, so a start is no recovery of subscribers already there. A signal that fails to publish is
 * held and published again (heldSignals), as the bus's wake-ups are. Outages are logged by
 * the wake-up bus, which shares this Redis.
 */
export async function connectSignal(
  url: string,
  name: string,
  channel: string,
  onMessage: (text: string) => void,
  { prefix, maxUnsent }: { prefix: string; maxUnsent?: number },
) {
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
  // Sent again even though the other instances' Redis stayed healthy: they have nothing else to tell them.
  const unsent: ReturnType<typeof heldSignals<undefined>> = heldSignals(publisher, { prefix, limit: maxUnsent, resend: (text) => publish(text) });
  const publish = (text: string) => unsent.publish(channel, text, text);
  return {
    /** The channel subscribed on the subscriber's current connection: other instances' signals reach this one. */
    subscribed: subscriptions.subscribed,
    /** Called once the channel is subscribed again: a signal sent before is read from the database then. */
    onSubscribed: subscriptions.onSubscribed,
    /** Never throws nor rejects: a signal that cannot be published now is held and published later. */
    publish,
    /** Signals held unsent (GET /metrics). */
    unsent: unsent.count,
    async close() {
      unsent.close();
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
