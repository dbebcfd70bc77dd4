import { describe, expect, it, vi } from 'vitest';
import { StreamInterrupted, SubscriptionQueue, drainStream } from '../../src/realtime/subscription-queue.js';

// A subscriber's queue read by a handler (graphql-ws subscriptions write their frames this way):
// the same order, bound and endings as when it is read as an async iterator.

const valueOf = (value: unknown) => (value instanceof StreamInterrupted ? value.reason : value);

describe('SubscriptionQueue#drain', () => {
  it('hands each value to the handler in the publisher’s call, in order', async () => {
    const queue = new SubscriptionQueue<string>(10, () => {});
    queue.push('before');
    const handled: unknown[] = [];
    const drained = queue.drain((value) => void handled.push(valueOf(value)));
    expect(handled).toEqual(['before']);
    queue.push('a');
    queue.push('b');
    expect(handled).toEqual(['before', 'a', 'b']);
    await queue.return();
    await drained;
  });

  it('holds later values while the handler is busy, and interrupts a handler that falls too far behind', async () => {
    const detach = vi.fn();
    const queue = new SubscriptionQueue<string>(2, detach);
    const handled: unknown[] = [];
    let finish = () => {};
    const drained = queue.drain((value) => {
      handled.push(valueOf(value));
      if (value === 'slow') return new Promise<void>((resolve) => (finish = resolve));
    });
    queue.push('slow');
    queue.push('1');
    queue.push('2');
    expect(handled).toEqual(['slow']);
    queue.push('3'); // a third waiting value is one too many
    expect(detach).toHaveBeenCalledOnce();
    finish();
    await drained;
    expect(handled).toEqual(['slow', 'SUBSCRIBER_LAGGING']);
  });

  it('ends when the stream is returned: nothing pushed afterwards is handled', async () => {
    const detach = vi.fn();
    const queue = new SubscriptionQueue<string>(10, detach);
    const handled: unknown[] = [];
    const drained = queue.drain((value) => void handled.push(value));
    await queue.return();
    await drained;
    queue.push('late');
    expect(handled).toEqual([]);
    expect(detach).toHaveBeenCalledOnce();
  });

  it('a handler that fails ends the stream and rejects the drain', async () => {
    const detach = vi.fn();
    const queue = new SubscriptionQueue<string>(10, detach);
    const drained = queue.drain((value) => {
      if (value === 'bad') throw new Error('handler failed');
    });
    queue.push('bad');
    await expect(drained).rejects.toThrow('handler failed');
    expect(detach).toHaveBeenCalledOnce();
    expect(queue.open).toBe(false);
  });
});

describe('drainStream', () => {
  it('pulls any other async iterator, one value after the handler is done with the previous one', async () => {
    async function* source() {
      yield 'a';
      yield 'b';
    }
    const handled: unknown[] = [];
    await drainStream(source(), async (value) => {
      await Promise.resolve();
      handled.push(value);
    });
    expect(handled).toEqual(['a', 'b']);
  });
});
