import type { ExecutionResult } from 'graphql';
import { WebSocket } from 'ws';
import type { Config } from '../config.js';
import type { SharedStream } from './shared-subscriptions.js';
import { drainStream } from './subscription-queue.js';

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
 * A graphql-ws subscription that writes its results itself, as graphql-transport-ws `next` frames,
 * and yields nothing to graphql-ws, which still starts and completes it.
 *
 * Each event is handed to the subscriber in the publisher's call (SubscriptionQueue#drain), and
 * its frame is the group's shared result, serialized once, behind this subscription's id. Through
 * graphql-ws every subscriber would instead pull each event through a chain of promises, copy the
 * result, build and validate its frame, serialize the result again and await the write: at a
 * thousand subscribers of one thread, most of the server's work per event. A write is awaited
 * only when the socket did not take it at once, so a client that stops reading still stalls only
 * its own stream, whose queue then fills up and is interrupted as lagging.
 */
export function writtenBySubscription(stream: SharedStream, socket: WebSocket, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
  const head = `{"id":${JSON.stringify(subscriptionId)},"type":"next","payload":`;
  const open = () => socket.readyState === WebSocket.OPEN;
  let ended = false;
  let wake: (() => void) | null = null;
  const woken = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  const end = () => {
    ended = true;
    woken();
  };
  const written = async () => {
    // Until the socket took the frame; a closed socket waits for graphql-ws to end the stream.
    while ((socket.bufferedAmount > 0 || !open()) && !ended) await new Promise<void>((resolve) => (wake = resolve));
  };
  const send = (result: ExecutionResult): Promise<void> | void => {
    if (ended) return;
    if (open()) socket.send(`${head}${jsonOf(result)}}`, woken);
    if (socket.bufferedAmount > 0 || !open()) return written();
  };
  let drained: Promise<void> | null = null;
  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      drained ??= drainStream(stream.events, (event) => stream.resultOf(event).then(send));
      await drained;
      return finished();
    },
    async return() {
      end();
      await stream.events.return?.();
      return finished();
    },
    async throw(error: unknown) {
      end();
      await stream.events.throw?.(error);
      return finished();
    },
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}
