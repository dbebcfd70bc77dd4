import { connectSignal } from './redis-subscriptions.js';

/**
 * Deleted threads, told to every instance: one Redis channel (`<prefix>thread-deleted`) whose
 * messages are thread ids; each instance ends its streams of that thread. Kept apart from the
 * change wake-ups (redis-bus.ts): a deletion is no change of the thread, and has no cursor.
 * A deletion this instance could not publish is held and published again
 * (connectSignal); one another instance missed while its own was away is made up by the poll of
 * subscribed threads' cursors (pubsub.ts), which ends the feed of a thread it no longer finds.
 * Connecting never holds the start up: the connections retry until Redis is there.
 */
export const connectDeletionSignal = (url: string, prefix: string, onDeleted: (threadId: string) => void, maxUnsent?: number) =>
  connectSignal(url, 'deletion', `${prefix}thread-deleted`, onDeleted, { prefix, maxUnsent });
