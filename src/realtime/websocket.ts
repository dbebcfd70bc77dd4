import type { ExecutionResult } from 'graphql';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { Config } from '../config.js';
import type { Outcome, SharedStream } from './shared-subscriptions.js';

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

/**
 * Each result's frame as bytes, for the last subscription id it was framed with: a group whose
 * members share their subscription id (as clients numbering their subscriptions do) encodes it
 * once; otherwise each frame is encoded once, as a string would be by the socket.
 */
const frames = new WeakMap<object, { head: string; bytes: Buffer }>();
function frameOf(result: object, head: string): Buffer {
  const cached = frames.get(result);
  if (cached?.head === head) return cached.bytes;
  const bytes = Buffer.from(`${head}${jsonOf(result)}}`);
  frames.set(result, { head, bytes });
  return bytes;
}

/** Frames built as bytes are still text frames. */
const TEXT = { binary: false } as const;

const finished = (): IteratorResult<ExecutionResult> => ({ value: undefined, done: true });

/**
 * Below this many unsent bytes on its connection a subscription sends on without waiting: a
 * corked connection holds every frame of the pass, so waiting on each would send one per pass.
 */
const WAIT_ABOVE_BYTES = 16 * 1024;

/** The sockets corked in this pass, uncorked together at its end (one tick for all of them). */
let corked: Set<Socket> | null = null;

function uncorkAll(): void {
  const sockets = corked!;
  corked = null;
  for (const raw of sockets) raw.uncork();
}

/**
 * Holds the connection's writes until the event loop's current pass is over, so the frames one
 * socket gets in one pass (a group's fan-out, a catch-up page) cost one system call, not one each.
 */
function corkForThisPass(socket: WebSocket): void {
  const raw = (socket as unknown as { _socket?: Socket })._socket;
  if (!raw || corked?.has(raw)) return;
  if (!corked) {
    corked = new Set();
    process.nextTick(uncorkAll);
  }
  corked.add(raw);
  raw.cork();
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
    corkForThisPass(socket);
    // Back-pressure only needs this frame's callback when it leaves more than WAIT_ABOVE_BYTES unsent.
    if (socket.bufferedAmount + frame.length <= WAIT_ABOVE_BYTES) {
      socket.send(frame, TEXT);
      return false;
    }
    let sent = false;
    socket.send(frame, TEXT, () => {
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
