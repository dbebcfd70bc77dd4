import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresAdminUrl, servicesRequired } from '../support/database.js';
import { claim, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { IDLE_VIEW_INTERVAL_MS, type Clock } from '../../src/realtime/activity-feeds.js';
import { delivered, eventually, payloads, subscribeLive, subscribeSse, subscribeWs, waitFor, THREAD_SNAPSHOT, counterOf } from '../support/streams.js';
import { tcpProxy, testRedisUrl } from './support.js';
import { RunEvents, sendBatch } from '../batches/support.js';
import { onLogLine } from '../../src/log.js';

// SEMANTICS.md, "Subscriptions": with REDIS_URL set, a subscriber on one instance receives the
// events of mutations served by another. Two instances share one PostgreSQL database and the
// running Redis. CI's services pass (.ci/run) sets REQUIRE_SERVICES=1: there, a missing one is a failure.

const missing = [!postgresAdminUrl && 'TEST_DATABASE_URL', !testRedisUrl && 'TEST_REDIS_URL'].filter(Boolean).join(' and ');
const title = 'two instances sharing PostgreSQL and Redis';

if (missing && servicesRequired) {
  describe(title, () => {
    it('runs in CI', () => {
      throw new Error(`${missing} must be set when REQUIRE_SERVICES=1: the multi-instance suite cannot be skipped there`);
    });
  });
} else if (missing) {
  console.warn(`Skipping "${title}": set ${missing} (e.g. postgres://postgres@127.0.0.1:5432/postgres, redis://127.0.0.1:6379)`);
}

const TOOL_STATUS = `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id toolCallId status toolCall { status } } }`;
const AUDITS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id operationId status } }`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status error } }`;
const CANCEL = `mutation($runId: ID!) { result: cancelRun(runId: $runId) { id status } }`;

