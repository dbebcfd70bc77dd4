/**
 * Calls `listener` once when `signal` aborts; the function returned takes it off. Every listener of
 * one signal shares a single 'abort' listener on it: a worker pool passes one long-lived signal (its
 * shutdown) to hundreds of runs at once, and Node warns of a leak past 10 listeners on a signal
 * (MaxListenersExceededWarning). Taken off when the last one is.
 */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let listeners = shared.get(signal);
  if (!listeners) {
    const entries = new Set<() => void>();
    const fire = () => {
      shared.delete(signal);
      for (const each of [...entries]) each();
    };
    listeners = { entries, fire };
    shared.set(signal, listeners);
    signal.addEventListener('abort', fire, { once: true });
  }
  const { entries, fire } = listeners;
  const once = () => {
    entries.delete(once);
    listener();
  };
  entries.add(once);
  return () => {
    entries.delete(once);
    if (entries.size === 0 && shared.get(signal)?.entries === entries) {
      shared.delete(signal);
      signal.removeEventListener('abort', fire);
    }
  };
}

const shared = new WeakMap<AbortSignal, { entries: Set<() => void>; fire: () => void }>();

/** Rejects with the signal's reason as soon as it aborts, else settles as `promise` does. */
export function untilAborted<T>(signal: AbortSignal | undefined, promise: Promise<T>): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const detach = onAbort(signal, () => reject(signal.reason));
    promise.then(resolve, reject).finally(detach);
  });
}
