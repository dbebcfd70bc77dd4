import { retriedWork } from '../db/outage.js';
import type { OwnerActivityRead, ToolActivity, ToolActivityArgs } from '../domain/tool-activity.js';
import { nextPulled, StreamInterrupted } from './change-stream.js';
import { at } from './timers.js';

/** The fewest milliseconds between two views of one subscription (SEMANTICS.md, "Dashboards"). */
export const MIN_VIEW_INTERVAL_MS = 1000;
/** A new view at least this often while nothing changes: the window moves (at most a minute). */
export const IDLE_VIEW_INTERVAL_MS = 30_000;

/** The feeds' clock: tests move it instead of waiting a minute (test/support/moved-clock.ts). */
export interface Clock {
  now(): number;
  /** Calls `fn` once the clock reaches `atMs`; the returned function cancels it. */
  at(atMs: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  at(atMs, fn) {
    const timer = setTimeout(fn, Math.max(0, atMs - Date.now()));
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Reads owners' views, in the order asked (src/domain/tool-activity.ts). */
export type ReadActivity = (reads: readonly OwnerActivityRead[]) => Promise<ToolActivity[]>;

/**
 * The most views read in one round trip. The views due together beyond it are read in several,
 * side by side on the pool's connections.
 */
export const MAX_VIEWS_PER_READ = 25;

export type ActivityDelivery = ToolActivity | StreamInterrupted;

/** One subscriber: the newest view it has not taken yet (a view is a state: a newer one replaces it). */
class ActivityStream implements AsyncIterableIterator<ActivityDelivery> {
  private pending: ActivityDelivery | null = null;
  private ready: (() => void) | null = null;
  private state: 'open' | 'ending' | 'closed' = 'open';

  constructor(private readonly detach: () => void) {}

  offer(view: ActivityDelivery): void {
    if (this.state !== 'open') return;
    if (view instanceof StreamInterrupted) this.state = 'ending';
    this.pending = view;
    this.wake();
  }

  /**
   * `next` for a consumer that pulls synchronously (the graphql-ws write path,
   * src/transports/websocket.ts: no promise per view): the view not taken yet, or null, and then
   * `ready` is called once, when there is one or the stream ended.
   */
  pull(ready: () => void): IteratorResult<ActivityDelivery> | null {
    if (this.pending) {
      const value = this.pending;
      this.pending = null;
      return { value, done: false };
    }
    if (this.state !== 'open') {
      void this.return();
      return { value: undefined, done: true };
    }
    this.ready = ready;
    return null;
  }

  next(): Promise<IteratorResult<ActivityDelivery>> {
    return nextPulled(this);
  }

  return(): Promise<IteratorResult<ActivityDelivery>> {
    if (this.state !== 'closed') {
      this.state = 'closed';
      this.pending = null;
      this.detach();
      this.wake();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  private wake(): void {
    const ready = this.ready;
    this.ready = null;
    ready?.();
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/** Every feed's reads, as one job: an outage is a line when they start failing and one when they work again. */
const activityReads = retriedWork('activity-read', 'reading the tool activity', { component: 'activity' });

/**
 * The subscribers of one view (owner and arguments): one read serves them all, so identical
 * subscriptions cost one read per view however many there are. A read follows a change of the
 * owner's tool audits MIN_VIEW_INTERVAL_MS after the previous read started, and comes
 * IDLE_VIEW_INTERVAL_MS after it without changes; reads never overlap. A view read sooner than
 * MIN_VIEW_INTERVAL_MS after the previous one was delivered (the previous read waited for a pool
 * connection, or took longer) is held until then: views stay a second apart, and a change waits
 * for the interval and one read, not two. The read itself is `readings`'s: with the other feeds'
 * due at the same time.
 */
class ActivityFeed implements OwnerActivityRead {
  readonly streams = new Set<ActivityStream>();
  view: ToolActivity | null = null;
  /** A change (or a new feed) the latest view does not show. */
  dirty = true;
  /** From the read's start until its view is delivered (or it failed). */
  private reading = false;
  private lastReadAtMs = -Infinity;
  private lastDeliveredAtMs = -Infinity;
  private cancelTimer: (() => void) | null = null;

  constructor(
    readonly ownerId: string,
    readonly args: ToolActivityArgs,
    private readonly readings: Readings,
    private readonly clock: Clock,
  ) {}

  /**
   * A new subscriber: the latest view when it was delivered less than MIN_VIEW_INTERVAL_MS ago and
   * nothing changed since (or the view under way), else a new read as soon as the cadence allows.
   */
  join(stream: ActivityStream): void {
    this.streams.add(stream);
    if (this.reading) return;
    if (this.view && !this.dirty && this.clock.now() - this.lastDeliveredAtMs < MIN_VIEW_INTERVAL_MS) stream.offer(this.view);
    else this.changed();
  }

  changed(): void {
    this.dirty = true;
    this.schedule();
  }

  schedule(): void {
    if (this.reading || this.streams.size === 0) return;
    this.cancelTimer?.();
    const dueAtMs = this.lastReadAtMs + (this.dirty ? MIN_VIEW_INTERVAL_MS : IDLE_VIEW_INTERVAL_MS);
    if (dueAtMs <= this.clock.now()) this.readNow();
    else this.cancelTimer = this.clock.at(dueAtMs, () => this.readNow());
  }

  private readNow(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    if (this.reading || this.streams.size === 0) return;
    this.reading = true;
    this.readings.add(this);
  }

  /** Its statement is sent: what changed before is in the view. False when nobody waits for it any more. */
  started(): boolean {
    if (this.streams.size === 0) {
      this.reading = false;
      return false;
    }
    this.dirty = false;
    this.lastReadAtMs = this.clock.now();
    return true;
  }

  read(view: ToolActivity): void {
    const deliverAtMs = this.lastDeliveredAtMs + MIN_VIEW_INTERVAL_MS;
    if (this.clock.now() < deliverAtMs) this.cancelTimer = this.clock.at(deliverAtMs, () => this.deliver(view));
    else this.deliver(view);
  }

  private deliver(view: ToolActivity): void {
    this.cancelTimer = null;
    this.view = view;
    for (const stream of this.streams) stream.offer(view);
    this.lastDeliveredAtMs = this.clock.now();
    this.reading = false;
    this.schedule();
  }

  /** The next read tries again; subscribers keep their last view meanwhile. */
  failed(): void {
    this.dirty = true;
    this.reading = false;
    this.schedule();
  }

  stop(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }
}

type Readings = ReturnType<typeof readingsOf>;

/**
 * The feeds' reads, together: the feeds due in the same turn of the event loop (a signal names
 * many owners, timers set by one read fire together), or while the previous reads are under way,
 * are read in one round trip of up to MAX_VIEWS_PER_READ views. A round trip and a wake-up of the
 * database cost the server more than a small view's rows. Feeds read together are due together
 * next time, so under steady changes they stay together.
 */
function readingsOf(read: ReadActivity, counted: (views: number) => void) {
  let due: ActivityFeed[] = [];
  let busy = false;

  async function readDue(): Promise<void> {
    try {
      const feeds = due.filter((feed) => feed.started());
      due = [];
      const batches = Array.from({ length: Math.ceil(feeds.length / MAX_VIEWS_PER_READ) }, (_, i) =>
        feeds.slice(i * MAX_VIEWS_PER_READ, (i + 1) * MAX_VIEWS_PER_READ),
      );
      await Promise.all(batches.map(readBatch));
    } finally {
      if (due.length > 0) setImmediate(() => void readDue());
      else busy = false;
    }
  }

  async function readBatch(batch: ActivityFeed[]): Promise<void> {
    counted(batch.length);
    let views: ToolActivity[];
    try {
      views = await read(batch);
      activityReads.succeeded();
    } catch (error) {
      // One failing statement fails the round trip: each view is tried alone, so a view that
      // cannot be read holds back no other owner's.
      if (batch.length > 1) {
        await Promise.all(batch.map((feed) => readBatch([feed])));
        return;
      }
      activityReads.failed(error);
      batch[0]!.failed();
      return;
    }
    batch.forEach((feed, index) => feed.read(views[index]!));
  }

  return {
    add(feed: ActivityFeed): void {
      due.push(feed);
      if (busy) return;
      busy = true;
      setImmediate(() => void readDue());
    },
  };
}

/** Tool activity views for this instance's dashboard subscribers, by owner and arguments. */
export function createActivityFeeds(read: ReadActivity, clock: Clock = systemClock) {
  const feeds = new Map<string, ActivityFeed>();
  const byOwner = new Map<string, Set<ActivityFeed>>();
  let reads = 0;
  const readings = readingsOf(read, (views) => (reads += views));

  const release = (key: string, feed: ActivityFeed, stream: ActivityStream) => {
    feed.streams.delete(stream);
    if (feed.streams.size > 0 || feeds.get(key) !== feed) return;
    feed.stop();
    feeds.delete(key);
    const owned = byOwner.get(feed.ownerId)!;
    owned.delete(feed);
    if (owned.size === 0) byOwner.delete(feed.ownerId);
  };

  return {
    /**
     * The owner's views with these arguments: the latest at once when it is current (ActivityFeed.join),
     * else the next one read; then a new one after each change (changed()) and while idle.
     */
    subscribe(ownerId: string, args: ToolActivityArgs, endsAtMs?: number): AsyncIterableIterator<ActivityDelivery> {
      const key = JSON.stringify([ownerId, args.windowSeconds, args.name]);
      let feed = feeds.get(key);
      if (!feed) {
        feed = new ActivityFeed(ownerId, args, readings, clock);
        feeds.set(key, feed);
        byOwner.set(ownerId, (byOwner.get(ownerId) ?? new Set()).add(feed));
      }
      const joined = feed;
      let cancelExpiry = () => {};
      const stream = new ActivityStream(() => {
        cancelExpiry();
        release(key, joined, stream);
      });
      if (endsAtMs !== undefined) cancelExpiry = at(endsAtMs, () => stream.offer(tokenExpired()));
      feed.join(stream);
      return stream;
    },

    /** Tool audits of these owners changed (committed, on this instance or another): their feeds read again. */
    changed(ownerIds: Iterable<string>): void {
      for (const ownerId of ownerIds) for (const feed of byOwner.get(ownerId) ?? []) feed.changed();
    },

    /** The owners with feeds here (the poll of their tool audits' changes without Redis). */
    owners: () => [...byOwner.keys()],

    /** Every open stream ends, telling its subscriber why. */
    interruptAll(interruption: StreamInterrupted): void {
      for (const feed of [...feeds.values()]) for (const stream of [...feed.streams]) stream.offer(interruption);
    },

    /** How many views were read so far (tests: identical subscriptions share one read per view). */
    readCount: () => reads,
  };
}

export type ActivityFeeds = ReturnType<typeof createActivityFeeds>;

const tokenExpired = () =>
  new StreamInterrupted('TOKEN_EXPIRED', 'The token that started this subscription has expired. Subscribe again with a fresh token.');
