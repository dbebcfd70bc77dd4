import type { Clock } from '../../src/realtime/activity-feeds.js';

/**
 * A clock that runs with real time and that a test can move forward: what is due by the moved
 * time runs at once, so a test sees what a minute of idling does without waiting a minute.
 */
export function movedClock(): Clock & { move(ms: number): void } {
  let offset = 0;
  const pending = new Set<{ atMs: number; fire: () => void }>();
  const now = () => Date.now() + offset;
  return {
    now,
    at(atMs, fn) {
      const entry = {
        atMs,
        fire: () => {
          clearTimeout(timer);
          if (pending.delete(entry)) fn();
        },
      };
      const timer = setTimeout(entry.fire, Math.max(0, atMs - now()));
      timer.unref();
      pending.add(entry);
      return () => {
        clearTimeout(timer);
        pending.delete(entry);
      };
    },
    move(ms) {
      offset += ms;
      for (const entry of [...pending]) if (entry.atMs <= now()) entry.fire();
    },
  };
}
