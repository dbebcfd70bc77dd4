import type { Config } from '../config.js';
import type { CommittedChange } from '../domain/events.js';
import type { OwnerActivityRead, ToolActivity } from '../domain/tool-activity.js';
import { changedOwners, type ToolAuditChangeCount, type ToolAuditChangePoll } from '../domain/tool-activity-changes.js';
import { createActivityFeeds, type ActivityFeeds, type Clock } from './activity-feeds.js';
import { at } from './timers.js';
import { deliveredTogether } from './per-event.js';
import { ARRIVAL_WAIT_MS, ChangeStream, StreamInterrupted } from './change-stream.js';
import type { WakeBus } from './redis-bus.js';
import { retriedWork } from '../db/outage.js';
import { errorFields, log } from '../log.js';

export { StreamInterrupted } from './change-stream.js';

/** What a subscription listens to: audits (toolStatusChanged, auditChanged), runs, or both (threadChanges). */
export type Topic = 'audit' | 'run' | 'changes';

/** What a subscriber receives: committed changes, and possibly one StreamInterrupted as the last value. */
export type Delivery = CommittedChange | StreamInterrupted;

/**
 * How many changes a subscriber may have queued before it is switched to catching up from the
 * database (also the page size of a catch-up read).
 */
export const DEFAULT_MAX_PENDING_EVENTS = 256;

/** Where the database is read: the thread's changes after a cursor, and threads' current cursors. */
export interface ChangeStore {
  changesAfter(threadId: string, after: bigint, limit: number): Promise<CommittedChange[]>;
  threadCursors(threadIds: readonly string[]): Promise<{ id: string; changeCursor: bigint }[]>;
  /** Deletes the changes kept as committed once they are old (keepsRecentChanges). */
  pruneRecentChanges?(): Promise<void>;
  /** Owners' tool activity views, in the order asked (dashboards); a store without it serves no dashboards. */
  toolActivity?(reads: readonly OwnerActivityRead[]): Promise<ToolActivity[]>;
  /** The owners' tool audits changed since a poll's bound (src/domain/tool-activity-changes.ts): dashboards without Redis. */
  pollToolAuditChanges?(ownerIds: readonly string[], previousBound: Date | null): Promise<ToolAuditChangePoll>;
}

export interface SubscribeOptions {
  /** Resume after this cursor; without it, the stream starts at the thread's current cursor. */
  after?: bigint;
  accept?: (change: CommittedChange) => boolean;
  /** The subscriber's token expiry: the stream then ends with TOKEN_EXPIRED. */
  endsAtMs?: number;
}

export interface PubSub {
  /**
   * The thread's committed changes after `after` (or from now on): caught up from the database,
   * then live, gapless and in cursor order (src/realtime/change-stream.ts).
   */
  subscribe(topic: Topic, threadId: string, options?: SubscribeOptions): Promise<AsyncIterableIterator<Delivery>>;
  /** Open subscriptions of a thread, for readiness probes and tests. */
  subscriberCount(topic: Topic, threadId: string): number;
  /** Dashboards: views of an owner's tool activity across threads, read again after its tool audits change. */
  activity: ActivityFeeds;
}

/** The owners whose tool audits these changes touch. */
const toolAuditOwners = (changes: CommittedChange[]) =>
  new Set(changes.flatMap((change) => (change.kind === 'audit' && change.row.ownerId ? [change.row.ownerId] : [])));

const stopping = () => new StreamInterrupted('SERVER_STOPPING', 'The server is stopping. Resume with your last cursor.');

const tokenExpired = () =>
  new StreamInterrupted('TOKEN_EXPIRED', 'The token that started this subscription has expired. Subscribe again with a fresh token.');

const threadDeleted = () => new StreamInterrupted('THREAD_DELETED', 'The thread was deleted.');

/**
 * One thread's subscribers on this instance. The highest cursor heard of reaches every subscriber;
 * each one decides whether it can take a change live or must catch up (ChangeStream). Catch-up
 * reads of subscribers at the same cursor share one database read.
 */
