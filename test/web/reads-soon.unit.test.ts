// readsSoon's schedule, on a fake clock: each key is tried again at its own pace, so a key whose
// read keeps failing neither is tried at once whenever another key's read succeeds, nor holds
// another key's read back for its own long wait.
import { createClient } from 'graphql-ws';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { UNREACHABLE } from '../../web/src/api.js';
import { readsSoon } from '../../web/src/live.js';

describe('readsSoon', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("tries a key that keeps failing at its own back-off while another key's reads succeed, and reads the other without waiting for it", async () => {
    // A client that never connects (lazy, nothing subscribed): no 'connected' comes.
    const client = createClient({ url: 'ws://127.0.0.1:9/graphql', webSocketImpl: WebSocket });
    const reads: { key: string; at: number }[] = [];
    const failures: unknown[] = [];
    const reader = readsSoon<string>(
      client,
      async (key) => {
        reads.push({ key, at: Date.now() });
        if (key === 'failing') throw new Error(UNREACHABLE);
      },
      (error) => failures.push(error),
    );
    const start = Date.now();
    reader.soon(['failing']);
    // A minute in which the other key is asked for every 2 s (a change each time), its reads answered.
    for (let second = 0; second < 60; second += 2) {
      await vi.advanceTimersByTimeAsync(2000);
      const asked = Date.now();
      reader.soon(['succeeding']);
      await vi.advanceTimersByTimeAsync(500);
      expect(reads.some(({ key, at }) => key === 'succeeding' && at >= asked), `the read asked at ${asked - start} ms is not held back`).toBe(true);
    }
    reader.stop();
    const failingAt = reads.filter(({ key }) => key === 'failing').map(({ at }) => at - start);
    // 0.5 s, then 1, 2, 4, 8, 15, 15… s after each failure.
    expect(failingAt.slice(0, 7)).toEqual([500, 1500, 3500, 7500, 15_500, 30_500, 45_500]);
    expect(failures).toHaveLength(failingAt.length);
    await client.dispose();
  });
});
