import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { Redis, type RedisOptions } from 'ioredis';
import type { EventBus } from './pubsub.js';

/**
 * Fail fast instead of queueing: while Redis is unreachable a command is rejected at once (no
 * offline queue growing in memory, no writer waiting), and nothing is replayed on reconnect:
 * the subscriptions interrupted by the outage are started afresh by their clients.
 */
const FAIL_FAST: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResubscribe: false,
  autoResendUnfulfilledCommands: false,
};

/** Logs the first failure of an outage and the recovery, not every retry. */
function outageLog(name: string) {
  let down = false;
  return {
    failed(error: unknown) {
      if (down) return;
      down = true;
      console.error(`[realtime] Redis ${name} connection failed; live events are not delivered until it is back:`, String(error));
    },
    recovered() {
      if (!down) return;
      down = false;
      console.warn(`[realtime] Redis ${name} connection is back`);
    },
  };
}

/**
 * Redis fan-out: every instance publishes to and subscribes on one channel per thread topic.
 * Needs two connections (a subscribing connection cannot publish). Rejects if Redis cannot be
 * reached at start; a later outage never throws to writers, it interrupts the subscriptions.
 */
export async function connectRedisBus(url: string): Promise<EventBus> {
  const publisher = new Redis(url, FAIL_FAST);
  const subscriber = new Redis(url, FAIL_FAST);
  const publishLog = outageLog('publish');
  const subscribeLog = outageLog('subscribe');
  publisher.on('error', publishLog.failed).on('ready', publishLog.recovered);
  subscriber.on('error', subscribeLog.failed).on('ready', subscribeLog.recovered);

  try {
    await Promise.all([publisher.connect(), subscriber.connect()]);
  } catch (error) {
    publisher.disconnect();
    subscriber.disconnect();
    throw new Error(`REDIS_URL is set but Redis cannot be reached: ${String(error)}`);
  }

  // Events published while either connection is down are gone: the subscriptions must be told.
  const lostListeners: (() => void)[] = [];
  let healthy = true;
  const connectionLost = () => {
    if (!healthy) return;
    healthy = false;
    for (const listener of lostListeners) listener();
  };
  const connectionReady = () => (healthy = publisher.status === 'ready' && subscriber.status === 'ready');
  for (const client of [publisher, subscriber]) client.on('close', connectionLost).on('ready', connectionReady);

  // createRedisEventTarget calls only these methods and drops the promises they return; during
  // an outage those reject, and an unhandled rejection would crash the process.
  const subscribed = new Map<string, Promise<unknown>>();
  const target = createRedisEventTarget({
    publishClient: {
      publish: (channel: string, message: string) => publisher.publish(channel, message).catch(publishLog.failed),
    } as unknown as Redis,
    subscribeClient: {
      on: (event: string, listener: (...args: any[]) => void) => subscriber.on(event, listener),
      subscribe: (channel: string) => {
        const acknowledged = subscriber.subscribe(channel);
        acknowledged.catch(subscribeLog.failed);
        subscribed.set(channel, acknowledged);
        return acknowledged;
      },
      unsubscribe: (channel: string) => {
        subscribed.delete(channel);
        return subscriber.unsubscribe(channel).catch(subscribeLog.failed);
      },
    } as unknown as Redis,
  });

  return {
    target,
    listening: (channel) => subscribed.get(channel) ?? Promise.reject(new Error(`not subscribed to ${channel}`)),
    available: () => healthy,
    onEventsLost: (listener) => void lostListeners.push(listener),
    async close() {
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