class ThreadFeed {
  readonly streams = new Map<ChangeStream, Topic>();
  private readonly reads = new Map<bigint, Promise<CommittedChange[]>>();

  constructor(
    readonly threadId: string,
    private readonly store: ChangeStore,
    readonly pageSize: number,
  ) {}

  /** The highest cursor heard of. */
  known = 0n;

  /** Changes published together (one command's, one batch's), delivered together. */
  deliver(changes: CommittedChange[]): void {
    deliveredTogether(changes);
    for (const change of changes) if (change.cursor > this.known) this.known = change.cursor;
    for (const stream of this.streams.keys()) for (const change of changes) stream.offer(change);
  }

  reached(cursor: bigint): void {
    if (cursor > this.known) this.known = cursor;
    for (const stream of this.streams.keys()) stream.reached(cursor);
  }

  readAfter = (after: bigint): Promise<CommittedChange[]> => {
    let read = this.reads.get(after);
    if (!read) {
      read = this.store
        .changesAfter(this.threadId, after, this.pageSize)
        .then((page) => (deliveredTogether(page), page))
        .finally(() => this.reads.delete(after));
      this.reads.set(after, read);
    }
    return read;
  };
}

/** How often an instance deletes the recent changes past their time (each instance does: any may be the last one up). */
const PRUNE_RECENT_CHANGES_MS = 60_000;

/** How often subscribed threads' cursors are read from the database: a safety net, and Redis' stand-in while it is down. */
export const POLL_MS = { healthy: 5000, unhealthy: 1000 };

/**
 * While Redis is healthy, a change the poll finds may still be on its way through Redis: a polled
 * cursor forces catch-up only on the streams still below it this long after the poll, instead
 * of sending every subscriber to the database for changes about to arrive live.
 */
export const POLL_GRACE_MS = ARRIVAL_WAIT_MS;

/**
 * `pollWithoutBusMs`: several instances share the database but no Redis: the poll is then how
 * another instance's changes arrive (null: one process, every change is published in it).
 */
