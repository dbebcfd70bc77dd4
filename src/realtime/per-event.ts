/**
 * A value computed at most once per published event and key, shared by every subscriber that
 * receives that event object (each one's queue holds the same object). Entries live as long as
 * the event does: once no queue holds it, they are garbage.
 */
export function perEvent<T>(): (event: object, key: string, compute: () => T) => T {
  const computed = new WeakMap<object, Map<string, T>>();
  return (event, key, compute) => {
    let byKey = computed.get(event);
    if (!byKey) computed.set(event, (byKey = new Map()));
    if (!byKey.has(key)) byKey.set(key, compute());
    return byKey.get(key)!;
  };
}

const pages = new WeakMap<object, readonly object[]>();

/** Marks the changes of one catch-up read as read together (src/realtime/pubsub.ts, ThreadFeed). */
export function readTogether(page: readonly object[]): void {
  for (const change of page) pages.set(change, page);
}

/** The catch-up page a change was read in; undefined for a change published live. */
export const pageOf = (change: object): readonly object[] | undefined => pages.get(change);
