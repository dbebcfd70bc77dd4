import { connectSignal } from './redis-subscriptions.js';
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
  const logFailure = (error: unknown) => log.error({ component: 'realtime', error: errorFields(error) }, 'could not publish a deletion on Redis; the poll makes up for it');
  const signal = await connectSignal(url, 'deletion', `${prefix}thread-deleted`, onDeleted);
  return {
    ...signal,
    publish(threadId: string) {
      signal.publish(threadId).catch(logFailure);
    },
  };
}
