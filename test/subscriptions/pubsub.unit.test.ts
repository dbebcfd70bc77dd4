import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { CommittedChange } from '../../src/domain/events.js';
import type { Message } from '../../src/generated/prisma/client.js';
import { ARRIVAL_WAIT_MS } from '../../src/realtime/change-stream.js';
import { POLL_GRACE_MS, POLL_MS, StreamInterrupted, createPubSubFor, type ChangeStore } from '../../src/realtime/pubsub.js';
import type { WakeBus } from '../../src/realtime/redis-bus.js';
import { testRedisUrl } from './support.js';

// The change feed behind every subscription (docs/subscriptions.md): gapless, in cursor order,
// caught up from the store (the database, here a list) after a gap or while a subscriber lags.

/** A store holding every committed change, as the database does (latest state per entity). */
function memoryStore() {
  const log: CommittedChange[] = [];
  const cursors = new Map<string, bigint>();
  const store: ChangeStore & { commit(threadId: string, entityId: string): CommittedChange; reads: number; gate?: Promise<void> } = {
    reads: 0,
    commit(threadId, entityId) {
      const cursor = (cursors.get(threadId) ?? 0n) + 1n;
      cursors.set(threadId, cursor);
      const row = { id: entityId, threadId, runId: 'run', role: 'TOOL', changeCursor: cursor } as unknown as Message;
      const change: CommittedChange = { kind: 'audit', threadId, row, cursor, committedAt: new Date() };
      log.push(change);
      return change;
    },
    async changesAfter(threadId, after, limit) {
      store.reads++;
      // A read in progress: what it returns is decided when it started.
      const gate = store.gate;
      const latest = new Map<string, CommittedChange>();
      for (const change of log) if (change.threadId === threadId) latest.set(change.row.id, change);
      await gate;
      return [...latest.values()].filter((change) => change.cursor > after).sort((a, b) => Number(a.cursor - b.cursor)).slice(0, limit);
    },
    async threadCursors(threadIds) {
      return threadIds.map((id) => ({ id, changeCursor: cursors.get(id) ?? 0n }));
    },
  };
  return store;
}

async function feed(maxPendingEvents: number) {
  const store = memoryStore();
  return { store, ...(await createPubSubFor(loadConfig({}), store, { maxPendingEvents })) };
}

async function take(iterator: AsyncIterator<unknown>, count: number) {
  const values: unknown[] = [];
  for (let i = 0; i < count; i++) values.push((await iterator.next()).value);
  return values;
}

const ids = (values: unknown[]) => values.map((value) => (value as CommittedChange).row.id);

/** The store's cursor reads, counted and held open until `open()`. */
function heldCursorReads(store: ChangeStore) {
  const threadCursors = store.threadCursors;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reads = { count: 0, inFlight: 0, open };
  store.threadCursors = async (threadIds) => {
    reads.count++;
    reads.inFlight++;
    await gate;
    reads.inFlight--;
    return threadCursors(threadIds);
  };
  return reads;
}

/** A Redis bus that carries nothing and is healthy, but for what `overrides` says. */
const quietBus = (overrides: Partial<WakeBus>): WakeBus => ({
  publish() {},
  listen() {},
  unlisten() {},
  onMessage() {},
  onRecovered() {},
  onLost() {},
  onEverythingChanged() {},
  unsent: () => 0,
  healthy: () => true,
  close: async () => {},
  ...overrides,
});

/** createPubSubFor with `bus` standing in for Redis (the test decides when it is lost or back), on fake timers. */
async function onFakeRedis(bus: WakeBus) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  vi.doMock('../../src/realtime/redis-bus.js', () => ({ connectRedisBus: async () => bus }));
  // The deletion and tool-activity signals' channels stay subscribed: the bus alone is lost and back.
  const quietSignal = () => ({ subscribed: () => true, onSubscribed() {}, publish() {}, unsent: () => 0, close: async () => {} });
  vi.doMock('../../src/realtime/deletion-signal.js', () => ({ connectDeletionSignal: quietSignal }));
  vi.doMock('../../src/realtime/activity-signal.js', () => ({ connectActivitySignal: quietSignal }));
  vi.resetModules();
  const { createPubSubFor: withBus } = await import('../../src/realtime/pubsub.js');
  const store = memoryStore();
  return { store, ...(await withBus(loadConfig({ REDIS_URL: 'redis://fake' }), store)) };
}

