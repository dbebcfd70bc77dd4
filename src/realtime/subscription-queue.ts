/** Why a stream stopped before its subscriber asked it to. */
export type InterruptionReason = 'SUBSCRIBER_LAGGING' | 'PUBSUB_UNAVAILABLE' | 'SERVER_STOPPING' | 'TOKEN_EXPIRED';

/**
 * The last value of a stream that could not deliver every event. What the subscriber saw may be
 * incomplete: it has to re-read the current state and subscribe again.
 */
export class StreamInterrupted {
  constructor(
    readonly reason: InterruptionReason,
    readonly message: string,
  ) {}
}

/** Handles one value; later values wait in the queue until the promise it returns settles. */
export type Handler<T> = (value: T | StreamInterrupted) => Promise<void> | void;

/**
 * One subscriber's pending events, in publish order. Bounded: a subscriber that falls more than
 * `limit` events behind is interrupted (its backlog dropped, its listener detached, one
 * StreamInterrupted yielded last), so a client that stops reading holds a fixed amount of memory
 * and never slows the publisher down. `push` never throws and never waits.
 *
 * Read either as an async iterator (`next`) or, with `drain`, by a handler that the publisher
 * calls directly: a thousand subscribers of one thread then cost one call each per event rather
 * than a chain of promises each.
 */
export class SubscriptionQueue<T> implements AsyncIterableIterator<T | StreamInterrupted> {
  private pending: (T | StreamInterrupted)[] = [];
  private waiting: ((result: IteratorResult<T | StreamInterrupted>) => void) | null = null;
  private state: 'open' | 'interrupted' | 'closed' = 'open';
  private handler: Handler<T> | null = null;
  private handling = false;
  private drained: { resolve: () => void; reject: (error: unknown) => void } | null = null;

  constructor(
    private readonly limit: number,
    /** Stops the events at their source; called once, when the stream ends for any reason. */
    private readonly detach: () => void,
  ) {}

  get open(): boolean {
    return this.state === 'open';
  }

  push(event: T): void {
    if (this.state !== 'open') return;
    if (this.pending.length >= this.limit) {
      this.interrupt(
        new StreamInterrupted(
          'SUBSCRIBER_LAGGING',
          `The subscriber fell more than ${this.limit} events behind; later events were dropped. Re-read the current state and subscribe again.`,
        ),
      );
      return;
    }
    this.deliver(event);
  }

  interrupt(interruption: StreamInterrupted): void {
    if (this.state !== 'open') return;
    this.state = 'interrupted';
    this.detach();
    this.pending = [];
    this.deliver(interruption);
  }

  next(): Promise<IteratorResult<T | StreamInterrupted>> {
    if (this.pending.length > 0) return Promise.resolve({ value: this.pending.shift()!, done: false });
    if (this.state !== 'open') return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  return(): Promise<IteratorResult<T | StreamInterrupted>> {
    if (this.state === 'open') this.detach();
    this.state = 'closed';
    this.pending = [];
    this.waiting?.({ value: undefined, done: true });
    this.waiting = null;
    this.drained?.resolve();
    return Promise.resolve({ value: undefined, done: true });
  }

  /**
   * Hands every value to `handle`, in order, as soon as it is pushed (in the publisher's call) and
   * `handle` is done with the previous one. Resolves when the stream has ended and its last value
   * was handled, or when `return` is called; rejects, ending the stream, if `handle` does.
   */
  drain(handle: Handler<T>): Promise<void> {
    this.handler = handle;
    return new Promise((resolve, reject) => {
      this.drained = { resolve, reject };
      this.pump();
    });
  }

  private pump(): void {
    while (!this.handling && this.pending.length > 0) {
      let handled: Promise<void> | void;
      try {
        handled = this.handler!(this.pending.shift()!);
      } catch (error) {
        handled = Promise.reject(error);
      }
      if (!handled) continue;
      this.handling = true;
      handled.then(this.handled, this.failed);
    }
    if (!this.handling && this.state !== 'open') this.drained?.resolve();
  }

  private readonly handled = () => {
    this.handling = false;
    this.pump();
  };

  private readonly failed = (error: unknown) => {
    this.drained?.reject(error);
    void this.return();
  };

  [Symbol.asyncIterator](): this {
    return this;
  }

  private deliver(value: T | StreamInterrupted): void {
    if (this.handler) {
      this.pending.push(value);
      this.pump();
      return;
    }
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = null;
      waiting({ value, done: false });
    } else {
      this.pending.push(value);
    }
  }
}

/** `drain` for any event stream: a SubscriptionQueue is handed its handler; others are pulled. */
export async function drainStream<T>(events: AsyncIterator<T | StreamInterrupted>, handle: Handler<T>): Promise<void> {
  if (events instanceof SubscriptionQueue) return events.drain(handle);
  for (let next = await events.next(); !next.done; next = await events.next()) await handle(next.value);
}
