import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { Outcome } from '../../src/transports/shared-subscriptions.js';
import { writtenBySubscription } from '../../src/transports/websocket.js';

type Written = Parameters<typeof writtenBySubscription>[0];

// The graphql-ws write path (src/transports/websocket.ts): each subscription waits for its own
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
function streamOf(values: number[], padding = 20_000): Written {
  async function* events() {
    yield* values;
  }
  return { events: events(), resultOf: async (value) => ({ data: { n: value, padding: 'x'.repeat(padding) } }) };
}

/**
 * The same values as a stream taken synchronously (as ChangeStream's `pull`), with the group's
 * outcome settled at once or, with `async`, one microtask later.
 */
function pullableOf(values: number[], padding = 20_000, async = false): Written {
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

/** A ws server and client on loopback; the server side's socket, and what the client receives. */
async function connectedPair() {
  const server = new WebSocketServer({ port: 0 });
  onTestFinished(() => void server.close());
  const accepted = new Promise<{ socket: WebSocket; connection: Socket }>((resolve) =>
    server.once('connection', (socket, request) => resolve({ socket, connection: request.socket })),
  );
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  onTestFinished(() => client.terminate());
  const received: string[] = [];
  client.on('message', (data, isBinary) => received.push(isBinary ? 'binary!' : String(data)));
  return { ...(await accepted), received };
}

describe.each(STREAMS)('graphql-ws frames sent through ws (%s)', (_name, streamOf) => {
  it.each([10, 200, 70_000])('reach a ws client intact as text frames, %i-character payloads', async (padding) => {
    const { socket, received } = await connectedPair();
    await writtenBySubscription(streamOf([1, 2, 3], padding), socket, 'é').next();

    while (received.length < 3) await settle();
    expect(received.map((frame) => JSON.parse(frame))).toEqual(
      [1, 2, 3].map((n) => ({ id: 'é', type: 'next', payload: { data: { n, padding: 'x'.repeat(padding) } } })),
    );
  });
});

describe('a result shared by a group', () => {
  it("is serialized once: subscriptions with the same id send one Buffer, through ws's public send", async () => {
    const pairs = await Promise.all([connectedPair(), connectedPair()]);
    const sent: unknown[] = [];
    for (const { socket } of pairs) {
      const send = socket.send.bind(socket);
      socket.send = ((data: unknown, ...rest: unknown[]) => {
        sent.push(data);
        return (send as (...args: unknown[]) => void)(data, ...rest);
      }) as typeof socket.send;
    }
    const result = { data: { n: 1 } };
    const shared = () => {
      const queue: unknown[] = ['event'];
      return {
        events: { next: async () => (queue.length ? { value: queue.shift(), done: false } : { value: undefined, done: true }) } as AsyncIterator<unknown>,
        resultOf: async () => result,
      };
    };
    await Promise.all(pairs.map(({ socket }) => writtenBySubscription(shared(), socket, '1').next()));
    while (pairs.some(({ received }) => received.length < 1)) await settle();
    expect(sent).toHaveLength(2);
    expect(sent[0]).toBeInstanceOf(Buffer);
    expect(sent[1]).toBe(sent[0]);
    for (const { received } of pairs) expect(JSON.parse(received[0]!)).toEqual({ id: '1', type: 'next', payload: result });
  });
});

describe('subscriptions of one connection', () => {
  it('send the frames of one turn of the event loop in one write on the connection', async () => {
    const { socket, connection, received } = await connectedPair();
    const writes: number[] = [];
    // The stream's own hooks (node:stream's implementer API): each is one system call.
    const writev = connection._writev!.bind(connection);
    connection._writev = (chunks, callback) => (writes.push(chunks.length), writev(chunks, callback));
    const write = connection._write.bind(connection);
    connection._write = (chunk, encoding, callback) => (writes.push(1), write(chunk, encoding, callback));

    const ids = Array.from({ length: 10 }, (_, id) => String(id));
    await Promise.all(ids.map((id) => writtenBySubscription(streamOf([1], 10), socket, id, connection).next()));

    while (received.length < ids.length) await settle();
    expect(received.map((frame) => JSON.parse(frame).id)).toEqual(ids);
    expect(writes).toHaveLength(1);
  });
});
