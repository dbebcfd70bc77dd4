import { mayHaveMore } from '../domain/change-cursors.js';
import type { CommittedChange } from '../domain/events.js';
import { catchUps, lookUps } from '../metrics.js';
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

/** A stream a consumer may pull synchronously (`pull`), as the graphql-ws write path does. */
export interface Pullable<T> {
  /** The next value if one is ready now, or null; then `ready` is called once when pulling again is worthwhile. */
  pull(ready: () => void): IteratorResult<T> | null;
}

/** `next` of a Pullable stream: its next value, waiting for it. */
export async function nextPulled<T>(stream: Pullable<T>): Promise<IteratorResult<T>> {
  for (;;) {
    let ready!: () => void;
    const readyAgain = new Promise<void>((resolve) => (ready = resolve));
    const result = stream.pull(ready);
    if (result) return result;
    await readyAgain;
  }
}

/** Reads the thread's changes after a cursor from the database (one page, cursor order). */
export type CatchUp = (after: bigint) => Promise<CommittedChange[]>;

/**
 * How long a live change that arrived ahead of its turn waits for the changes before it. Changes
 * of one thread committed close together (concurrent runs, other instances) reach the fan-out in
 * the order their commands finish in Node, or their Redis messages arrive, not in commit order:
 * a missing cursor is normally milliseconds behind. When it is still missing after this long, it
 * is looked up in the database (ChangeStream.lookUp), and only when it is not there as it was
 * committed and still missing after this long again is it a gap, caught up (folded) from the
 * database. One second covers an event loop stalled by a long collection or a busy Redis many
 * times over, and is what the safety-net poll already grants a change in flight (pubsub.ts
 * POLL_GRACE_MS).
 */
export const ARRIVAL_WAIT_MS = 1000;

/**
 * One subscriber's view of a thread's change feed. It knows the cursor of the last change it
 * took (`last`) and takes only the next one. A live change that arrives ahead of its turn is held
 * until the changes before it arrive, then taken in cursor order. A change still missing after
 * ARRIVAL_WAIT_MS, or one the thread has reached by a poll or a wake-up without rows, is looked up
 * in the database (`lookUp`): exactly as committed while its entity has not changed since, so a
 * subscriber that keeps up gets one event per change even when a publish is late (an overloaded
 * event loop). Only a change that is neither there nor arrives within ARRIVAL_WAIT_MS more (a
 * publish that never comes, its entity changed since), or a change that arrives while the queue
 * is full, makes the stream fall back to catching up from the database after `last`, one page at
 * a time, folded, before it takes live changes again.
 * Changes at or before `last` are dropped, so no cursor is delivered twice and cursors only
 * increase. Memory is bounded: at most `limit` queued and held changes (shared objects) and one page.
 * Nothing but `interrupt` (server stop, token expiry) and `return` ends it.
 */
/** Every stream's catch-up reads, as one job: an outage is a line when they start failing and one when they work again. */
const catchUpReads = retriedWork('catch-up-read', 'catch-up reads of change streams', { component: 'realtime' });

export class ChangeStream implements AsyncIterableIterator<CommittedChange | StreamInterrupted> {
  private queue: CommittedChange[] = [];
  /** Live changes that arrived during a catch-up read, taken after it when they follow on. */
  private arrivedDuringRead: CommittedChange[] = [];
  /** Live changes that arrived ahead of their turn, by cursor, waiting for the ones before them. */
  private ahead = new Map<bigint, CommittedChange>();
  /** Set while the cursor after `last` is missing: its expiry looks it up, or makes it a gap (`missingTimedOut`). */
  private missingTimer: NodeJS.Timeout | null = null;
  /** The highest cursor a poll or a wake-up without rows said the thread has reached. */
  private reachedTo = 0n;
  /** `last` when the change after it was last still missing after ARRIVAL_WAIT_MS (and looked up). */
  private timedOutAfter: bigint | null = null;
  private lookingUp = false;
  /** The last look-up read a full page: the thread may be further ahead; the next page is read once this one is taken. */
  private morePages = false;
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
    if (this.state !== 'open' || this.reading || cursor <= this.last) return;
    if (cursor > this.reachedTo) this.reachedTo = cursor;
    if (!this.behind) void this.lookUp();
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

  next(): Promise<IteratorResult<CommittedChange | StreamInterrupted>> {
    return nextPulled(this);
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
    else {
      this.waiting = ready;
      this.lookUpNextPage();
    }
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
    const missing = this.ahead.size > 0 || this.reachedTo > this.last;
    this.missingTimer = missing ? setTimeout(() => this.missingTimedOut(), ARRIVAL_WAIT_MS).unref() : null;
  }

  private missingTimedOut(): void {
    this.missingTimer = null;
    if (this.state !== 'open' || this.reading || this.behind) return;
    // Still missing a wait after it was looked up: lost (or later than two waits), a gap.
    if (this.timedOutAfter === this.last) return this.fallBehind();
    this.timedOutAfter = this.last;
    void this.lookUp();
  }

  /**
   * The database's rows after `last`, offered as live changes: a row whose cursor is still its
   * own is that change as committed (each entity's latest state is stored, stamped with the cursor
   * of its latest change). One whose entity changed again since carries the later cursor, and is
   * held like any change ahead: the missing one waits for its own publish, until the wait under
   * way (a poll's look-up does not prolong it) and one more have passed.
   */
  private async lookUp(): Promise<void> {
    if (this.lookingUp) return;
    this.lookingUp = true;
    let page: CommittedChange[];
    try {
      page = await this.catchUp(this.last);
    } catch {
      // The database is unreachable: the catch-up retries (and reports the outage).
      return this.fallBehind();
    } finally {
      this.lookingUp = false;
    }
    lookUps.inc();
    if (this.state !== 'open' || this.reading || this.behind) return;
    for (const change of page) if (!this.ahead.has(change.cursor)) this.offer(change);
    if (this.behind) return;
    if (!this.missingTimer) this.restartMissingTimer();
    // A burst of more than a page (another instance's, found by a poll) comes in full, a page
    // at a time as the subscriber takes them, not a page per poll.
    this.morePages = mayHaveMore(page, this.limit);
    if (this.queue.length === 0) this.lookUpNextPage();
  }

  private lookUpNextPage(): void {
    if (!this.morePages) return;
    this.morePages = false;
    void this.lookUp();
  }

  private dropAhead(): void {
    this.ahead.clear();
    if (this.missingTimer) clearTimeout(this.missingTimer);
    this.missingTimer = null;
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
    if (mayHaveMore(page, this.limit)) this.fallBehind();
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
    if (this.ahead.size === 0) this.reached(this.known());
  }
}
