import type { ExecutionResult } from 'graphql';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { Config } from '../config.js';
import { slowConsumerCloses } from '../metrics.js';
import type { Outcome, SharedStream } from './shared-subscriptions.js';

/**
 * A client that stops reading stalls only its own streams (see `writtenBySubscription`); but one
 * connection may carry many subscriptions, and each result may be megabytes. Past this many
 * unsent bytes the connection is dropped.
 */
export const maxUnsentBytes = (config: Config) => Math.max(16 * 1024 * 1024, 16 * config.maxJsonBytes);

/** Drops a connection that holds more than its limit unsent (the server's class sets it). */
const dropIfStalled = Symbol('dropIfStalled');

/**
 * The server's WebSocket class: checked right after each send, so a connection never pins much
 * more than `limit` (the send that crossed it, at most).
 */
export function boundedWebSocket(limit: number): typeof WebSocket {
  return class BoundedWebSocket extends WebSocket {
    override send(...args: unknown[]): void {
      (super.send as (...args: unknown[]) => void)(...args);
      this[dropIfStalled]();
    }

    [dropIfStalled](): void {
      if (this.readyState === WebSocket.OPEN && this.bufferedAmount > limit) {
        console.warn(`[realtime] dropping a WebSocket client that stopped reading (${this.bufferedAmount} bytes unsent)`);
        slowConsumerCloses.inc({ transport: 'ws' });
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

/**
 * A WebSocket text frame as a server sends it (final, unmasked): the same bytes for every
 * connection, so one buffer is built per result and subscription id.
 */
interface Frame {
  head: string;
  /** Header and payload, ready for the TCP socket. */
  bytes: Buffer;
  /** The payload alone (the frame's tail), for `WebSocket.send`. */
  payload: Buffer;
}

function textFrame(head: string, text: string): Frame {
  const length = Buffer.byteLength(text);
  const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const bytes = Buffer.allocUnsafe(headerLength + length);
  bytes[0] = 0x81; // FIN, text
  if (length < 126) bytes[1] = length;
  else if (length < 65_536) {
    bytes[1] = 126;
    bytes.writeUInt16BE(length, 2);
  } else {
    bytes[1] = 127;
    bytes.writeBigUInt64BE(BigInt(length), 2);
  }
  bytes.write(text, headerLength, 'utf8');
  return { head, bytes, payload: bytes.subarray(headerLength) };
}

/**
 * Each result's frame, for the last subscription id it was framed with: a group whose members
 * share their subscription id (as clients numbering their subscriptions do) builds it once;
 * otherwise each frame is built once, as the socket would build it.
 */
const frames = new WeakMap<object, Frame>();
function frameOf(result: object, head: string): Frame {
  const cached = frames.get(result);
  if (cached?.head === head) return cached;
  const frame = textFrame(head, `${head}${jsonOf(result)}}`);
  frames.set(result, frame);
  return frame;
}

/** What of `ws` the direct write relies on (ws 8: lib/websocket.js, lib/sender.js). */
interface WsInternals {
  _socket?: Socket;
  _sender?: { _state: number; _queue: unknown[] };
  _extensions?: Record<string, unknown>;
}

/**
 * The connection's TCP socket when a whole frame may be written to it directly: the sender is
 * idle (nothing compressing or queued, no permessage-deflate), so the frame keeps its place among
 * ws's own. Null otherwise, and for anything that is not a ws socket.
 */
function rawSocketOf(socket: WebSocket): Socket | null {
  const { _socket: raw, _sender: sender, _extensions: extensions } = socket as unknown as WsInternals;
  if (!raw || !sender || sender._state !== 0 || sender._queue.length > 0 || extensions?.['permessage-deflate']) return null;
  return raw;
}

/**
 * Sends a frame: straight to the TCP socket when it can (one write of ready bytes, as many
 * sockets as a group has), else through `WebSocket.send`. `written` is called once the frame is
 * written, or with an error when the connection closes first.
 */
function sendFrame(socket: WebSocket, frame: Frame, written?: () => void): void {
  beforeSend((socket as unknown as WsInternals)._socket);
  const raw = rawSocketOf(socket);
  if (!raw) return socket.send(frame.payload, TEXT, written);
  raw.write(frame.bytes, written);
  (socket as { [dropIfStalled]?: () => void })[dropIfStalled]?.();
}

/** Frames built as bytes are still text frames. */
const TEXT = { binary: false } as const;

const finished = (): IteratorResult<ExecutionResult> => ({ value: undefined, done: true });

/**
 * Below this many unsent bytes on its connection a subscription sends on without waiting: a
 * corked connection holds every frame of the pass, so waiting on each would send one per pass.
 */
const WAIT_ABOVE_BYTES = 16 * 1024;

/**
 * The sockets written in this pass: false while only the pass's first frame went out (at once),
 * true once corked for the rest. The pass ends with the event loop's poll phase (setImmediate),
 * so frames produced by several callbacks of one phase (changes committed back to back while
 * the server was busy) leave together.
 */
let thisPass: Map<Socket, boolean> | null = null;

function endPass(): void {
  const sockets = thisPass!;
  thisPass = null;
  for (const [raw, corked] of sockets) if (corked) raw.uncork();
}

/**
 * Before a frame is sent: the first frame a connection gets in a pass leaves at once, so its
 * client reads it while the server writes to the other subscribers; the connection's later frames
 * in the pass are held (corked) and leave in one write when the pass ends, one system call for a
 * catch-up page or a burst of changes instead of one each.
 */
function beforeSend(raw: Socket | undefined): void {
  if (!raw) return;
  if (!thisPass) {
    thisPass = new Map();
    setImmediate(endPass);
  }
  const corked = thisPass.get(raw);
  if (corked === undefined) thisPass.set(raw, false);
  else if (!corked) {
    raw.cork();
    thisPass.set(raw, true);
  }
}

/**
 * A graphql-ws subscription that writes its results itself, as graphql-transport-ws `next` frames,
 * and yields nothing to graphql-ws, which still starts and completes it. Each frame is the group's
 * shared result, serialized once, behind this subscription's id.
 *
 * A connection's first frame of an event-loop pass leaves at once, the rest of the pass's frames
 * together (`beforeSend`).
 *
 * Back-pressure is this subscription's own: after a send that left more than `WAIT_ABOVE_BYTES`
 * unsent on the connection, the next change waits for that send's own callback (ws calls it once
 * the frame is written, or with an error when the socket closes). It never waits on the
 * connection-wide `bufferedAmount` draining, which another subscription's frame may keep above
 * zero long after this one's was written. A subscriber that waits falls behind on its own and
 * catches up from the database later.
 */
export function writtenBySubscription(stream: SharedStream, socket: WebSocket, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
  const events = stream.events as Partial<Pullable>;
  if (typeof events.pull === 'function' && stream.outcomeOf) return pushedBySubscription(stream, events as Pullable, socket, subscriptionId);
  return awaitedBySubscription(stream, socket, subscriptionId);
}

/** A stream whose next value can be taken synchronously (ChangeStream). */
interface Pullable {
  pull(ready: () => void): IteratorResult<unknown> | null;
  return?(): Promise<unknown>;
  throw?(error: unknown): Promise<unknown>;
}

/**
 * The write path without a promise per frame: the subscription takes each change synchronously
 * as soon as it is offered (`pull`), and when its group's result for it is settled (or settles:
 * every waiting member is then called in one pass) writes the frame at once and takes the next.
 * It stops only to wait for the stream (nothing queued, or a catch-up read), for the group's
 * execution, or for its own frame to be written (back-pressure, as `awaitedBySubscription`).
 */
function pushedBySubscription(stream: SharedStream, events: Pullable, socket: WebSocket, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
  const head = `{"id":${JSON.stringify(subscriptionId)},"type":"next","payload":`;
  const outcomeOf = stream.outcomeOf!;
  let ended = false;
  let finished_: { resolve: () => void; reject: (error: unknown) => void } | null = null;
  let started: Promise<void> | null = null;
  let done = false;
  /** Waiting for the group's result, or for this subscription's frame to be written: only that resumes it. */
  let blocked = false;
  let waitingForWrite = false;
  let running = false;
  let again = false;

  const complete = (error?: { error: unknown }) => {
    if (done) return;
    done = true;
    if (error) finished_?.reject(error.error);
    else finished_?.resolve();
  };

  const written = () => {
    if (!waitingForWrite) return;
    waitingForWrite = false;
    blocked = false;
    pump();
  };

  /** Writes one result; true when the next one must wait for this frame's write callback. */
  const send = (result: ExecutionResult): boolean => {
    if (ended || socket.readyState !== WebSocket.OPEN) return false;
    const frame = frameOf(result, head);
    // Back-pressure only needs this frame's callback when it leaves more than WAIT_ABOVE_BYTES unsent.
    if (socket.bufferedAmount + frame.bytes.length <= WAIT_ABOVE_BYTES) {
      sendFrame(socket, frame);
      return false;
    }
    let sent = false;
    sendFrame(socket, frame, () => {
      sent = true;
      written();
    });
    if (sent || socket.bufferedAmount <= WAIT_ABOVE_BYTES) return false;
    waitingForWrite = true;
    return true;
  };

  /** Sends a settled outcome; false when the subscription must now wait. */
  const deliver = (outcome: Outcome): boolean => {
    if (outcome.failure) {
      complete(outcome.failure);
      return false;
    }
    if (send(outcome.result!)) {
      blocked = true;
      return false;
    }
    return true;
  };

  const resume = (outcome: Outcome) => () => {
    blocked = false;
    if (deliver(outcome)) pump();
  };

  /** Takes and sends what is ready; false when it must wait for a callback. */
  const step = (): boolean => {
    if (ended) {
      complete();
      return false;
    }
    const next = events.pull(pump);
    if (next === null) return false;
    if (next.done) {
      complete();
      return false;
    }
    const outcome = outcomeOf(next.value);
    if (!outcome.settled) {
      blocked = true;
      outcome.waiters.push(resume(outcome));
      return false;
    }
    return deliver(outcome);
  };

  function pump(): void {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        while (!done && !blocked && step());
      } while (again && !done && !blocked);
    } catch (error) {
      complete({ error });
    } finally {
      running = false;
    }
  }

  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      started ??= new Promise<void>((resolve, reject) => {
        finished_ = { resolve, reject };
        pump();
      });
      await started;
      return finished();
    },
    async return() {
      ended = true;
      await events.return?.();
      written();
      if (!blocked) pump();
      return finished();
    },
    async throw(error: unknown) {
      ended = true;
      await events.throw?.(error);
      written();
      if (!blocked) pump();
      return finished();
    },
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}

/** The write path for any other stream: one awaited step per change. */
function awaitedBySubscription(stream: SharedStream, socket: WebSocket, subscriptionId: string): AsyncIterableIterator<ExecutionResult> {
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
    sendFrame(socket, frameOf(result, head), () => {
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
