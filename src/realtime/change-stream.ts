import type { CommittedChange } from '../domain/events.js';

/** Why a stream ended before its subscriber asked it to (SEMANTICS.md, "Subscriptions" and "Deletion and retention"). */
export type InterruptionReason = 'SERVER_STOPPING' | 'TOKEN_EXPIRED' | 'THREAD_DELETED';

/** The last value of a stream the server ended; a threadChanges subscriber resumes with `after`. */
export class StreamInterrupted {
  constructor(
    readonly reason: InterruptionReason,
    readonly message: string,
  ) {}
}

/** Reads the thread's changes after a cursor from the database (one page, cursor order). */
export type CatchUp = (after: bigint) => Promise<CommittedChange[]>;

/**
 * One subscriber's view of a thread's change feed. It knows the cursor of the last change it
 * took (`last`) and takes only the next one: a live change that leaves a gap (missed, out of
 * order, or arriving while the queue is full) is dropped and the stream falls back to catching
 * up from the database after `last`, one page at a time, before it takes live changes again.
 * Changes at or before `last` are dropped, so no cursor is delivered twice and cursors only
 * increase. Memory is bounded: at most `limit` queued changes (shared objects) and one page.
 * Nothing but `interrupt` (server stop, token expiry) and `return` ends it.
 */
export class ChangeStream implements AsyncIterableIterator<CommittedChange | StreamInterrupted> {
  private queue: CommittedChange[] = [];
  /** Live changes that arrived during a catch-up read, taken after it when they follow on. */
  private arrivedDuringRead: CommittedChange[] = [];
  private behind = false;
  /** While a catch-up read (or the start) is under way, live changes wait in `arrivedDuringRead`. */
  private reading = true;
  private ending: StreamInterrupted | null = null;
  private state: 'open' | 'ending' | 'closed' = 'open';
  private waiting: (() => void) | null = null;

  constructor(
    /** The cursor of the last change this subscriber has (or need not) receive: set by `startAt`. */
    private last: bigint,
    private readonly limit: number,
    private readonly catchUp: CatchUp,
    /** The highest cursor of the thread this instance has heard of. */
    private readonly known: () => bigint,
    private readonly accept: (change: CommittedChange) => boolean,
    /** Called once when the stream ends for any reason. */
    private readonly detach: () => void,
  ) {}

  get open(): boolean {
    return this.state === 'open';
  }

  /** True once `startAt` has run: from then on nothing committed is missed. */
  started = false;

  /**
   * Starts the stream after `cursor`: changes offered before this waited (as during a read), and
   * with `catchUpFirst` the database is read after `cursor` before anything live is taken.
   */
  startAt(cursor: bigint, catchUpFirst: boolean): void {
    this.last = cursor;
    this.started = true;
    this.reading = false;
    if (catchUpFirst) this.behind = true;
    this.offerArrived();
    this.wake();
  }

  /** A committed change of the thread, live. Never throws, never waits. */
  offer(change: CommittedChange): void {
    if (this.state !== 'open' || change.cursor <= this.last) return;
    if (this.reading) {
      if (this.arrivedDuringRead.length < this.limit) this.arrivedDuringRead.push(change);
      else this.fallBehind();
      return;
    }
    if (this.behind || change.cursor !== this.last + 1n || this.queue.length >= this.limit) return this.fallBehind();
    this.take(change);
  }

  /**
   * The thread has reached `cursor` (a wake-up without rows, or a poll). During a read (or the
   * start) it is left to `offerArrived`: the changes that arrived meanwhile may bring it there.
   */
  reached(cursor: bigint): void {
    if (this.state === 'open' && !this.reading && cursor > this.last) this.fallBehind();
  }

  interrupt(interruption: StreamInterrupted): void {
    if (this.state !== 'open') return;
    this.state = 'ending';
    this.ending = interruption;
    this.queue = [];
    this.detach();
    this.wake();
  }

  async next(): Promise<IteratorResult<CommittedChange | StreamInterrupted>> {
    for (;;) {
      let ready!: () => void;
      const readyAgain = new Promise<void>((resolve) => (ready = resolve));
      const result = this.pull(ready);
      if (result) return result;
      await readyAgain;
    }
  }

  /**
   * `next` for a consumer that pulls synchronously (the graphql-ws write path): the next value if
   * one is ready now, or null, and then `ready` is called once when pulling again is worthwhile
   * (possibly synchronously, from within `offer`, `interrupt` or `return`, or when a catch-up
   * page has been read). One consumer per stream, one pending `ready` at a time.
   */
  pull(ready: () => void): IteratorResult<CommittedChange | StreamInterrupted> | null {
    if (this.state === 'closed') return { value: undefined, done: true };
    if (this.state === 'ending') {
      this.state = 'closed';
      return { value: this.ending!, done: false };
    }
    const change = this.queue.shift();
    if (change) return { value: change, done: false };
    if (this.behind && this.started) void this.readPage().then(ready);
    else this.waiting = ready;
    return null;
  }

  return(): Promise<IteratorResult<CommittedChange | StreamInterrupted>> {
    if (this.state === 'open') this.detach();
    this.state = 'closed';
    this.queue = [];
    this.wake();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private take(change: CommittedChange): void {
    this.last = change.cursor;
    if (!this.accept(change)) return;
    this.queue.push(change);
    this.wake();
  }

  private fallBehind(): void {
    this.behind = true;
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.();
  }

  private async readPage(): Promise<void> {
    this.behind = false;
    this.reading = true;
    let page: CommittedChange[];
    try {
      page = await this.catchUp(this.last);
    } catch (error) {
      // The database is unreachable for now: try again shortly, the stream stays open.
      console.error('[realtime] catch-up read failed; retrying:', String(error));
      this.reading = false;
      this.behind = true;
      await new Promise((resolve) => setTimeout(resolve, 1000).unref());
      return;
    }
    this.reading = false;
    if (this.state !== 'open') return;
    for (const change of page) if (change.cursor > this.last) this.take(change);
    this.offerArrived();
    // A full page may have more behind it.
    if (page.length >= this.limit) this.fallBehind();
  }

  /**
   * After a read or the start: the live changes that arrived meanwhile, then whether the thread
   * is still ahead (a wake-up without rows, or a read shared with another subscriber that started
   * before a change this one has heard of). Offered first: changes that follow on are the usual
   * reason `known()` is ahead, and need no second read.
   */
  private offerArrived(): void {
    const arrived = this.arrivedDuringRead;
    this.arrivedDuringRead = [];
    for (const change of arrived) this.offer(change);
    if (this.known() > this.last) this.fallBehind();
  }
}
