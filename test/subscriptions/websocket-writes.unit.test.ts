import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { Outcome, SharedStream } from '../../src/realtime/shared-subscriptions.js';
import { writtenBySubscription } from '../../src/realtime/websocket.js';

// The graphql-ws write path (src/realtime/websocket.ts): each subscription waits for its own
// frame to be written, never for the connection's whole buffer. A socket whose writes complete
// one frame at a time, when the test says so, shows the difference deterministically.

class OneFrameAtATimeSocket {
  readyState: number = WebSocket.OPEN;
  readonly written: string[] = [];
  private pending: { data: string; callback?: () => void }[] = [];

  get bufferedAmount(): number {
    return this.pending.reduce((bytes, frame) => bytes + frame.data.length, 0);
  }

  send(data: string | Buffer, ...rest: unknown[]): void {
    const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
    this.pending.push({ data: String(data), callback });
  }

  /** The oldest buffered frame reaches the client; its own send callback fires. */
  writeOne(): boolean {
    const frame = this.pending.shift();
    if (!frame) return false;
    this.written.push(frame.data);
    frame.callback?.();
    return true;
  }
}

/** By default, frames larger than what a subscription sends on without waiting (16 KiB unsent). */
function streamOf(values: number[], padding = 20_000): SharedStream {
  async function* events() {
    yield* values;
  }
  return { events: events(), resultOf: async (value) => ({ data: { n: value, padding: 'x'.repeat(padding) } }) };
}

/**
 * The same values as a stream taken synchronously (as ChangeStream's `pull`), with the group's
 * outcome settled at once or, with `async`, one microtask later.
 */
function pullableOf(values: number[], padding = 20_000, async = false): SharedStream {
  const queue = [...values];
  const events = {
    pull: () => (queue.length ? { value: queue.shift()!, done: false } : { value: undefined, done: true }),
    next: async () => events.pull(),
    return: async () => ({ value: undefined, done: true }),
  };
  const outcomeOf = (value: unknown): Outcome => {
    const result = { data: { n: value, padding: 'x'.repeat(padding) } };
    const outcome: Outcome = { settled: !async, result, waiters: [], promise: Promise.resolve(result) };
    if (async)
      void outcome.promise.then(() => {
        outcome.settled = true;
        for (const waiter of outcome.waiters.splice(0)) waiter();
      });
    return outcome;
  };
  return { events: events as unknown as AsyncIterator<unknown>, resultOf: async (value) => outcomeOf(value).promise, outcomeOf };
}

const STREAMS = [
  ['awaited', streamOf],
  ['pulled, results settled', (values: number[], padding?: number) => pullableOf(values, padding)],
  ['pulled, results settling later', (values: number[], padding?: number) => pullableOf(values, padding, true)],
] as const;

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe.each(STREAMS)('graphql-ws subscriptions sharing one connection (%s)', (_name, streamOf) => {
  it("a subscription whose frame was written goes on while another's frame is still buffered", async () => {
    const socket = new OneFrameAtATimeSocket();
    const ws = socket as unknown as WebSocket;
    const first = writtenBySubscription(streamOf([1, 2, 3]), ws, 'first');
    const second = writtenBySubscription(streamOf([1, 2, 3]), ws, 'second');
    const done = Promise.all([first.next(), second.next()]);

    // Write frames as they come, letting both subscriptions react to each callback.
    for (let rounds = 0; rounds < 50; rounds++) {
      await settle();
      if (!socket.writeOne()) await settle();
    }
    const idsOf = (id: string) => socket.written.filter((frame) => frame.startsWith(`{"id":"${id}"`));
    expect(idsOf('first')).toHaveLength(3);
    expect(idsOf('second')).toHaveLength(3);
    await done;
  });
});

/** A ws server and client on loopback; counts the writes to the server side's TCP socket. */
async function connectedPair() {
  const server = new WebSocketServer({ port: 0 });
  onTestFinished(() => void server.close());
  const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  onTestFinished(() => client.terminate());
  const received: string[] = [];
  client.on('message', (data) => received.push(String(data)));
  const socket = await accepted;

  const raw = (socket as unknown as { _socket: Socket })._socket;
  const counter = { writes: 0 };
  for (const method of ['_write', '_writev'] as const) {
    const original = raw[method]!.bind(raw) as (...args: unknown[]) => void;
    (raw as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      counter.writes++;
      original(...args);
    };
  }
  return { socket, received, counter };
}

describe.each(STREAMS)('graphql-ws frames of one event-loop pass (%s)', (_name, streamOf) => {
  it("leave a connection in two socket writes: the pass's first frame at once, the rest together", async () => {
    const { socket, received, counter } = await connectedPair();
    let writesBeforePassEnded = -1;
    setImmediate(() => (writesBeforePassEnded = counter.writes));
    const streams = ['a', 'b', 'c'].map((id) => writtenBySubscription(streamOf([1, 2], 100), socket, id));
    void Promise.all(streams.map((stream) => stream.next()));

    while (received.length < 6) await settle();
    expect(writesBeforePassEnded).toBe(1);
    expect(counter.writes).toBe(2);
    expect(received.map((frame) => JSON.parse(frame).id).sort()).toEqual(['a', 'a', 'b', 'b', 'c', 'c']);
  });
});

describe.each(STREAMS)('graphql-ws frames written straight to the TCP socket (%s)', (_name, streamOf) => {
  it.each([10, 200, 70_000])('reach a ws client intact, %i-character payloads and their header lengths', async (padding) => {
    const { socket, received } = await connectedPair();
    await writtenBySubscription(streamOf([1, 2, 3], padding), socket, 'é').next();

    while (received.length < 3) await settle();
    expect(received.map((frame) => JSON.parse(frame))).toEqual(
      [1, 2, 3].map((n) => ({ id: 'é', type: 'next', payload: { data: { n, padding: 'x'.repeat(padding) } } })),
    );
  });
});
