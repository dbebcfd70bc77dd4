import { describe, expect, it } from 'vitest';
import { createActivityFeeds, type ReadActivity } from '../../src/realtime/activity-feeds.js';
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
