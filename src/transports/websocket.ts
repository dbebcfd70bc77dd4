import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { ExecutionResult } from 'graphql';
import { WebSocket, type PerMessageDeflateOptions, type WebSocketServer } from 'ws';
import type { Config } from '../config.js';
import { slowConsumerCloses } from '../metrics.js';
import type { Pullable as PullableStream } from '../realtime/change-stream.js';
import type { Outcome, SharedStream } from './shared-subscriptions.js';
import { cutUnlessClosed, type UnsentBudget } from './unsent-budget.js';
import { log } from '../log.js';

/**
 * A client that stops reading stalls only its own streams (see `writtenBySubscription`); but one
 * connection may carry many subscriptions, and each result may be megabytes. Past this many
 * unsent bytes the connection is closed as a slow consumer.
 */
export const maxUnsentBytes = (config: Config) => Math.max(16 * 1024 * 1024, 16 * config.maxJsonBytes);

/**
 * permessage-deflate (RFC 7692) for the clients that offer it (browsers do): an idle Activity
 * view's frame, its 120 buckets every 30 s, leaves at about a twelfth of its 12 kB. A connection
 * keeps its deflate stream once it is sent a frame above `threshold` (pongs and small changes
 * never are); without context takeover, with 1 kB windows and memLevel 4 it holds ~12 kB and
 * zlib's state, where zlib's defaults with context takeover held ~256 kB: a quarter of a gigabyte
 * for a thousand subscribers, for frames that compress to ~0.4 of that size instead of ~0.08.
 * The unsent bounds count what ws holds: a frame waiting for zlib at its own size, then as sent.
 */
export const PER_MESSAGE_DEFLATE: PerMessageDeflateOptions = {
  threshold: 1024,
  serverNoContextTakeover: true,
  serverMaxWindowBits: 10,
  zlibDeflateOptions: { memLevel: 4 },
};

/** "Try again later" (RFC 6455 §7.4.1): graphql-ws clients retry it; a threadChanges client resumes with `after`. */
export const SLOW_CONSUMER_CODE = 1013;
export const SLOW_CONSUMER_REASON = 'Slow consumer: too much unsent data; reconnect and resume with your last cursor';

/**
 * What each socket's subscriptions call to end themselves: called when the socket is closed as a
 * slow consumer, so that they stop listening at once, not when the close handshake is over.
 */
const writers = new WeakMap<WebSocket, Set<() => void>>();
function register(socket: WebSocket, end: () => void): () => void {
  let ends = writers.get(socket);
  if (!ends) writers.set(socket, (ends = new Set()));
  ends.add(end);
  return () => ends.delete(end);
}

/** Each connection's TCP socket: its upgraded request's. */
const tcpSockets = new WeakMap<WebSocket, Socket>();
export function rememberTcpSockets(wsServer: WebSocketServer): void {
  wsServer.on('connection', (socket, request) => tcpSockets.set(socket, request.socket));
}

/**
 * Cuts a connection the server gives up on with a TCP reset. ws's `terminate` closes its socket
 * normally, and the kernel then keeps the socket, with the megabytes it may hold for a client that
 * does not read or has vanished, until it gives up sending them.
 */
export function cut(socket: WebSocket): void {
  const tcp = tcpSockets.get(socket);
  if (tcp) tcp.resetAndDestroy();
  else socket.terminate();
}

/**
 * Closes a connection as a slow consumer. The close frame goes behind what is unsent: a client
 * that reads again gets every frame, then code 1013; one that has not within SLOW_CONSUMER_CUT_MS
 * is cut, and nothing more is queued for it meanwhile (ws refuses sends once closing).
 */
export function closeAsSlowConsumer(socket: WebSocket): void {
  if (socket.readyState !== WebSocket.OPEN) return;
  socket.close(SLOW_CONSUMER_CODE, SLOW_CONSUMER_REASON);
  cutUnlessClosed(socket, () => cut(socket));
  for (const end of [...(writers.get(socket) ?? [])]) end();
}

/**
 * The server's WebSocket class (ws's `WebSocketServer` option `WebSocket`): checked right after
 * each send, so a connection never pins much more than `limit` (the send that crossed it, at
 * most), and its principal's connections and SSE streams together not much more than the
 * budget's bound (`budget`, src/transports/unsent-budget.ts).
 */
