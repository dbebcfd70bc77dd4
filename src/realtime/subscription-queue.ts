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

/**
 * One subscriber's pending events, in publish order. Bounded: a subscriber that falls more than
 * `limit` events behind is interrupted (its backlog dropped, its listener detached, one
 * StreamInterrupted yielded last), so a client that stops reading holds a fixed amount of memory
 * and never slows the publisher down. `push` never throws and never waits.
 */
export class SubscriptionQueue<T> implements AsyncIterableIterator<T | StreamInterrupted> {
  private pending: (T | StreamInterrupted)[] = [];
  private waiting: ((result: IteratorResult<T | StreamInterrupted>) => void) | null = null;
  private state: 'open' | 'interrupted' | 'closed' = 'open';

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
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private deliver(value: T | StreamInterrupted): void {
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = null;
      waiting({ value, done: false });
    } else {
      this.pending.push(value);
    }
  }
}