function createPubSub(store: ChangeStore, bus: WakeBus | null, pageSize = DEFAULT_MAX_PENDING_EVENTS, pollWithoutBusMs: number | null = null, clock?: Clock) {
  const feeds = new Map<string, ThreadFeed>();
  const activity = createActivityFeeds(
    (reads) => (store.toolActivity ? store.toolActivity(reads) : Promise.reject(new Error('This store reads no tool activity'))),
    clock,
  );

  const feedOf = (threadId: string) => {
    let feed = feeds.get(threadId);
    if (!feed) {
      feed = new ThreadFeed(threadId, store, pageSize);
      feeds.set(threadId, feed);
      bus?.listen(threadId);
    }
    return feed;
  };

  const release = (feed: ThreadFeed, stream: ChangeStream) => {
    feed.streams.delete(stream);
    if (feed.streams.size === 0 && feeds.get(feed.threadId) === feed) {
      feeds.delete(feed.threadId);
      bus?.unlisten(feed.threadId);
    }
  };

  /** One query for every subscribed thread; a thread that moved wakes its subscribers, after `graceMs`. */
  const cursorReads = retriedWork('change-poll', 'reading the thread cursors', { component: 'realtime' });
  const readCursors = async (graceMs: number) => {
    try {
      if (feeds.size === 0) return;
      const asked = [...feeds.keys()];
      const cursors = await store.threadCursors(asked);
      cursorReads.succeeded();
      // A thread asked for and not found was deleted: its deletion signal may have been lost. Only
      // those asked for: a thread first subscribed during the read was not looked for.
      const found = new Set(cursors.map(({ id }) => id));
      for (const threadId of asked) if (!found.has(threadId)) pubsub.endThread(threadId);
      const reach = () => {
        for (const { id, changeCursor } of cursors) feeds.get(id)?.reached(changeCursor);
      };
      if (graceMs === 0) reach();
      else setTimeout(reach, graceMs).unref();
    } catch (error) {
      cursorReads.failed(error);
    }
  };
  /**
   * Dashboards while no Redis carries the activity signal (none configured, or away): one read
   * per poll for every owner with feeds here, of the counts of their tool audits changed in the
   * last seconds; only the feeds of owners whose counts moved read a new view. With Redis healthy
   * the poll rests and forgets its counts (a later first poll wakes what changed in its last
   * LATE_COMMIT_MS: at most one extra view per feed).
   */
  let activityPolled: { bound: Date; counted: Map<string, ToolAuditChangeCount> } | null = null;
  const activityPolls = retriedWork('activity-poll', "polling the tool audits' changes", { component: 'activity' });
  const pollActivity = async (redisCarriesIt: boolean) => {
    const owners = activity.owners();
    if (redisCarriesIt || owners.length === 0 || !store.pollToolAuditChanges) {
      activityPolled = null;
      return;
    }
    try {
      const poll = await store.pollToolAuditChanges(owners, activityPolled?.bound ?? null);
      activityPolls.succeeded();
      activity.changed(changedOwners(poll, activityPolled?.counted ?? new Map()));
      activityPolled = { bound: poll.bound, counted: new Map([...poll.byOwner].map(([ownerId, counts]) => [ownerId, counts.sinceBound])) };
    } catch (error) {
      activityPolls.failed(error);
    }
  };

  // One cursor read at a time: a poll asked for while one is under way (a recovery during a timer
  // tick) reads after it, with its own grace (readCursors and pollActivity never reject). One
  // asked for while another with the same grace waits to start is that one: "everything changed"
  // from every instance at once after a long outage is one read, not one each.
  let polling = Promise.resolve();
  let waitingGraceMs: number | null = null;
  const poll = (graceMs: number) => {
    if (waitingGraceMs === graceMs) return polling;
    waitingGraceMs = graceMs;
    return (polling = polling.then(async () => {
      if (waitingGraceMs === graceMs) waitingGraceMs = null;
      await Promise.all([readCursors(graceMs), pollActivity(bus?.healthy() ?? false)]);
    }));
  };

  bus?.onMessage((threadId, cursor, changes) => {
    const feed = feeds.get(threadId);
    if (!feed) return;
    // Changes that came with their wake-up are taken in cursor order (ChangeStream); a wake-up
    // without them (too large for Redis) is read from the database.
    if (changes) feed.deliver(changes);
    else feed.reached(cursor);
  });
  // Whatever was published while Redis was away is found in the database: no grace. A deletion
  // is found by the cursor read; a tool-activity signal has no trace there, so every dashboard
  // reads a new view. The same when another instance had to drop the signals it held for "everything changed".
  const readEverything = () => {
    void poll(0);
    activity.changed(activity.owners());
  };
  bus?.onRecovered(readEverything);
  bus?.onEverythingChanged(readEverything);

  let timer: NodeJS.Timeout | null = null;
  const schedule = (down = false) => {
    const healthy = () => !down && (bus?.healthy() ?? false);
    const interval = bus ? (healthy() ? POLL_MS.healthy : POLL_MS.unhealthy) : pollWithoutBusMs!;
    // Only the poll of the latest timer arms the next: one armed meanwhile (Redis lost during
    // the read) or none (stopped) means this one's turn is over.
    const armed: NodeJS.Timeout = setTimeout(() => void poll(healthy() ? POLL_GRACE_MS : 0).finally(() => timer === armed && schedule()), interval);
    timer = armed.unref();
  };
  // Reads only while this instance has subscribers (readCursors).
  if (bus || pollWithoutBusMs !== null) schedule();
  // Redis just went away: the database stands in from now on, not from the healthy poll's next
  // turn (up to POLL_MS.healthy away), which would leave subscribers without changes until then.
  // (A connection's error may come before its status leaves `ready`: the outage is taken as said.)
  bus?.onLost(() => {
    if (!timer) return;
    clearTimeout(timer);
    void poll(0);
    schedule(true);
  });

  const prunes = retriedWork('recent-changes-prune', 'pruning the recent changes', { component: 'realtime' });
  const pruner = store.pruneRecentChanges
    ? setInterval(() => void store.pruneRecentChanges!().then(prunes.succeeded, prunes.failed), PRUNE_RECENT_CHANGES_MS).unref()
    : null;

  const pubsub = {
    activity,

    /** Committed changes, in commit order per thread: to this instance's subscribers at once, and to the other instances. */
    publish(changes: CommittedChange[]) {
      const byThread = new Map<string, CommittedChange[]>();
      for (const change of changes) byThread.set(change.threadId, [...(byThread.get(change.threadId) ?? []), change]);
      for (const [threadId, threadChanges] of byThread) {
        feeds.get(threadId)?.deliver(threadChanges);
        bus?.publish(threadId, threadChanges);
      }
    },

    async subscribe(topic: Topic, threadId: string, { after, accept = () => true, endsAtMs }: SubscribeOptions = {}) {
      const feed = feedOf(threadId);
      const cancelExpiry = endsAtMs === undefined ? () => {} : at(endsAtMs, () => stream.interrupt(tokenExpired()));
      let start = after;
      // Registered before its start cursor is read: a change committed meanwhile is either at or
      // before that cursor (and dropped) or after it (and delivered).
      const stream: ChangeStream = new ChangeStream(after ?? 0n, pageSize, feed.readAfter, () => feed.known, accept, () => {
        cancelExpiry();
        release(feed, stream);
      });
      feed.streams.set(stream, topic);
      if (start === undefined) {
        try {
          const [current] = await store.threadCursors([threadId]);
          start = current?.changeCursor ?? 0n;
        } catch (error) {
          stream.interrupt(stopping());
          throw error;
        }
      }
      stream.startAt(start, after !== undefined);
      return stream;
    },

    subscriberCount(topic: Topic, threadId: string) {
      return [...(feeds.get(threadId)?.streams ?? [])].filter(([stream, each]) => each === topic && stream.started).length;
    },

    /** The thread was deleted: its streams on this instance end, telling their subscribers so. */
    endThread(threadId: string) {
      for (const stream of [...(feeds.get(threadId)?.streams.keys() ?? [])]) stream.interrupt(threadDeleted());
    },

    /** Every open stream tells its subscriber why it ends. */
    interruptAll(interruption: StreamInterrupted) {
      activity.interruptAll(interruption);
      for (const feed of [...feeds.values()]) for (const stream of [...feed.streams.keys()]) stream.interrupt(interruption);
    },

    stopPolling() {
      if (timer) clearTimeout(timer);
      timer = null;
      if (pruner) clearInterval(pruner);
    },
  };
  return pubsub;
}