describe.skipIf(Boolean(missing))(missing ? `${title} (skipped: set ${missing})` : title, () => {
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;

  beforeAll(async () => {
    a = await startTestApp({ REDIS_URL: testRedisUrl! });
    b = await startTestApp({ REDIS_URL: testRedisUrl! }, { databaseUrl: a.config.databaseUrl });
    urlA = await a.app.start(0);
    urlB = await b.app.start(0);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('subscribers on instance A receive, in order, the tool changes served by instance B', async () => {
    const { session, owner, threadId } = await runningRun(b);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const streams = await subscribeLive(a.app, urlA, 'audit', TOOL_STATUS, { threadId }, owner);

    must(await session.toolStarted('call-1', 'search'));
    await delivered(streams, 1, 'toolStatusChanged');
    must(await session.toolFinished('call-1', { content: 'found' }));
    for (const events of await delivered(streams, 2, 'toolStatusChanged')) {
      expect(events).toMatchObject([
        { toolCallId: 'call-1', status: 'RUNNING', toolCall: { status: 'RUNNING' } },
        { toolCallId: 'call-1', status: 'COMPLETED', toolCall: { status: 'COMPLETED' } },
      ]);
    }
  });

  it('a batch of large changes served by B reaches A one event per change, as committed (not folded)', async () => {
    const { session, owner, worker, threadId } = await runningRun(b);
    await session.declare('m1', [
      { id: 'big-1', name: 'fetch' },
      { id: 'big-2', name: 'fetch' },
    ]);
    const streams = await subscribeLive(a.app, urlA, 'audit', TOOL_STATUS, { threadId }, owner);
    const events = new RunEvents(session.lease);
    // Each change ~100 kB serialized, the batch ~400 kB: far more than one Redis message held before.
    const page = 'x'.repeat(100_000);
    const batch = await sendBatch(b, worker, [
      events.toolStarted('big-1', 'fetch', { sequence: '10', effectiveInput: { page } }),
      events.toolFinished('big-1', { sequence: '11', output: { content: page, status: 'success' } }),
      events.toolStarted('big-2', 'fetch', { sequence: '12', effectiveInput: { page } }),
      events.toolFinished('big-2', { sequence: '13', output: { content: page, status: 'success' } }),
    ]);
    expect(batch.data?.result.map((result) => result.error)).toEqual([null, null, null, null]);
    for (const received of await delivered(streams, 4, 'toolStatusChanged')) {
      expect(received.map((e: { toolCallId: string; status: string }) => `${e.toolCallId}:${e.status}`)).toEqual([
        'big-1:RUNNING',
        'big-1:COMPLETED',
        'big-2:RUNNING',
        'big-2:COMPLETED',
      ]);
    }
  });

  it("a claim and a cancel served by B reach A's run and audit subscribers", async () => {
    const { owner, worker, threadId } = await runningRun(b);
    const runId = await createRun(b, owner, threadId);
    const runs = await subscribeLive(a.app, urlA, 'run', RUNS, { threadId }, owner);
    const audits = await subscribeLive(a.app, urlA, 'audit', AUDITS, { threadId }, owner);

    const session = await claim(b, worker, runId);
    must(await session.modelStarted('m1'));
    await delivered(audits, 1, 'auditChanged');
    must(await b.gql(CANCEL, { runId }, owner));
    for (const events of await delivered(audits, 2, 'auditChanged')) {
      expect(events.map((e) => `${e.operationId}:${e.status}`)).toEqual(['m1:RUNNING', 'm1:CANCELLED']);
    }
    for (const events of await delivered(runs, 2, 'runChanged')) {
      expect(events.map((e) => e.status)).toEqual(['RUNNING', 'CANCELLED']);
    }
  });

  it('a lease expiry is converged once, whichever instance sweeps it, and every instance hears it once', async () => {
    const { session, owner, threadId, runId } = await runningRun(a);
    const onA = await subscribeLive(a.app, urlA, 'run', RUNS, { threadId }, owner);
    const onB = await subscribeLive(b.app, null, 'run', RUNS, { threadId }, owner);

    must(await session.renew(1)); // both instances sweep every 200 ms
    await delivered([...onA, ...onB], 1, 'runChanged');
    const fence = await createRun(b, owner, threadId);
    for (const events of await delivered([...onA, ...onB], 2, 'runChanged')) {
      expect(events.map((e) => `${e.id === runId ? 'expired' : 'fence'}:${e.status}:${e.error?.code ?? ''}`)).toEqual([
        'expired:FAILED:LEASE_EXPIRED',
        `fence:QUEUED:`,
      ]);
      expect(events[1].id).toBe(fence);
    }
  });

  it('a threadChanges subscriber on A resumes on B with its last cursor: every change once, in order', async () => {
    const { session, owner, threadId } = await runningRun(b);
    const before = (await a.gql(THREAD_SNAPSHOT, { threadId }, owner)).data;
    const variables = { threadId, after: before.threadAudits.cursor };
    const onA = subscribeWs(urlA, CHANGES_AFTER, variables, owner);
    onTestFinished(() => onA.close());
    // SSE (over HTTP) on A stays live throughout: it sees every change, each once.
    const sseOnA = await subscribeSse(urlA, CHANGES_AFTER, variables, owner);
    onTestFinished(() => sseOnA.close());
    await waitFor(() => a.app.pubsub.subscriberCount('changes', threadId) === 2, 'the subscriptions to start');

    // Served by B. Each stream on A starts by reading the changes after `before` (catch-up, which
    // may fold an entity's changes into one): the model call's start, its audit's only change so
    // far, comes whole whether that read or Redis brings it, and once it is there the read is
    // over, so its end arrives live, as committed.
    must(await session.modelStarted('m1'));
    await Promise.all([onA, sseOnA].map((stream) => stream.take(1)));
    must(await session.modelFinished('m1', [{ id: 'call-1', name: 'search' }]));
    const first = payloads(await onA.take(2), 'threadChanges');
    await onA.close();
    must(await session.toolStarted('call-1', 'search')); // while no one listens on B: caught up from the database
    const resumed = await subscribeSse(urlB, CHANGES_AFTER, { threadId, after: first.at(-1).cursor }, owner);
    onTestFinished(() => resumed.close());
    // Caught up with the start before the finish commits (a later read would fold the two).
    expect(payloads(await resumed.take(1), 'threadChanges')[0].audit).toMatchObject({ status: 'RUNNING' });
    must(await session.toolFinished('call-1', { content: 'found' }));
    must(await session.finish('COMPLETED'));

    const final = (await a.gql(THREAD_SNAPSHOT, { threadId }, owner)).data;
    const finalCursor = final.thread.changeCursor as string;
    const reachedFinal = (all: { data?: any }[]) => all.at(-1)?.data?.threadChanges?.cursor === finalCursor;
    const rest = payloads(await resumed.until(reachedFinal, 'the final cursor'), 'threadChanges');
    const live = payloads(await sseOnA.until(reachedFinal, 'the final cursor'), 'threadChanges');
    // Every change after the read, once, in the thread's order: consecutive counters up to the final one.
    const expected = range(counterOf(before.threadAudits.cursor) + 1n, counterOf(finalCursor));
    expect([...first, ...rest].map((change) => counterOf(change.cursor))).toEqual(expected);
    expect(live.map((change) => counterOf(change.cursor))).toEqual(expected);
    for (const changes of [[...first, ...rest], live]) expect(applied(before, changes)).toEqual(applied(final, []));
  });

  describe('when Redis goes away', () => {
    it('killed and restarted: writes commit, no stream ends, old and new subscriptions hear Redis again once it is back', async () => {
      const { redis, c, d, urlC } = await twoInstancesOnPrivateRedis('outage', a.config.databaseUrl);
      const { session, owner, threadId } = await runningRun(d);
      const before = [
        subscribeWs(urlC, CHANGES, { threadId }, owner),
        await subscribeSse(c.app, CHANGES, { threadId }, owner),
      ];
      for (const stream of before) onTestFinished(() => stream.close());
      await waitFor(() => c.app.pubsub.subscriberCount('changes', threadId) === 2, 'the subscriptions to start');
      // /metrics tells whether Redis is up (issue 43 item 9); /readyz does not ask it, by design.
      const redisUp = async () => {
        const text = await (await fetch(urlC.replace(/\/graphql$/, '/metrics'))).text();
        return Number(/^agent_audit_redis_up (\d+)/m.exec(text)?.[1]);
      };
      const readyz = async () => (await fetch(urlC.replace(/\/graphql$/, '/readyz'))).status;
      expect(await redisUp()).toBe(1);

      await redis.kill();
      await expect.poll(redisUp).toBe(0);
      expect(await readyz()).toBe(200);
      // Writers never wait for Redis, nor fail because of it; a subscription started now is accepted.
      await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
      const during = subscribeWs(urlC, CHANGES, { threadId }, owner);
      onTestFinished(() => during.close());
      must(await session.toolStarted('call-1', 'search'));
      must(await session.toolFinished('call-1', { content: 'found' }));
      await redis.start();
      await expect.poll(redisUp, { timeout: 30_000 }).toBe(1);
      // What makes the return quick ("within 5 s", SEMANTICS.md): C subscribes the thread's channel
      // again, so the next change comes through Redis, not the safety-net poll; the recovery's read
      // of the database at once, without the poll's grace, is test/subscriptions/pubsub.unit's.
      const listed = new Redis(redis.url);
      onTestFinished(() => void listed.quit());
      await expect.poll(() => listed.pubsub('CHANNELS', `*thread:${threadId}`), { timeout: 30_000 }).toHaveLength(1);
      must(await session.finish('COMPLETED'));
      const final = (await c.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor;
      const streams = [...before, during];
      await Promise.all(
        streams.map((stream) => stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', 30_000)),
      );
      for (const stream of streams) {
        expect(stream.ending).toBeNull();
        const changes = payloads(stream.results, 'threadChanges');
        expect(new Set(changes.map((change) => change.cursor)).size).toBe(changes.length);
        expect(changes.at(-1).run).toMatchObject({ status: 'COMPLETED' });
      }
    }, 120_000); // bounds of 30 s each: only a hang fails, not a slow machine

    it('agent_audit_redis_up is 1 again only once the thread channels are subscribed again, not when the connections are', async () => {
      const redis = await privateRedis();
      onTestFinished(() => redis.stop());
      const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(redis.url).port) });
      onTestFinished(() => proxy.close());
      const c = await startTestApp({ REDIS_URL: proxy.url('redis'), REDIS_PREFIX: `resubscribe-${Date.now()}:` }, { databaseUrl: a.config.databaseUrl });
      onTestFinished(async () => {
        proxy.release();
        await c.close();
      });
      const urlC = await c.app.start(0);
      const redisUp = async () => Number(/^agent_audit_redis_up (\d+)/m.exec(await (await fetch(urlC.replace(/\/graphql$/, '/metrics'))).text())?.[1]);
      const { session, owner, threadId } = await runningRun(c);
      const stream = subscribeWs(urlC, CHANGES, { threadId }, owner);
      onTestFinished(() => stream.close());
      await waitFor(() => c.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
      expect(await redisUp()).toBe(1);

      await redis.kill();
      await expect.poll(redisUp).toBe(0);
      must(await session.modelStarted('m1')); // its wake-up is sent again once C's publisher is back
      await proxy.cut();
      await redis.start();
      const listener = new Redis(redis.url);
      onTestFinished(() => listener.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      const wakeUps: string[] = [];
      listener.on('pmessage', (_pattern: string, channel: string) => void wakeUps.push(channel));
      await listener.psubscribe(`*thread:${threadId}`);
      const admin = new Redis(redis.url);
      onTestFinished(() => admin.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      const subscribers = async () => ((await admin.pubsub('NUMSUB', wakeUps[0]!)) as [string, number])[1];
      // C's connections come back, and its subscriber's SUBSCRIBE of the thread channels is slow to reach Redis.
      proxy.hold(/\r\nsubscribe\r\n(\$\d+\r\n[^\r]*\r\n)*\$\d+\r\n[^\r]*thread:/i);
      await proxy.restore();
      await waitFor(() => wakeUps.length > 0 && proxy.holdingConnections() === 1, "C's publisher back (its wake-up sent again) and its subscriber's SUBSCRIBE on the way");
      expect(await subscribers()).toBe(0);
      expect(await redisUp()).toBe(0);

      proxy.release();
      await expect.poll(redisUp, { timeout: 30_000 }).toBe(1);
      expect(await subscribers()).toBe(1);
    }, 120_000);

    it("a deletion and a tool change served by D while C's signal channels are not yet subscribed again reach C's subscribers once they are; redis_up reads 0 until then", async () => {
      const prefix = `signals-${Date.now()}:`;
      const { redis, proxy, urlWatcher: urlC, writer: d, urlWriter: urlD, session, owner, doomed, changes, dashboard } = await watchedAcross(
        a.config.databaseUrl,
        prefix,
        'watcher',
      );
      expect(await redisUp(urlC)).toBe(1);

      await redis.kill();
      await expect.poll(() => redisUp(urlC)).toBe(0);
      await proxy.cut();
      await redis.start();
      await expect.poll(() => redisUp(urlD), { timeout: 30_000 }).toBe(1);
      // C's connections come back; its signal channels' SUBSCRIBEs are slow to reach Redis, its thread channels' are not.
      proxy.hold(/\r\nsubscribe\r\n\$\d+\r\n[^\r]*(thread-deleted|tool-activity)\r\n/i);
      await proxy.restore();
      const admin = new Redis(redis.url);
      onTestFinished(() => admin.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      await expect.poll(async () => proxy.holdingConnections() === 2 && (await admin.pubsub('NUMSUB', `${prefix}thread:${doomed}`))[1] === 1, { timeout: 30_000 }).toBe(true);
      expect(await redisUp(urlC)).toBe(0);

      // Signals C does not hear: D's reach Redis, where C's signal channels have no subscriber yet.
      const signals = await signalsOn(redis.url, prefix);
      must(await session.toolFinished('call-1', { content: 'ok', status: 'success' }));
      await waitFor(() => signals.includes('tool-activity'), "D's tool-activity signal on Redis");
      must(await d.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: doomed }, owner));
      await waitFor(() => signals.includes('thread-deleted'), "D's deletion signal on Redis");
      proxy.release();
      await expect.poll(() => redisUp(urlC), { timeout: 30_000 }).toBe(1);
      expect((await changes.ended(30_000)) && changes.results.at(-1)!.errors?.[0]?.extensions).toEqual({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'THREAD_DELETED' });
      // The finished call is in a view read once the channel is subscribed again (no idle view comes, and C's poll rests while Redis is healthy).
      await dashboard.until((all) => all.at(-1)?.data?.toolActivity.runningCount === 0, 'a view without the finished call', 30_000);
    }, 120_000);

    it('a SUBSCRIBE that Redis refuses on a connection that stays up is tried again: redis_up reads 0 until every channel is subscribed', async () => {
      const redis = await privateRedis();
      onTestFinished(() => redis.stop());
      const admin = new Redis(redis.url);
      onTestFinished(() => admin.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      // A user that may do anything but SUBSCRIBE, until the operator grants it.
      await admin.call('ACL', 'SETUSER', 'audit', 'on', '>secret', '~*', '&*', '+@all', '-subscribe');
      const prefix = `refused-${Date.now()}:`;
      const url = new URL(redis.url);
      [url.username, url.password] = ['audit', 'secret'];
      const warnings: { msg: string; redis?: string; error?: { message: string } }[] = [];
      onTestFinished(onLogLine((line) => void (line.includes('"level":"warn"') && warnings.push(JSON.parse(line)))));
      const infos: { msg: string; redis?: string }[] = [];
      onTestFinished(onLogLine((line) => void (line.includes('"level":"info"') && infos.push(JSON.parse(line)))));
      const c = await startTestApp({ REDIS_URL: url.toString(), REDIS_PREFIX: prefix }, { databaseUrl: a.config.databaseUrl });
      onTestFinished(() => c.close());
      const urlC = await c.app.start(0);
      const { owner, threadId } = await runningRun(c);
      const stream = subscribeWs(urlC, CHANGES, { threadId }, owner);
      onTestFinished(() => stream.close());
      await waitFor(() => c.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
      const channels = [`${prefix}thread:${threadId}`, `${prefix}thread-deleted`, `${prefix}tool-activity`];
      const subscribers = async () => ((await admin.pubsub('NUMSUB', ...channels)) as unknown[]).filter((_, i) => i % 2 === 1);
      const connections = async () => ((await admin.call('CLIENT', 'LIST')) as string).split('\n').filter((line) => / name=audit-/.test(line)).map((line) => /^id=(\d+)/.exec(line)![1]).sort();
      const before = await connections();
      expect(before).toHaveLength(6);
      expect(await subscribers()).toEqual([0, 0, 0]);
      expect(await redisUp(urlC)).toBe(0);
      // The operator reads what happened: Redis answered, and refused; it is not unreachable. One
      // line for the one refusal, though three connections (the bus's and two signals') met it.
      const outage = warnings.filter((line) => /redis/i.test(line.msg));
      expect(outage.map((line) => [line.redis, line.msg])).toEqual([
        [`127.0.0.1:${url.port}`, 'Redis refused SUBSCRIBE; subscribers read changes from the database until it accepts it'],
      ]);
      expect(outage[0]!.error).toEqual({ message: expect.stringMatching(/^NOPERM /) }); // Redis' answer, no stack of ours

      await admin.call('ACL', 'SETUSER', 'audit', '+subscribe');
      await expect.poll(() => redisUp(urlC), { timeout: 30_000 }).toBe(1);
      expect(await subscribers()).toEqual([1, 1, 1]);
      expect(await connections()).toEqual(before);
      // Redis never went away: the end of the outage says what ended.
      expect(infos.filter((line) => line.redis === `127.0.0.1:${url.port}`).map((line) => line.msg)).toEqual(['Redis accepts SUBSCRIBE again']);
    }, 120_000);

    it("a PUBLISH that Redis refuses on a connection that stays up is sent again once it accepts it, logged once per channel when refused and once when accepted", async () => {
      const prefix = `refused-publish-${Date.now()}:`;
      const { redis, proxy, urlWatcher: urlD, writer: c, urlWriter: urlC, session, owner, dashboard } = await watchedAcross(a.config.databaseUrl, prefix, 'writer', {
        user: USER,
      });
      const admin = new Redis(redis.url);
      onTestFinished(() => admin.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      const logged: { level: string; msg: string; channel?: string; redis?: string; error?: { message: string } }[] = [];
      onTestFinished(onLogLine((line) => void (/PUBLISH|Redis/.test(line) && logged.push(JSON.parse(line)))));
      const signals = await signalsOn(redis.url, prefix);

      // The operator takes PUBLISH away from C's user; C's connections stay up.
      await admin.call('ACL', 'SETUSER', USER.name, '-publish');
      must(await session.toolFinished('call-1', { content: 'ok', status: 'success' }));
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toMatchObject({ 'wake-up': 1, 'tool-activity': 1 });
      must(await c.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: await createThread(c, owner, 'another') }, owner));
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toMatchObject({ deletion: 1 });
      const refusals = () => logged.filter((line) => line.msg.startsWith('Redis refused PUBLISH'));
      const channels = [`${prefix}thread:`, `${prefix}thread-deleted`, `${prefix}tool-activity`].sort();
      // Tried again meanwhile (every 1 s, then 2 s, 4 s…): one line per channel all the same, naming Redis' answer.
      await expect.poll(() => refusals().map((line) => line.channel!.replace(/thread:.*/, 'thread:')).sort(), { timeout: 30_000 }).toEqual(channels);
      for (const line of refusals()) expect(line).toMatchObject({ level: 'warn', redis: `127.0.0.1:${proxy.port}`, error: { message: expect.stringMatching(/^NOPERM /) } });
      expect(signals).toEqual([]);
      expect(await redisUp(urlD)).toBe(1);

      await admin.call('ACL', 'SETUSER', USER.name, '+publish');
      // D's Redis was healthy throughout: its poll rests and no idle view comes; only C's signal, sent again, brings the view.
      await dashboard.until((all) => all.at(-1)?.data?.toolActivity.runningCount === 0, 'a view without the finished call', 30_000);
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toEqual({ 'wake-up': 0, deletion: 0, 'tool-activity': 0 });
      expect([...new Set(signals)].sort()).toEqual(['thread-deleted', 'tool-activity']);
      const accepted = logged.filter((line) => line.msg === 'Redis accepts PUBLISH again');
      expect(accepted.map((line) => line.channel!.replace(/thread:.*/, 'thread:')).sort()).toEqual(channels);
      expect(refusals()).toHaveLength(3);
      // Redis never went away.
      expect(logged.filter((line) => /unreachable|is back/.test(line.msg))).toEqual([]);
    }, 120_000);

    it('signals held while Redis is away are bounded: past the limit one "everything changed" is held instead, which the other instance reads as a recovery', async () => {
      const prefix = `bounded-${Date.now()}:`;
      const { redis, proxy, writer: c, urlWriter: urlC, session, owner, dashboard } = await watchedAcross(a.config.databaseUrl, prefix, 'writer', {
        maxUnsentSignals: 2,
      });
      const signals = await signalsOn(redis.url, prefix);
      expect(await unsentSignals(urlC)).toEqual({ 'wake-up': 0, deletion: 0, 'tool-activity': 0 });

      await proxy.cut();
      await expect.poll(() => redisUp(urlC)).toBe(0);
      must(await session.toolFinished('call-1', { content: 'ok', status: 'success' }));
      const deleteThread = async (ownerOf: string) =>
        must(await c.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: await createThread(c, ownerOf, 'doomed') }, ownerOf));
      await deleteThread(owner);
      // Each thread and owner changed while Redis is away is held, up to the limit.
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toEqual({ 'wake-up': 1, deletion: 1, 'tool-activity': 1 });
      for (let i = 0; i < 3; i++) {
        const other = await runningRun(c);
        await other.session.declare('m1', [{ id: 'call-1', name: 'kept' }]);
        must(await other.session.toolStarted('call-1', 'kept'));
        await deleteThread(other.owner);
      }
      // Four threads and owners of each kind: past the limit, one "everything changed" each.
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toEqual({ 'wake-up': 1, deletion: 1, 'tool-activity': 1 });

      await proxy.restore();
      await expect.poll(() => signals, { timeout: 30_000 }).toEqual(['everything-changed', 'everything-changed', 'everything-changed']);
      // D's Redis was healthy throughout: its poll rests and no idle view comes; "everything changed" brings the view.
      await dashboard.until((all) => all.at(-1)?.data?.toolActivity.runningCount === 0, 'a view without the finished call', 30_000);
      await expect.poll(() => unsentSignals(urlC), { timeout: 30_000 }).toEqual({ 'wake-up': 0, deletion: 0, 'tool-activity': 0 });
    }, 120_000);

    it('runChanged read back from the database while Redis is down sends status changes only, not lease renewals', async () => {
      const { redis, c, d, urlC } = await twoInstancesOnPrivateRedis('renewals', a.config.databaseUrl);
      const { session, owner, threadId } = await runningRun(d);
      const runs = subscribeWs(urlC, RUNS, { threadId }, owner);
      const changes = subscribeWs(urlC, CHANGES, { threadId }, owner);
      for (const stream of [runs, changes]) onTestFinished(() => stream.close());
      await waitFor(() => c.app.pubsub.subscriberCount('run', threadId) === 1 && c.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscriptions to start');

      await redis.kill();
      must(await session.renew(60));
      const renewed = (await c.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor;
      await changes.until((all) => all.at(-1)?.data?.threadChanges?.cursor === renewed, 'the renewal, read back from the database', 20_000);
      must(await session.finish('COMPLETED'));
      const statuses = payloads(await runs.until((all) => all.at(-1)?.data?.runChanged?.status === 'COMPLETED', 'the run to end', 20_000), 'runChanged');
      expect(statuses.map((run) => run.status)).toEqual(['COMPLETED']);
    });

    it("an instance whose publish fails loses nothing for the other instance's subscribers", async () => {
      const redis = new URL(testRedisUrl!);
      const proxy = await tcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
      onTestFinished(() => proxy.close());
      const c = await startTestApp({ REDIS_URL: proxy.url('redis') }, { databaseUrl: a.config.databaseUrl });
      onTestFinished(() => c.close());
      const { session, owner, threadId } = await runningRun(c);
      const onA = subscribeWs(urlA, CHANGES, { threadId }, owner);
      onTestFinished(() => onA.close());
      await waitFor(() => a.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');

      // C's connections to Redis drop: its publishes fail; A's Redis is healthy and hears nothing.
      await proxy.cut();
      await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
      must(await session.toolStarted('call-1', 'search'));
      const final = (await a.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor;
      const changes = payloads(await onA.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', 20_000), 'threadChanges');
      expect(changes.at(-1).audit).toMatchObject({ status: 'RUNNING' });
      await proxy.restore();
    });

    it("an instance whose deletion and tool-activity signals fail to publish sends them once Redis is back: the other instance's dashboards show the change", async () => {
      const prefix = `unsent-signals-${Date.now()}:`;
      const { redis, proxy, writer: c, urlWriter: urlC, urlWatcher: urlD, session, owner, doomed, changes, dashboard } = await watchedAcross(
        a.config.databaseUrl,
        prefix,
        'writer',
      );
      const signals = await signalsOn(redis.url, prefix);

      // C's connections to Redis drop: its signals fail to publish; D's Redis stays healthy.
      await proxy.cut();
      await expect.poll(() => redisUp(urlC)).toBe(0);
      must(await session.toolFinished('call-1', { content: 'ok', status: 'success' }));
      must(await c.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: doomed }, owner));
      // D's poll of its subscribed threads finds the deleted one gone (docs/deletion.md).
      expect((await changes.ended(30_000)) && changes.results.at(-1)!.errors?.[0]?.extensions).toEqual({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'THREAD_DELETED' });
      expect(signals).toEqual([]);

      await proxy.restore();
      await expect.poll(() => [...new Set(signals)].sort(), { timeout: 30_000 }).toEqual(['thread-deleted', 'tool-activity']);
      // D's Redis was healthy throughout: its poll rests and no idle view comes; only C's signal brings the view.
      await dashboard.until((all) => all.at(-1)?.data?.toolActivity.runningCount === 0, 'a view without the finished call', 30_000);
      expect(await redisUp(urlD)).toBe(1);
    }, 120_000);

    it('a message on a thread channel naming another thread is dropped and logged', async () => {
      const { session, owner, threadId } = await runningRun(a);
      const other = await runningRun(a);
      const stream = subscribeWs(urlA, CHANGES, { threadId }, owner);
      onTestFinished(() => stream.close());
      await waitFor(() => a.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
      const dropped: string[] = [];
      onTestFinished(onLogLine((line) => void (line.includes('dropped a Redis message') && dropped.push(line))));

      // Another thread's real change, forged onto this thread's channel.
      const forged = must(await other.session.modelStarted('m-other'));
      const publisher = new Redis(testRedisUrl!);
      onTestFinished(() => publisher.quit().then(() => {}, () => {})); // awaited: before its Redis stops
      const row = { id: forged.id, threadId: other.threadId, changeCursor: '999', changedAt: new Date().toISOString(), role: 'ASSISTANT' };
      await publisher.publish(`audit:thread:${threadId}`, JSON.stringify({ origin: 'x', threadId: other.threadId, cursor: '999', changes: [{ kind: 'audit', row }] }));
      await publisher.publish(`audit:thread:${threadId}`, JSON.stringify({ origin: 'x', threadId, cursor: '1', changes: [{ kind: 'audit', row }] }));
      await waitFor(() => dropped.length >= 2, 'both forged messages to be dropped');

      must(await session.modelStarted('m-mine'));
      const [change] = payloads(await stream.take(1), 'threadChanges');
      expect(change.audit).toMatchObject({ status: 'RUNNING' });
      expect(change.audit.id).not.toBe(forged.id);
    });
  });
});

const CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id status } run { id status } } }`;
const LIVE_RUNNING = `subscription { toolActivity { runningCount } }`;
const redisUp = async (url: string) => Number(/^agent_audit_redis_up (\d+)/m.exec(await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text())?.[1]);
/** agent_audit_redis_unsent_signals, by signal. */
const unsentSignals = async (url: string) => {
  const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
  return Object.fromEntries([...text.matchAll(/^agent_audit_redis_unsent_signals\{signal="([^"]+)"\} (\d+)/gm)].map(([, signal, count]) => [signal, Number(count)]));
};
/** The ACL user the instance whose PUBLISH is refused connects as: made by watchedAcross, deleted after. */
const USER = { name: 'wt-redisbound-publisher', password: 'secret' };

/** A dashboard clock whose idle views never come: only a change told to the instance brings a view. */
const withoutIdleViews: Clock = {
  now: () => Date.now(),
  at(atMs, fn) {
    if (atMs - Date.now() >= IDLE_VIEW_INTERVAL_MS / 2) return () => {};
    const timer = setTimeout(fn, Math.max(0, atMs - Date.now()));
    return () => clearTimeout(timer);
  },
};
const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;
const CHANGES_AFTER = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status } run { id status } }
}`;

/** A dashboard's view: the snapshot's runs and audits, then each change applied by id. */
function applied(snapshot: any, changes: any[]): Map<string, string> {
  const view = new Map<string, string>();
  for (const entity of [...snapshot.thread.runs, ...snapshot.threadAudits.items, ...changes.map((change) => change.audit ?? change.run)]) {
    view.set(entity.id, entity.status);
  }
  return view;
}
const range = (from: bigint, to: bigint) => Array.from({ length: Number(to - from + 1n) }, (_, i) => from + BigInt(i));

/**
 * Two instances on `databaseUrl` sharing a Redis of their own, one of them (`proxied`) through a
 * proxy the test may cut. The watcher, without idle views (a dashboard there reads a new view only
 * when told of a change), has a dashboard of `owner`, whose call `call-1` runs through the writer,
 * and a threadChanges subscription to the owner's thread `doomed`.
 */
async function watchedAcross(
  databaseUrl: string | undefined,
  prefix: string,
  proxied: 'watcher' | 'writer',
  { maxUnsentSignals, user }: { maxUnsentSignals?: number; user?: { name: string; password: string } } = {},
) {
  const redis = await privateRedis();
  onTestFinished(() => redis.stop());
  const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(redis.url).port) });
  onTestFinished(() => proxy.close());
  const proxiedUrl = new URL(proxy.url('redis'));
  if (user) {
    const admin = new Redis(redis.url);
    await admin.call('ACL', 'SETUSER', user.name, 'on', `>${user.password}`, '~*', '&*', '+@all');
    onTestFinished(async () => {
      await admin.call('ACL', 'DELUSER', user.name);
      await admin.quit();
    });
    [proxiedUrl.username, proxiedUrl.password] = [user.name, user.password];
  }
  const env = (role: typeof proxied) => ({ REDIS_URL: role === proxied ? proxiedUrl.toString() : redis.url, REDIS_PREFIX: prefix });
  const watcher = await startTestApp(env('watcher'), { databaseUrl, activityClock: withoutIdleViews, ...(proxied === 'watcher' && { maxUnsentSignals }) });
  const writer = await startTestApp(env('writer'), { databaseUrl, ...(proxied === 'writer' && { maxUnsentSignals }) });
  for (const app of [watcher, writer]) {
    onTestFinished(async () => {
      proxy.release();
      await app.close();
    });
  }
  const [urlWatcher, urlWriter] = [await watcher.app.start(0), await writer.app.start(0)];
  const { session, owner } = await runningRun(writer);
  await session.declare('m1', [{ id: 'call-1', name: 'kept' }]);
  must(await session.toolStarted('call-1', 'kept'));
  const doomed = await createThread(writer, owner, 'doomed');
  const changes = subscribeWs(urlWatcher, CHANGES, { threadId: doomed }, owner);
  const dashboard = subscribeWs(urlWatcher, LIVE_RUNNING, {}, owner);
  for (const stream of [changes, dashboard]) onTestFinished(() => stream.close());
  await waitFor(() => watcher.app.pubsub.subscriberCount('changes', doomed) === 1, 'the subscription to start');
  await dashboard.until((all) => all.some((result) => result.data?.toolActivity.runningCount === 1), 'the first view');
  return { redis, proxy, watcher, urlWatcher, writer, urlWriter, session, owner, doomed, changes, dashboard };
}

