import { setMaxListeners } from 'node:events';
import type { Config } from '../config.js';
import type { DomainEvent } from '../domain/events.js';
import { connectRedisBus } from './redis-bus.js';
import { StreamInterrupted, SubscriptionQueue } from './subscription-queue.js';

export { StreamInterrupted } from './subscription-queue.js';

type AuditEvent = Extract<DomainEvent, { kind: 'audit' }>;
type RunEvent = Extract<DomainEvent, { kind: 'run' }>;

/** Topics are scoped by thread id; payloads are ids only (they travel as JSON through Redis). */
export interface Topics {
  audit: AuditEvent;
  run: RunEvent;
}
export type Topic = keyof Topics;

/** What a subscriber receives: events, and possibly one StreamInterrupted as the last value. */
export type Delivery<K extends Topic> = Topics[K] | StreamInterrupted;

/** How far a subscriber may fall behind before it is interrupted (docs/subscriptions.md). */
export const DEFAULT_MAX_PENDING_EVENTS = 256;

export interface PubSub {
  /** Never throws and never waits for subscribers or for Redis. */
  publish<K extends Topic>(topic: K, threadId: string, event: Topics[K]): void;
  /**
   * The thread's events from now on, in publish order, only those `accept` returns true for (the
   * others never wait in the subscriber's backlog). Resolves once they are flowing (with Redis:
   * once the channel is subscribed), so nothing committed after that is missed. With `endsAtMs`
   * (the subscriber's token expiry), the stream is interrupted with TOKEN_EXPIRED at that time.
   */
  subscribe<K extends Topic>(topic: K, threadId: string, options?: SubscribeOptions<K>): Promise<AsyncIterableIterator<Delivery<K>>>;
  /** Subscriptions whose events are flowing, for readiness probes. */
  subscriberCount(topic: Topic, threadId: string): number;
}

export interface SubscribeOptions<K extends Topic> {
  accept?: (event: Topics[K]) => boolean;
  endsAtMs?: number;
}

/** Where events travel: within this process, or through Redis to every instance. */
export interface EventBus {
  target: EventTarget;
  /** Resolves once `channel`'s events reach `target`; rejects when they cannot. */
  listening(channel: string): Promise<unknown>;
  /** False while the bus cannot deliver (Redis unreachable). */
  available(): boolean;
  /** Calls `listener` whenever events may have been lost (the Redis connection dropped). */
  onEventsLost(listener: () => void): void;
  close(): Promise<void>;
}

const channelOf = (topic: Topic, threadId: string) => `${topic}:${threadId}`;

const stopping = () =>
  new StreamInterrupted('SERVER_STOPPING', 'The server is stopping. Re-read the current state and subscribe again.');

const tokenExpired = () =>
  new StreamInterrupted('TOKEN_EXPIRED', 'The token that started this subscription has expired. Subscribe again with a fresh token.');

/** setTimeout's longest delay (about 24.8 days); tokens may live longer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fn` at `atMs` (ms since the epoch), however far away; the returned function cancels it. */
function at(atMs: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const wait = atMs - Date.now();
    timer = wait > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, wait));
    // A pending expiry never keeps the process alive.
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

const unavailable = () =>
  new StreamInterrupted(
    'PUBSUB_UNAVAILABLE',
    'The event bus is unavailable, so events may have been missed. Re-read the current state and subscribe again.',
  );

function createPubSub(bus: EventBus, maxPendingEvents = DEFAULT_MAX_PENDING_EVENTS) {
  const open = new Map<Pick<SubscriptionQueue<unknown>, 'interrupt'>, { channel: string; flowing: boolean }>();

  const pubsub: PubSub & { interruptAll(interruption: StreamInterrupted): void } = {
    publish(topic, threadId, event) {
      bus.target.dispatchEvent(new CustomEvent(channelOf(topic, threadId), { detail: event }));
    },

    async subscribe<K extends Topic>(topic: K, threadId: string, { accept, endsAtMs }: SubscribeOptions<K> = {}) {
      const channel = channelOf(topic, threadId);
      const listener = (event: Event) => {
        const detail = (event as CustomEvent<Topics[K]>).detail;
        if (!accept || accept(detail)) queue.push(detail);
      };
      const cancelExpiry = endsAtMs === undefined ? () => {} : at(endsAtMs, () => queue.interrupt(tokenExpired()));
      const queue: SubscriptionQueue<Topics[K]> = new SubscriptionQueue(maxPendingEvents, () => {
        cancelExpiry();
        bus.target.removeEventListener(channel, listener);
        open.delete(queue);
      });
      if (!bus.available()) {
        queue.interrupt(unavailable());
        return queue;
      }
      const entry = { channel, flowing: false };
      open.set(queue, entry);
      bus.target.addEventListener(channel, listener);
      try {
        await bus.listening(channel);
        entry.flowing = true;
      } catch {
        queue.interrupt(unavailable());
      }
      return queue;
    },

    subscriberCount(topic, threadId) {
      const channel = channelOf(topic, threadId);
      return [...open.values()].filter((entry) => entry.channel === channel && entry.flowing).length;
    },

    /** Every open stream tells its subscriber why it ends. */
    interruptAll(interruption) {
      for (const queue of [...open.keys()]) queue.interrupt(interruption);
    },
  };
  bus.onEventsLost(() => pubsub.interruptAll(unavailable()));
  return pubsub;
}

function inProcessBus(): EventBus {
  const target = new EventTarget();
  // Every subscriber of a thread listens on its topic; there is no leak to warn about.
  setMaxListeners(0, target);
  return {
    target,
    listening: () => Promise.resolve(),
    available: () => true,
    onEventsLost: () => {},
    close: () => Promise.resolve(),
  };
}

/**
 * The domain's event sink: routes committed events to their thread topics. It runs after the
 * commit, so it must not throw: a failure here would report a committed write as failed.
 */
export function publisherFor(pubsub: PubSub): (events: DomainEvent[]) => void {
  return (events) => {
    for (const event of events) {
      try {
        if (event.kind === 'audit') pubsub.publish('audit', event.threadId, event);
        else pubsub.publish('run', event.threadId, event);
      } catch (error) {
        console.error('[realtime] could not publish a committed event:', error);
      }
    }
  };
}

/**
 * In-process pub/sub for one instance; with REDIS_URL, Redis fan-out to every instance (the
 * start fails if Redis cannot be reached then; a later outage only interrupts subscriptions).
 */
export async function createPubSubFor(config: Config, options: { maxPendingEvents?: number } = {}) {
  const bus = config.redisUrl ? await connectRedisBus(config.redisUrl) : inProcessBus();
  const pubsub = createPubSub(bus, options.maxPendingEvents);
  return {
    pubsub: pubsub as PubSub,
    publishEvents: publisherFor(pubsub),
    /** Ends every open stream with SUBSCRIPTION_INTERRUPTED: at shutdown, so SSE responses can finish. */
    interruptSubscriptions: () => pubsub.interruptAll(stopping()),
    async close() {
      pubsub.interruptAll(stopping());
      await bus.close();
    },
  };
}