describe('change feed', () => {
  it("delivers a thread's changes live, in cursor order, with no other thread's", async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    const audits = await pubsub.subscribe('audit', 'a');
    publishEvents([store.commit('a', '1'), store.commit('b', 'other'), store.commit('a', '2')]);
    expect(ids(await take(audits, 2))).toEqual(['1', '2']);
    expect(store.reads).toBe(0);
    await close();
  });

  it('changes published out of commit order are put back in order, live: no catch-up read', async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    const audits = await pubsub.subscribe('audit', 't');
    const [first, second, third, fourth] = ['1', '2', '3', '4'].map((id) => store.commit('t', id));
    publishEvents([third!]);
    publishEvents([second!]);
    publishEvents([fourth!]);
    publishEvents([first!]);
    expect(ids(await take(audits, 4))).toEqual(['1', '2', '3', '4']);
    expect(store.reads).toBe(0);
    await close();
  });

  describe('a change that never arrives', () => {
    afterEach(() => vi.useRealTimers());

    it(`is looked up in the store once the changes after it have waited ARRIVAL_WAIT_MS (${ARRIVAL_WAIT_MS} ms), nothing twice`, async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      const audits = await pubsub.subscribe('audit', 't');
      store.commit('t', 'lost');
      publishEvents([store.commit('t', 'after it')]);
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS - 1);
      expect(store.reads).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(ids(await take(audits, 2))).toEqual(['lost', 'after it']);
      expect(store.reads).toBe(1);
      await close();
    });

    it("is looked up once for all of the thread's subscribers: one read, however many wait for it", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      const subscribers = await Promise.all(Array.from({ length: 50 }, () => pubsub.subscribe('audit', 't')));
      store.commit('t', 'lost');
      publishEvents([store.commit('t', 'after it')]);
      // A database read takes I/O: every subscriber's wait expires before it answers.
      let answer!: () => void;
      store.gate = new Promise((resolve) => (answer = resolve));
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS);
      answer();
      for (const audits of subscribers) expect(ids(await take(audits, 2))).toEqual(['lost', 'after it']);
      expect(store.reads).toBe(1);
      await close();
    });

    it('waits its own time after the ones before it arrived', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      const audits = await pubsub.subscribe('audit', 't');
      const [first] = [store.commit('t', '1'), store.commit('t', 'lost')];
      publishEvents([store.commit('t', '3')]);
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS - 10);
      publishEvents([first!]);
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS - 1);
      expect(ids(await take(audits, 1))).toEqual(['1']);
      expect(store.reads).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(ids(await take(audits, 2))).toEqual(['lost', '3']);
      expect(store.reads).toBe(1);
      await close();
    });

    it('whose entity changed since is a gap a wait after it was looked up: caught up, folded into that change', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      const audits = await pubsub.subscribe('audit', 't');
      store.commit('t', 'x'); // its publish is lost
      const later = store.commit('t', 'x');
      publishEvents([later]);
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS);
      expect(store.reads).toBe(1); // looked up: the store holds x's later change only
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS - 1);
      expect(store.reads).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(await take(audits, 1)).toEqual([later]);
      expect(store.reads).toBe(2);
      await close();
    });

    it('whose entity changed since is still delivered live when its publish comes within the second wait', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      const audits = await pubsub.subscribe('audit', 't');
      const [late, later] = [store.commit('t', 'x'), store.commit('t', 'x')];
      publishEvents([later!]);
      await vi.advanceTimersByTimeAsync(ARRIVAL_WAIT_MS * 2 - 1);
      publishEvents([late!]);
      await vi.advanceTimersByTimeAsync(0);
      expect(await take(audits, 2)).toEqual([late, later]);
      expect(store.reads).toBe(1);
      await close();
    });

    it('is a gap at once when what is held would pass the bound', async () => {
      const { store, pubsub, publishEvents, close } = await feed(3);
      const audits = await pubsub.subscribe('audit', 't');
      store.commit('t', 'lost');
      for (let i = 0; i < 4; i++) publishEvents([store.commit('t', String(i))]);
      expect(ids(await take(audits, 5))).toEqual(['lost', '0', '1', '2', '3']);
      expect(store.reads).toBeGreaterThan(0);
      await close();
    });
  });

  it('a subscriber over its bound is caught up from the store, never interrupted', async () => {
    const { store, pubsub, publishEvents, close } = await feed(3);
    const audits = await pubsub.subscribe('audit', 't');
    for (let i = 0; i < 10; i++) publishEvents([store.commit('t', String(i))]);
    const values = await take(audits, 10);
    expect(values.some((value) => value instanceof StreamInterrupted)).toBe(false);
    expect(ids(values)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    await close();
  });

  it('with after, catches up first, then continues live', async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    store.commit('t', 'old');
    const seen = store.commit('t', 'seen');
    store.commit('t', 'missed');
    const audits = await pubsub.subscribe('audit', 't', { after: seen.cursor });
    publishEvents([store.commit('t', 'live')]);
    expect(ids(await take(audits, 2))).toEqual(['missed', 'live']);
    await close();
  });

  it('changes that arrive during a catch-up read and follow on are taken live, with no second read', async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    const seen = store.commit('t', 'seen');
    store.commit('t', 'missed');
    const audits = await pubsub.subscribe('audit', 't', { after: seen.cursor });
    const first = audits.next(); // starts the catch-up read
    publishEvents([store.commit('t', 'during the read')]);
    expect(ids([(await first).value, ...(await take(audits, 1))])).toEqual(['missed', 'during the read']);
    publishEvents([store.commit('t', 'live')]);
    expect(ids(await take(audits, 1))).toEqual(['live']);
    expect(store.reads).toBe(1);
    await close();
  });

  it("delivers after the writer's turn: a write never waits for its fan-out", async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    const audits = await pubsub.subscribe('audit', 'a');
    let delivered = false;
    const next = audits.next().then((result) => ((delivered = true), result));
    publishEvents([store.commit('a', '1')]);
    // The rest of the writer's turn (its response is written on microtasks like these).
    for (let turn = 0; turn < 20; turn++) await Promise.resolve();
    expect(delivered).toBe(false);
    expect(ids([(await next).value])).toEqual(['1']);
    await close();
  });

  it('closing tells open subscribers the server is stopping', async () => {
    const { pubsub, close } = await feed(10);
    const runs = await pubsub.subscribe('run', 't');
    await close();
    expect((await runs.next()).value).toMatchObject({ reason: 'SERVER_STOPPING' });
    expect(await runs.next()).toEqual({ value: undefined, done: true });
  });

  describe('a subscriber whose token expires', () => {
    afterEach(() => vi.useRealTimers());

    it('is interrupted with TOKEN_EXPIRED at the expiry, even months away, and detached', async () => {
      // setImmediate stays real: published changes are delivered on it.
      vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z'), toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const { store, pubsub, publishEvents, close } = await feed(10);
      // Beyond setTimeout's longest delay (about 24.8 days).
      const endsAtMs = Date.parse('2027-02-27T12:00:00Z');
      const audits = await pubsub.subscribe('audit', 't', { endsAtMs });
      await vi.advanceTimersByTimeAsync(endsAtMs - Date.now() - 1);
      publishEvents([store.commit('t', 'before')]);
      expect(ids(await take(audits, 1))).toEqual(['before']);

      await vi.advanceTimersByTimeAsync(1);
      expect((await audits.next()).value).toMatchObject({ reason: 'TOKEN_EXPIRED' });
      expect(await audits.next()).toEqual({ value: undefined, done: true });
      expect(pubsub.subscriberCount('audit', 't')).toBe(0);
      await close();
    });

    it('is not interrupted once it has ended for another reason', async () => {
      vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z') });
      const { pubsub, close } = await feed(10);
      const runs = await pubsub.subscribe('run', 't', { endsAtMs: Date.now() + 1000 });
      await runs.return!();
      expect(vi.getTimerCount()).toBe(0);
      await close();
    });
  });

  describe('the safety-net poll', () => {
    afterEach(() => {
      vi.useRealTimers();
      for (const module of ['redis-bus', 'deletion-signal', 'activity-signal']) vi.doUnmock(`../../src/realtime/${module}.js`);
      vi.resetModules();
    });

    it('reads cursors one at a time: a recovery during a timed poll reads after it', async () => {
      let recovered!: () => void;
      const { store, pubsub, close } = await onFakeRedis(quietBus({ onRecovered: (listener) => void (recovered = listener) }));
      await pubsub.subscribe('audit', 't');

      const cursorReads = heldCursorReads(store);
      await vi.advanceTimersByTimeAsync(POLL_MS.healthy); // the timed poll, its read held open
      recovered();
      await vi.advanceTimersByTimeAsync(0);
      expect([cursorReads.count, cursorReads.inFlight]).toEqual([1, 1]);
      cursorReads.open();
      await vi.waitFor(() => expect(cursorReads.count).toBe(2)); // the recovery's own read, once the first ended
      await close();
    });

    it('"everything changed" from many instances at once, while a read is under way, is one more read, not one each', async () => {
      let everything!: () => void;
      const { store, pubsub, close } = await onFakeRedis(quietBus({ onEverythingChanged: (listener) => void (everything = listener) }));
      await pubsub.subscribe('audit', 't');

      const cursorReads = heldCursorReads(store);
      everything(); // its read held open
      await vi.advanceTimersByTimeAsync(0);
      for (let i = 0; i < 20; i++) everything();
      cursorReads.open();
      await vi.waitFor(() => expect(cursorReads.count).toBe(2));
      await vi.advanceTimersByTimeAsync(0);
      expect(cursorReads.count).toBe(2);
      await close();
    });

    // Redis went away just after a healthy poll: the next poll, 5 s later, was the first to read
    // the database, so subscribers on other instances than the writer's got nothing for 5 s.
    it('reads the database as soon as Redis is lost, then every second, not at the healthy poll\'s next turn', async () => {
      let up = true;
      let lost: (() => void) | undefined;
      const { store, pubsub, close } = await onFakeRedis(quietBus({ onLost: (listener) => void (lost = listener), healthy: () => up }));
      const audits = await pubsub.subscribe('audit', 't');
      await vi.advanceTimersByTimeAsync(POLL_MS.healthy + POLL_GRACE_MS); // a healthy poll: nothing yet

      // What the subscriber has by now, without waiting for more.
      const hasNow = (next: Promise<IteratorResult<unknown>>) => Promise.race([next.then(({ value }) => ids([value])), new Promise<string[]>((resolve) => setImmediate(resolve, []))]);
      up = false;
      lost?.();
      store.commit('t', 'while Redis is away'); // its publish never reaches this instance
      const first = audits.next();
      await vi.advanceTimersByTimeAsync(POLL_MS.unhealthy);
      expect(await hasNow(first)).toEqual(['while Redis is away']);
      store.commit('t', 'a second later');
      const second = audits.next();
      await vi.advanceTimersByTimeAsync(POLL_MS.unhealthy);
      expect(await hasNow(second)).toEqual(['a second later']);
      await close();
    });

    // Redis lost while a timed poll's read was under way (a slow database, a loaded machine): the
    // loss armed the unhealthy poll, and the read, once over, armed its own next turn as well. Two
    // polls ran from then on, one more for each such loss, and close stopped only the last.
    it('Redis lost during a poll leaves one poll running, every second, and none after close', async () => {
      let lost!: () => void;
      const { store, pubsub, close } = await onFakeRedis(quietBus({ onLost: (listener) => void (lost = listener), healthy: () => false }));
      await pubsub.subscribe('audit', 't');
      const threadCursors = store.threadCursors;
      let reads = 0;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      store.threadCursors = async (threadIds) => {
        if (reads++ === 0) await gate;
        return threadCursors(threadIds);
      };
      await vi.advanceTimersByTimeAsync(POLL_MS.unhealthy); // the timed poll, its read held open
      lost();
      open();
      await vi.advanceTimersByTimeAsync(0); // the timed read and the loss's own are over
      expect(reads).toBe(2);

      await vi.advanceTimersByTimeAsync(10 * POLL_MS.unhealthy);
      expect(reads).toBe(12);
      await close();
      await vi.advanceTimersByTimeAsync(10 * POLL_MS.unhealthy);
      expect(reads).toBe(12);
    });

    it('changes the poll finds before their publish are looked up: each taken once, exactly as committed', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const config = loadConfig({ DATABASE_URL: 'postgres://poll' });
      const store = memoryStore();
      const { pubsub, publishEvents, close } = await createPubSubFor(config, store);
      const audits = await pubsub.subscribe('audit', 't');
      // Committed, their publishes late: the store holds y, and z in its later state only.
      const [y, zStarted, zFinished] = [store.commit('t', 'y'), store.commit('t', 'z'), store.commit('t', 'z')];
      await vi.advanceTimersByTimeAsync(config.changePollIntervalMs);
      expect(await take(audits, 1)).toEqual([y]);
      for (const change of [y, zStarted, zFinished]) publishEvents([change!]);
      expect(await take(audits, 2)).toEqual([zStarted, zFinished]);
      expect(store.reads).toBe(1);
      await close();
    });

    it('a thread subscribed while a poll is under way is not taken for deleted', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      // Several instances without Redis: the poll reads every subscribed thread's cursor.
      const store = memoryStore();
      const { pubsub, publishEvents, close } = await createPubSubFor(loadConfig({ DATABASE_URL: 'postgres://poll' }), store);
      await pubsub.subscribe('audit', 'old');
      const threadCursors = store.threadCursors;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let polls = 0;
      store.threadCursors = async (threadIds) => {
        // The poll asks for the old thread alone; its read is held open while the new one starts.
        if (threadIds.includes('old') && polls++ === 0) await gate;
        return threadCursors(threadIds);
      };
      await vi.advanceTimersByTimeAsync(loadConfig({ DATABASE_URL: 'postgres://poll' }).changePollIntervalMs);
      expect(polls).toBe(1);
      const started = await pubsub.subscribe('audit', 'new');
      open();
      await vi.advanceTimersByTimeAsync(0);
      expect(pubsub.subscriberCount('audit', 'new')).toBe(1);
      publishEvents([store.commit('new', 'live')]);
      expect(ids(await take(started, 1))).toEqual(['live']);
      await close();
    });
  });

  describe.skipIf(!testRedisUrl)('the safety-net poll while Redis is healthy', () => {
    afterEach(() => vi.useRealTimers());

    async function redisFeed() {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const store = memoryStore();
      return { store, ...(await createPubSubFor(loadConfig({ REDIS_URL: testRedisUrl! }), store, { maxPendingEvents: 10 })) };
    }

    it('leaves a change in flight a grace: it arrives live, with no catch-up read', async () => {
      const { store, pubsub, publishEvents, close } = await redisFeed();
      const audits = await pubsub.subscribe('audit', 't');
      const inFlight = store.commit('t', 'in flight');
      await vi.advanceTimersByTimeAsync(POLL_MS.healthy);
      publishEvents([inFlight]);
      await vi.advanceTimersByTimeAsync(POLL_GRACE_MS);
      expect(ids(await take(audits, 1))).toEqual(['in flight']);
      expect(store.reads).toBe(0);
      await close();
    });

    it('catches up a change that never arrived, once the grace is over', async () => {
      const { store, pubsub, close } = await redisFeed();
      const audits = await pubsub.subscribe('audit', 't');
      store.commit('t', 'lost');
      await vi.advanceTimersByTimeAsync(POLL_MS.healthy + POLL_GRACE_MS);
      expect(ids(await take(audits, 1))).toEqual(['lost']);
      expect(store.reads).toBe(1);
      await close();
    });
  });

  describe.skipIf(!testRedisUrl)('two instances sharing Redis', () => {
    it('wake-ups heard during a catch-up read do not throw away the changes that follow on', async () => {
      const store = memoryStore();
      const config = loadConfig({ REDIS_URL: testRedisUrl! });
      const [a, b] = await Promise.all([0, 1].map(() => createPubSubFor(config, store, { maxPendingEvents: 10 })));
      onTestFinished(async () => void (await Promise.all([a!.close(), b!.close()])));
      const thread = `thread-${randomUUID()}`;
      const seen = store.commit(thread, 'seen');
      store.commit(thread, 'missed');
      const live = await b!.pubsub.subscribe('audit', thread);
      const resumed = await b!.pubsub.subscribe('audit', thread, { after: seen.cursor });
      let open!: () => void;
      store.gate = new Promise((resolve) => (open = resolve));
      const first = resumed.next(); // its catch-up read, held open

      a!.publishEvents([store.commit(thread, 'during the read')]);
      expect(ids(await take(live, 1))).toEqual(['during the read']); // B has heard the wake-up
      open();
      expect(ids([(await first).value, ...(await take(resumed, 1))])).toEqual(['missed', 'during the read']);
      a!.publishEvents([store.commit(thread, 'live')]);
      expect(ids(await take(resumed, 1))).toEqual(['live']);
      expect(store.reads).toBe(1);
    });
  });
});

