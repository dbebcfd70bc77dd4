import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createPubSubFor } from '../../src/realtime/pubsub.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresAdminUrl, servicesRequired } from '../support/database.js';
import { THREAD_AUDITS, claim, createRun, must, runningRun } from '../support/lifecycle.js';
import { delivered, payloads, subscribeLive, subscribeSse, waitFor, type Stream } from '../support/streams.js';
import { tcpProxy, testRedisUrl } from './support.js';

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

  beforeAll(async () => {
    a = await startTestApp({ REDIS_URL: testRedisUrl! });
    b = await startTestApp({ REDIS_URL: testRedisUrl! }, { databaseUrl: a.config.databaseUrl });
    urlA = await a.app.start(0);
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

  describe('when Redis goes away', () => {
    it('the server does not start if Redis cannot be reached', async () => {
      await expect(createPubSubFor(loadConfig({ REDIS_URL: 'redis://127.0.0.1:1' }))).rejects.toThrow(/Redis cannot be reached/);
    });

    it('subscriptions are interrupted, writes still commit, and new subscriptions work once it is back', async () => {
      const redis = new URL(testRedisUrl!);
      const proxy = await tcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
      const c = await startTestApp({ REDIS_URL: proxy.url('redis') }, { databaseUrl: a.config.databaseUrl });
      try {
        const urlC = await c.app.start(0);
        const { session, owner, threadId } = await runningRun(c);
        await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
        const streams = await subscribeLive(c.app, urlC, 'audit', TOOL_STATUS, { threadId }, owner);

        await proxy.cut();
        for (const stream of streams) {
          expect(await stream.ended()).toEqual({ kind: 'complete' });
          expect(stream.results.at(-1)?.errors?.[0]?.extensions).toMatchObject({
            code: 'SUBSCRIPTION_INTERRUPTED',
            reason: 'PUBSUB_UNAVAILABLE',
          });
        }
        // Writers never wait for Redis, nor fail because of it.
        expect(must(await session.toolStarted('call-1', 'search')).status).toBe('RUNNING');
        const audits = await c.gql(THREAD_AUDITS, { threadId }, owner);
        expect(audits.data.threadAudits.items.map((item: any) => `${item.operationId}:${item.status}`)).toContain('call-1:RUNNING');
        expect((await fetch(new URL('/healthz', urlC))).status).toBe(200);
        // Started during the outage: refused at once, not left silent.
        const during = await subscribeSse(c.app, TOOL_STATUS, { threadId }, owner);
        onTestFinished(() => during.close());
        expect(await during.ended()).toEqual({ kind: 'complete' });
        expect(during.results.map((result) => result.errors?.[0]?.extensions?.code)).toEqual(['SUBSCRIPTION_INTERRUPTED']);

        await proxy.restore();
        // ioredis reconnects on its own; until it has, new subscriptions are refused like the one above.
        let after: Stream | undefined;
        const deadline = Date.now() + 20_000;
        while (!after) {
          const attempt = await subscribeSse(c.app, TOOL_STATUS, { threadId }, owner);
          onTestFinished(() => attempt.close());
          await waitFor(() => attempt.ending !== null || c.app.pubsub.subscriberCount('audit', threadId) === 1, 'a live or refused subscription');
          if (!attempt.ending) after = attempt;
          else if (Date.now() > deadline) throw new Error('no subscription went live after Redis came back');
          else await new Promise((resolve) => setTimeout(resolve, 100));
        }
        must(await session.toolFinished('call-1', { content: 'found' }));
        expect(payloads(await after.take(1), 'toolStatusChanged')).toMatchObject([{ status: 'COMPLETED' }]);
      } finally {
        await c.close();
        await proxy.close();
      }
    });
  });
});
