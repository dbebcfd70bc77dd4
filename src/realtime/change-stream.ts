import type { CommittedChange } from '../domain/events.js';
import { catchUps } from '../metrics.js';
import { retriedWork } from '../db/outage.js';

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
 * How long a live change that arrived ahead of its turn waits for the changes before it. Changes
 * of one thread committed close together (concurrent runs, other instances) reach the fan-out in
 * the order their commands finish in Node, or their Redis messages arrive, not in commit order:
 * a missing cursor is normally milliseconds behind. Only when it is still missing after this long
 * (a publish that never comes: a crash between commit and publish, a lost message) is it a gap,
 * caught up from the database. One second covers an event loop stalled by a long collection or a
 * busy Redis many times over, and is what the safety-net poll already grants a change in flight
 * (pubsub.ts POLL_GRACE_MS); a real gap costs the subscriber at most that delay.
 */
export const ARRIVAL_WAIT_MS = 1000;

/**
 * One subscriber's view of a thread's change feed. It knows the cursor of the last change it
 * took (`last`) and takes only the next one. A live change that arrives ahead of its turn is held
 * until the changes before it arrive, then taken in cursor order; when one is still missing after
 * ARRIVAL_WAIT_MS, or a change arrives while the queue is full, the stream falls back to catching
 * up from the database after `last`, one page at a time, before it takes live changes again.
 * Changes at or before `last` are dropped, so no cursor is delivered twice and cursors only
 * increase. Memory is bounded: at most `limit` queued and held changes (shared objects) and one page.
 * Nothing but `interrupt` (server stop, token expiry) and `return` ends it.
 */
/** Every stream's catch-up reads, as one job: an outage is a line when they start failing and one when they work again. */
const catchUpReads = retriedWork('catch-up reads of change streams', { component: 'realtime' });

export class ChangeStream implements AsyncIterableIterator<CommittedChange | StreamInterrupted> {
  private queue: CommittedChange[] = [];
  /** Live changes that arrived during a catch-up read, taken after it when they follow on. */
  private arrivedDuringRead: CommittedChange[] = [];
  /** Live changes that arrived ahead of their turn, by cursor, waiting for the ones before them. */
  private ahead = new Map<bigint, CommittedChange>();
  /** Set while `ahead` waits for the cursor after `last`: its expiry makes that cursor a gap. */
  private missingTimer: NodeJS.Timeout | null = null;
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
    if (this.behind) return this.fallBehind();
    if (change.cursor === this.last + 1n) this.takeInTurn(change);
    else this.holdAhead(change);
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
    this.dropAhead();
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
    this.dropAhead();
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

  /** The change after `last`, then the held ones that follow on. */
  private takeInTurn(change: CommittedChange): void {
    for (let next: CommittedChange | undefined = change; next; next = this.ahead.get(this.last + 1n)) {
      if (this.queue.length >= this.limit) return this.fallBehind();
      this.ahead.delete(next.cursor);
      this.take(next);
    }
    // A cursor is still missing before the held ones: it gets its own wait.
    this.restartMissingTimer();
  }

  private holdAhead(change: CommittedChange): void {
    if (this.queue.length + this.ahead.size >= this.limit) return this.fallBehind();
    this.ahead.set(change.cursor, change);
    if (!this.missingTimer) this.restartMissingTimer();
  }

  private restartMissingTimer(): void {
    if (this.missingTimer) clearTimeout(this.missingTimer);
    this.missingTimer = this.ahead.size === 0 ? null : setTimeout(() => this.fallBehind(), ARRIVAL_WAIT_MS).unref();
  }

  private dropAhead(): void {
    this.ahead.clear();
    this.restartMissingTimer();
  }

  /** What is held is read again from the database, with whatever it waited for. */
  private fallBehind(): void {
    this.dropAhead();
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
      catchUpReads.succeeded();
    } catch (error) {
      // The database is unreachable for now: try again shortly, the stream stays open.
      catchUpReads.failed(error);
      this.reading = false;
      this.behind = true;
      await new Promise((resolve) => setTimeout(resolve, 1000).unref());
      return;
    }
    this.reading = false;
    catchUps.inc();
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
    // Held changes wait for the missing ones (or their expiry) instead.
    if (this.known() > this.last && this.ahead.size === 0) this.fallBehind();
  }
}