/** The channels (without `prefix`) of the deletion, tool-activity and "everything changed" signals that reach Redis from now on. */
async function signalsOn(redisUrl: string, prefix: string) {
  const signals: string[] = [];
  const listener = new Redis(redisUrl);
  onTestFinished(() => listener.quit().then(() => {}, () => {})); // awaited: before its Redis stops
  listener.on('message', (channel: string) => void signals.push(channel.slice(prefix.length)));
  await listener.subscribe(`${prefix}tool-activity`, `${prefix}thread-deleted`, `${prefix}everything-changed`);
  return signals;
}

/** A redis-server of the test's own on a free port, which the test may kill and start again. */
/** Two instances on `databaseUrl` sharing a Redis of their own (to kill): c listening, d in process. */
async function twoInstancesOnPrivateRedis(prefix: string, databaseUrl: string | undefined) {
  const redis = await privateRedis();
  onTestFinished(() => redis.stop());
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `${prefix}-${Date.now()}:` };
  const c = await startTestApp(env, { databaseUrl });
  onTestFinished(() => c.close());
  const d = await startTestApp(env, { databaseUrl });
  onTestFinished(() => d.close());
  return { redis, c, d, urlC: await c.app.start(0) };
}

async function privateRedis() {
  const port = await new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await eventually(
      () => new Promise<boolean>((resolve) => net.connect(port, '127.0.0.1').on('connect', function (this: net.Socket) { this.destroy(); resolve(true); }).on('error', () => resolve(false))),
      (up) => up,
      { what: 'redis-server to listen' },
    );
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async kill() {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child!.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) await this.kill();
    },
  };
}
