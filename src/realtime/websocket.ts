import type { ExecutionResult } from 'graphql';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { Config } from '../config.js';
import type { SharedStream } from './shared-subscriptions.js';

/**
 * A client that stops reading stalls only its own streams (see `writtenBySubscription`); but one
 * connection may carry many subscriptions, and each result may be megabytes. Past this many
 * unsent bytes the connection is dropped.
 */
export const maxUnsentBytes = (config: Config) => Math.max(16 * 1024 * 1024, 16 * config.maxJsonBytes);

/**
 * The server's WebSocket class: checked right after each send, so a connection never pins much
 * more than `limit` (the send that crossed it, at most).
 */
export function boundedWebSocket(limit: number): typeof WebSocket {
  return class BoundedWebSocket extends WebSocket {
    override send(...args: unknown[]): void {
      (super.send as (...args: unknown[]) => void)(...args);
      if (this.readyState === WebSocket.OPEN && this.bufferedAmount > limit) {
        console.warn(`[realtime] dropping a WebSocket client that stopped reading (${this.bufferedAmount} bytes unsent)`);
        this.terminate();
      }
    }
  };
}

/** Each result object is serialized once, however many sockets send it. */
const serialized = new WeakMap<object, string>();
function jsonOf(result: object): string {
  let json = serialized.get(result);
  if (json === undefined) serialized.set(result, (json = JSON.stringify(result)));
  return json;
}

const finished = (): IteratorResult<ExecutionResult> => ({ value: undefined, done: true });

/**
 * Below this many unsent bytes on its connection a subscription sends on without waiting: a
 * corked connection holds every frame of the pass, so waiting on each would send one per pass.
 */
const WAIT_ABOVE_BYTES = 16 * 1024;

const corked = new WeakSet<Socket>();

/**
 * Holds the connection's writes until the event loop's current pass is over, so the frames one
 * socket gets in one pass (a group's fan-out, a catch-up page) cost one system call, not one each.
 */
function corkForThisPass(socket: WebSocket): void {
  const raw = (socket as unknown as { _socket?: Socket })._socket;
  if (!raw || corked.has(raw)) return;
  corked.add(raw);
  raw.cork();
  process.nextTick(() => {
    corked.delete(raw);
    raw.uncork();
  });
}

/**
 * A graphql-ws subscription that writes its results itself, as graphql-transport-ws `next` frames,
 * and yields nothing to graphql-ws, which still starts and completes it. Each frame is the group's
 * shared result, serialized once, behind this subscription's id.
 *
 * The connection is corked for the rest of the event-loop pass (`corkForThisPass`), so the frames
 * it gets in one pass leave in one write.
 *
 * Back-pressure is this subscription's own: after a send that left more than `WAIT_ABOVE_BYTES`
 * unsent on the connection, the next change waits for that send's own callback (ws calls it once
 * the frame is written, or with an error when the socket closes). It never waits on the
 * connection-wide `bufferedAmount` draining, which another subscription's frame may keep above
 * zero long after this one's was written. A subscriber that waits falls behind on its own and
 * catches up from the database later.
 */
export function writtenBySubscription(stream: SharedStream, socket: WebSocket, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
  const head = `{"id":${JSON.stringify(subscriptionId)},"type":"next","payload":`;
  let ended = false;
  let wake: (() => void) | null = null;
  const woken = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  const send = (result: ExecutionResult): Promise<void> | void => {
    if (ended || socket.readyState !== WebSocket.OPEN) return;
    let written = false;
    corkForThisPass(socket);
    socket.send(`${head}${jsonOf(result)}}`, () => {
      written = true;
      woken();
    });
    if (socket.bufferedAmount <= WAIT_ABOVE_BYTES || written) return;
    return new Promise<void>((resolve) => {
      wake = resolve;
      if (written || ended) woken();
    });
  };
  let drained: Promise<void> | null = null;
  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      drained ??= (async () => {
        for (let next = await stream.events.next(); !next.done && !ended; next = await stream.events.next()) {
          await send(await stream.resultOf(next.value));
        }
      })();
      await drained;
      return finished();
    },
    async return() {
      ended = true;
      woken();
      await stream.events.return?.();
      return finished();
    },
    async throw(error: unknown) {
      ended = true;
      woken();
      await stream.events.throw?.(error);
      return finished();
    },
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}