/**
 * How this instance hears of changes other instances commit: Redis wake-ups, a poll of the
 * watched threads' cursors (PostgreSQL without Redis), or none needed (embedded PGlite: one process).
 */
/**
 * PostgreSQL without Redis: other instances' changes are read from the database, so each change
 * is kept there as committed for a few minutes (src/domain/change-cursors.ts, recent changes),
 * by every instance's writes, for every instance's subscribers.
 */
export const keepsRecentChanges = (config: Pick<Config, 'redisUrl' | 'databaseUrl'>) => Boolean(config.databaseUrl) && !config.redisUrl;

export function liveUpdatesMode(config: Pick<Config, 'redisUrl' | 'databaseUrl' | 'changePollIntervalMs'>): string {
  if (config.redisUrl) return 'Redis wake-ups (REDIS_URL), database poll as a safety net';
  if (config.databaseUrl) return `database poll every ${config.changePollIntervalMs} ms (no REDIS_URL; set it for faster delivery across instances)`;
  return 'in-process (one instance)';
}

/**
 * The bus, healthy only while the signals' channels are subscribed too, and recovered only once
 * all of them are: a signal another instance sent before is read from the database then.
 */
function withSignals(bus: WakeBus, signals: { subscribed(): boolean; onSubscribed(listener: () => void): void }[]): WakeBus {
  const healthy = () => bus.healthy() && signals.every((signal) => signal.subscribed());
  return {
    ...bus,
    healthy,
    onRecovered(listener) {
      const whenAll = () => healthy() && listener();
      bus.onRecovered(whenAll);
      for (const signal of signals) signal.onSubscribed(whenAll);
    },
  };
}

