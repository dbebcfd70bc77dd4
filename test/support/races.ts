import { expect } from 'vitest';

/**
 * Plays a race trial after trial until each outcome it accepts has occurred, at most `maxTrials`
 * times, and returns the outcomes seen, sorted: a race test asserts they are all of `accepted`,
 * showing that every outcome it allows really happens. Each trial returns its outcome (or one
 * for each of several reads it races); one outside `accepted` fails at once.
 */
export async function untilEachOutcome(
  accepted: readonly string[],
  trial: (index: number) => Promise<string | string[]>,
  maxTrials = 40,
): Promise<string[]> {
  const seen = new Set<string>();
  for (let index = 0; index < maxTrials && seen.size < accepted.length; index++) {
    for (const outcome of [await trial(index)].flat()) {
      expect(accepted, `trial ${index}`).toContain(outcome);
      seen.add(outcome);
    }
  }
  return [...seen].sort();
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends two racing calls for trial `index`: in turn each goes first, and the other follows 0 to
 * 10 ms later (growing every second trial). A backend need not favour the first sent when both
 * arrive together (a PostgreSQL pool, say, may consistently favour the second), so only varying
 * the gap lets each side get ahead in some trial. Resolves with both results, in argument order.
 */
export function sendRacing<A, B>(index: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  const gap = Math.floor(index / 2) % 11;
  return index % 2 === 0 ? Promise.all([a(), pause(gap).then(b)]) : Promise.all([pause(gap).then(a), b()]);
}

/**
 * The first value of up to `maxTrials` plays of `trial`, which returns null when a loaded machine
 * outran what it must do in time (a short-lived token or lease); fails, saying `what`, when every
 * play was too late.
 */
export async function firstInTime<T>(what: string, trial: () => Promise<T | null>, maxTrials = 10): Promise<T> {
  for (let index = 0; index < maxTrials; index++) {
    const value = await trial();
    if (value !== null) return value;
  }
  expect.fail(`${what} in ${maxTrials} trials`);
}