export function boundedWebSocket(limit: number, budget?: UnsentBudget): typeof WebSocket {
  return class BoundedWebSocket extends WebSocket {
    override send(...args: unknown[]): void {
      (super.send as (...args: unknown[]) => void)(...args);
      if (this.readyState !== WebSocket.OPEN || this.bufferedAmount <= WAIT_ABOVE_BYTES) return;
      if (this.bufferedAmount > limit) {
        log.warn({ component: 'realtime', unsentBytes: this.bufferedAmount }, 'closing a WebSocket client that stopped reading');
        slowConsumerCloses.inc({ transport: 'ws', bound: 'connection' });
        closeAsSlowConsumer(this);
      } else {
        budget?.wrote(this);
      }
    }
  };
}

/** Each result object is serialized (and encoded) once, however many subscriptions send it. */
const serialized = new WeakMap<object, Buffer>();
function jsonOf(result: object): Buffer {
  let json = serialized.get(result);
  if (json === undefined) serialized.set(result, (json = Buffer.from(JSON.stringify(result))));
  return json;
}

/**
 * Each result's `next` message as bytes, for the last subscription id it was framed with: a group
 * whose members share their subscription id (as clients numbering their subscriptions do) sends
 * one Buffer to every socket; otherwise each subscription copies the shared JSON behind its own head.
 */
const payloads = new WeakMap<object, { subscriptionId: string; bytes: Buffer }>();
function payloadOf(result: ExecutionResult, head: Head): Buffer {
  const cached = payloads.get(result);
  if (cached?.subscriptionId === head.subscriptionId) return cached.bytes;
  const bytes = Buffer.concat([head.bytes, jsonOf(result), MESSAGE_END]);
  payloads.set(result, { subscriptionId: head.subscriptionId, bytes });
  return bytes;
}

/** A subscription's `next` message up to its payload. */
interface Head {
  subscriptionId: string;
  bytes: Buffer;
}
const nextHead = (subscriptionId: string): Head => ({
  subscriptionId,
  bytes: Buffer.from(`{"id":${JSON.stringify(subscriptionId)},"type":"next","payload":`),
});
const MESSAGE_END = Buffer.from('}');

/** Buffers built from text are still text frames. */
const TEXT = { binary: false } as const;

/**
 * Below this many unsent bytes on its connection a subscription sends on without waiting for
 * its frame to be written.
 */
const WAIT_ABOVE_BYTES = 16 * 1024;

/**
 * Sends one payload; `written` is called once it is written (or the connection closed) only when
 * the next send of this subscription must wait for it, and then true is returned.
 */
function send(socket: WebSocket, connection: Writable | undefined, payload: Buffer, written: () => void): boolean {
  if (connection) corkForThisTurn(connection);
  if (socket.bufferedAmount + payload.length <= WAIT_ABOVE_BYTES) {
    socket.send(payload, TEXT);
    return false;
  }
  let waiting = false;
  socket.send(payload, TEXT, () => {
    if (waiting) written();
  });
  // The kernel may have taken it all at once.
  waiting = socket.bufferedAmount > WAIT_ABOVE_BYTES;
  return waiting;
}

/**
 * The frames a connection is sent in one turn of the event loop leave in one write, as Node's
 * http corks a response: a view reaches every subscription of a socket in the same turn (a
 * dashboard's identical panels), and frame by frame each would be a system call of the server
 * and a wake-up of the client.
 */
const corked = new WeakSet<Writable>();
function corkForThisTurn(connection: Writable): void {
  if (corked.has(connection)) return;
  corked.add(connection);
  connection.cork();
  process.nextTick(() => {
    corked.delete(connection);
    connection.uncork();
  });
}

const finished = (): IteratorResult<ExecutionResult> => ({ value: undefined, done: true });

/**
 * A graphql-ws subscription that writes its results itself, as graphql-transport-ws `next` frames
 * through `ws`'s `send`, and yields nothing to graphql-ws, which still starts and completes it.
 * Each frame is the group's shared result, serialized once, behind this subscription's id.
 *
 * Back-pressure is this subscription's own: after a send that left more than `WAIT_ABOVE_BYTES`
 * unsent on the connection, the next change waits for that send's own callback (ws calls it once
 * the frame is written, or with an error when the socket closes). It never waits on the
 * connection-wide `bufferedAmount` draining, which another subscription's frame may keep above
 * zero long after this one's was written. A subscriber that waits falls behind on its own and
 * catches up from the database later. Once its connection is no longer open (closed as a slow
 * consumer, say), the subscription ends and stops listening.
 */