/**
 * Change feeds for this instance; with REDIS_URL, Redis carries wake-ups (and small changes) to
 * every instance; on PostgreSQL without it, a poll of the watched threads' cursors does, slower.
 * The database stays the source of truth: a Redis outage, even one that begins at start, only
 * slows delivery down to the poll.
 */
export async function createPubSubFor(
  config: Config,
  store: ChangeStore,
  options: { maxPendingEvents?: number; activityClock?: Clock; maxUnsentSignals?: number } = {},
) {
  const { redisUrl, redisPrefix } = config;
  const maxUnsent = options.maxUnsentSignals;
  // The Redis modules (and ioredis) are loaded only when REDIS_URL is set.
  const bus = redisUrl ? await (await import('./redis-bus.js')).connectRedisBus(redisUrl, redisPrefix, maxUnsent) : null;
  // The signals' listeners are this pubsub's, made with the bus that waits for their channels too.
  let created: ReturnType<typeof createPubSub> | null = null;
  const deletions = redisUrl ? await (await import('./deletion-signal.js')).connectDeletionSignal(redisUrl, redisPrefix, (threadId) => created?.endThread(threadId), maxUnsent) : null;
  const activitySignal = redisUrl
    ? await (await import('./activity-signal.js')).connectActivitySignal(redisUrl, redisPrefix, (ownerId) => created?.activity.changed([ownerId]), maxUnsent)
    : null;
  const redis = bus && withSignals(bus, [deletions!, activitySignal!]);
  const pubsub = (created = createPubSub(store, redis, options.maxPendingEvents, config.databaseUrl ? config.changePollIntervalMs : null, options.activityClock));
  let closed = false;
  /** The owners' dashboards read a new view, here and (through Redis) on the other instances. */
  const activityChanged = (ownerIds: Iterable<string>) => {
    pubsub.activity.changed(ownerIds);
    for (const ownerId of ownerIds) activitySignal?.publish(ownerId);
  };
  return {
    pubsub: pubsub as PubSub,
    /**
     * The domain's sink, after commit: must not throw (a failure would report a committed write
     * as failed). Delivery starts once the writer's response is on its way (setImmediate), so a
     * write never waits for its fan-out, however many subscribers listen; immediates run in the
     * order they were set, so changes are still published in commit order.
     */
    publishEvents: (changes: CommittedChange[]) => {
      setImmediate(() => {
        if (closed) return;
        try {
          pubsub.publish(changes);
          activityChanged(toolAuditOwners(changes));
        } catch (error) {
          log.error({ component: 'realtime', error: errorFields(error) }, 'could not publish committed changes');
        }
      });
    },
    /**
     * A thread was marked deleted: its streams end here at once, and on the other instances through
     * Redis; its owner's dashboards no longer count it from then (docs/dashboards.md).
     */
    threadDeleted: (threadId: string, ownerId: string) => {
      pubsub.endThread(threadId);
      deletions?.publish(threadId);
      activityChanged([ownerId]);
    },
    /** With REDIS_URL: whether Redis delivers wake-ups now, its channels subscribed (GET /metrics); /readyz does not ask, Redis being optional for correctness. */
    redisHealthy: redis ? () => redis.healthy() : undefined,
    /** With REDIS_URL: the signals this instance holds until Redis takes them (GET /metrics). */
    redisUnsent: redis
      ? () => ({ 'wake-up': redis.unsent(), deletion: deletions!.unsent(), 'tool-activity': activitySignal!.unsent() })
      : undefined,
    /** Ends every open stream with SUBSCRIPTION_INTERRUPTED: at shutdown, so SSE responses can finish. */
    interruptSubscriptions: () => pubsub.interruptAll(stopping()),
    async close() {
      closed = true;
      pubsub.stopPolling();
      pubsub.interruptAll(stopping());
      await Promise.all([bus?.close(), deletions?.close(), activitySignal?.close()]);
    },
  };
}
