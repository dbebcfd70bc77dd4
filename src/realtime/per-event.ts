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

const bursts = new WeakMap<object, readonly object[]>();

/**
 * Marks changes that are delivered together, one after another: those of one catch-up read, or
 * those one command (or batch) published at once (src/realtime/pubsub.ts, ThreadFeed).
 */
export function deliveredTogether(changes: readonly object[]): void {
  if (changes.length > 1) for (const change of changes) bursts.set(change, changes);
}

/** The changes a change was delivered with (itself among them); undefined for one read or published alone. */
export const deliveredWith = (change: object): readonly object[] | undefined => bursts.get(change);