/** `take` for the graphql-ws write path, which takes each change synchronously (ChangeStream.pull). */
async function takePulled(iterator: AsyncIterator<unknown>, count: number) {
  const stream = iterator as unknown as { pull(ready: () => void): IteratorResult<unknown> | null };
  const values: unknown[] = [];
  while (values.length < count) {
    let ready!: () => void;
    const readyAgain = new Promise<void>((resolve) => (ready = resolve));
    const next = stream.pull(ready);
    if (next === null) await readyAgain;
    else if (next.done) break;
    else values.push(next.value);
  }
  return values;
}

describe('change feed, taken synchronously (pull)', () => {
  it('live changes, put back in cursor order, nothing twice', async () => {
    const { store, pubsub, publishEvents, close } = await feed(10);
    const audits = await pubsub.subscribe('audit', 't');
    const [first, second, third] = [store.commit('t', '1'), store.commit('t', '2'), store.commit('t', '3')];
    publishEvents([first!]);
    publishEvents([third!]);
    publishEvents([second!]);
    publishEvents([store.commit('t', '4')]);
    expect(ids(await takePulled(audits, 4))).toEqual(['1', '2', '3', '4']);
    expect(store.reads).toBe(0);
    await close();
  });

  it('a subscriber over its bound, or resuming with after, is caught up from the store, then live', async () => {
    const { store, pubsub, publishEvents, close } = await feed(3);
    const seen = store.commit('t', 'seen');
    store.commit('t', 'missed');
    const audits = await pubsub.subscribe('audit', 't', { after: seen.cursor });
    for (let i = 0; i < 10; i++) publishEvents([store.commit('t', String(i))]);
    const values = await takePulled(audits, 11);
    expect(ids(values)).toEqual(['missed', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    publishEvents([store.commit('t', 'live')]);
    expect(ids(await takePulled(audits, 1))).toEqual(['live']);
    await close();
  });

  it('a waiting subscriber is told the server is stopping, then the stream is done', async () => {
    const { pubsub, close } = await feed(10);
    const runs = await pubsub.subscribe('run', 't');
    const waiting = takePulled(runs, 2);
    await close();
    expect(await waiting).toMatchObject([{ reason: 'SERVER_STOPPING' }]);
  });
});
