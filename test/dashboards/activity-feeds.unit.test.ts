import { describe, expect, it } from 'vitest';
import { createActivityFeeds, MIN_VIEW_INTERVAL_MS, type ReadActivity } from '../../src/realtime/activity-feeds.js';
import { movedClock } from '../support/moved-clock.js';
import type { ToolActivity } from '../../src/domain/tool-activity.js';

const viewOf = (ownerId: string) => ({ ownerId }) as unknown as ToolActivity;

describe('activity feeds', () => {
  it('one view whose read fails does not hold back the others read in the same round trip', async () => {
    // As PostgreSQL answers several EXECUTEs sent in one query: one failing statement fails them all.
    const batches: string[][] = [];
    const read: ReadActivity = async (reads) => {
      batches.push(reads.map((r) => r.ownerId));
      if (reads.some((r) => r.ownerId === 'broken')) throw new Error('statement failed');
      return reads.map((r) => viewOf(r.ownerId));
    };
    const feeds = createActivityFeeds(read);
    const streams = ['a', 'broken', 'b'].map((ownerId) => feeds.subscribe(ownerId, { windowSeconds: 3600, name: null }));
    const [a, broken, b] = streams.map((stream) => stream.next()) as [Promise<IteratorResult<unknown>>, Promise<IteratorResult<unknown>>, Promise<IteratorResult<unknown>>];
    expect((await a).value).toEqual(viewOf('a'));
    expect((await b).value).toEqual(viewOf('b'));
    // They were due together, so first read together; that failed, and the next try of each
    // went alone, with no wait: the first view of `a` and `b` came from the first round's retry.
    expect(batches).toEqual([['a', 'broken', 'b'], ['a'], ['broken'], ['b']]);
    let brokenDelivered = false;
    void broken.then(() => (brokenDelivered = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(brokenDelivered).toBe(false);
    for (const stream of streams) await stream.return!();
  });
});

describe('activity feeds: cadence', () => {
  it('delivers views at least MIN_VIEW_INTERVAL_MS apart on its clock, however long a read takes', async () => {
    const clock = movedClock();
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let readsStarted = 0;
    const read: ReadActivity = async (reads) => {
      // The first read waits (for a pool connection, or a slow statement); the others answer at once.
      if (++readsStarted === 1) await firstHeld;
      return reads.map((r) => viewOf(r.ownerId));
    };
    const feeds = createActivityFeeds(read, clock);
    const stream = feeds.subscribe('owner', { windowSeconds: 3600, name: null });
    const deliveredAtMs: number[] = [];
    const next = async () => {
      await stream.next();
      deliveredAtMs.push(clock.now());
    };
    const first = next();
    await until(() => readsStarted === 1);
    clock.move(MIN_VIEW_INTERVAL_MS - 100);
    releaseFirst();
    await first;
    // A change right after the slow view: the next view is still a whole interval after it.
    feeds.changed(['owner']);
    const second = next();
    while (deliveredAtMs.length < 2) {
      clock.move(100);
      await Promise.race([second, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
    expect(deliveredAtMs[1]! - deliveredAtMs[0]!).toBeGreaterThanOrEqual(MIN_VIEW_INTERVAL_MS);
    await stream.return!();
  });
});

async function until(holds: () => boolean) {
  while (!holds()) await new Promise((resolve) => setTimeout(resolve, 5));
}