export function writtenBySubscription(
  stream: Written,
  socket: WebSocket,
  subscriptionId: string,
  connection?: Writable,
): AsyncIterableIterator<ExecutionResult> {
  const events = stream.events as Partial<Pullable>;
  if (typeof events.pull === 'function' && stream.outcomeOf) {
    return pushedBySubscription(events as Pullable, stream.outcomeOf, socket, connection, subscriptionId);
  }
  return awaitedBySubscription(stream, socket, connection, subscriptionId);
}

/** What the writer takes of a shared stream: its events and the group's results. */
type Written = Pick<SharedStream, 'events' | 'resultOf' | 'outcomeOf'>;

/** A stream whose next value can be taken synchronously (ChangeStream, the dashboards' streams). */
interface Pullable extends PullableStream<unknown> {
  return?(): Promise<unknown>;
  throw?(error: unknown): Promise<unknown>;
}

/**
 * The write path without a promise per frame: `pump` takes each change synchronously as soon as
 * it is offered, and when its group's result is settled writes it at once and takes the next. It
 * stops only to wait, and whatever it waits for calls it again: the stream (nothing queued, or a
 * catch-up read), the group's execution, or its own frame being written (back-pressure).
 */
function pushedBySubscription(
  events: Pullable,
  outcomeOf: (event: unknown) => Outcome,
  socket: WebSocket,
  connection: Writable | undefined,
  subscriptionId: string,
): AsyncIterableIterator<ExecutionResult> {
  const head = nextHead(subscriptionId);
  let settle: ((failure?: { error: unknown }) => void) | null = null;
  const done = new Promise<void>((resolve, reject) => {
    settle = (failure) => (failure ? reject(failure.error) : resolve());
  });
  let started = false;
  const unregister = register(socket, () => pump());

  const finish = (failure?: { error: unknown }) => {
    if (!settle) return;
    const end = settle;
    settle = null;
    unregister();
    void events.return?.();
    end(failure);
  };

  /** Writes a settled outcome; true when the next one may follow at once. */
  const write = (outcome: Outcome): boolean => {
    if (outcome.failure || socket.readyState !== WebSocket.OPEN) finish(outcome.failure);
    if (!settle) return false;
    return !send(socket, connection, payloadOf(outcome.result!, head), pump);
  };

  function pump(): void {
    try {
      while (settle) {
        if (socket.readyState !== WebSocket.OPEN) return finish();
        const next = events.pull(pump);
        if (next === null) return;
        if (next.done) return finish();
        const outcome = outcomeOf(next.value);
        if (!outcome.settled) return void outcome.waiters.push(() => write(outcome) && pump());
        if (!write(outcome)) return;
      }
    } catch (error) {
      finish({ error });
    }
  }

  const end = async (close: (() => Promise<unknown>) | undefined) => {
    await close?.();
    finish();
    return finished();
  };
  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      if (!started) {
        started = true;
        pump();
      }
      await done;
      return finished();
    },
    return: () => end(events.return?.bind(events)),
    throw: (error: unknown) => end(events.throw && (() => events.throw!(error))),
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}

/** The write path for any other stream: one awaited step per change. */
function awaitedBySubscription(stream: Written, socket: WebSocket, connection: Writable | undefined, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
  const head = nextHead(subscriptionId);
  let ended = false;
  let wake: (() => void) | null = null;
  const woken = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  let drained: Promise<void> | null = null;
  const unregister = register(socket, () => woken());
  const end = async (close: (() => Promise<unknown>) | undefined) => {
    ended = true;
    unregister();
    woken();
    await close?.();
    return finished();
  };
  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      drained ??= (async () => {
        for (let next = await stream.events.next(); !next.done && !ended; next = await stream.events.next()) {
          const result = await stream.resultOf(next.value);
          if (ended || socket.readyState !== WebSocket.OPEN) break;
          const wait = new Promise<void>((resolve) => (wake = resolve));
          if (!send(socket, connection, payloadOf(result, head), woken)) woken();
          await wait;
        }
        unregister();
        await stream.events.return?.();
      })();
      await drained;
      return finished();
    },
    return: () => end(stream.events.return?.bind(stream.events)),
    throw: (error: unknown) => end(stream.events.throw && (() => stream.events.throw!(error))),
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}
