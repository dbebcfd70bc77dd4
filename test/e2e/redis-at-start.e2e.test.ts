// A Redis that cannot be reached when the server process starts is an outage that begins at
// start, as one during a run is: the server starts and serves (a rolling deploy or an autoscaler
// must be able to start instances while Redis is away), logs it once, reports
// agent_audit_redis_up 0, reads other instances' changes from the database meanwhile, and joins
// Redis when it appears. The process stops on SIGTERM all the same. It once refused to start
// (`cannot start: REDIS_URL is set but Redis at … cannot be reached`, exit 1).
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp, TEST_JWT_SECRET, type GraphQLResponse } from '../support/app.js';
import { onPostgres, servicesRequired } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { payloads, subscribeWs } from '../support/streams.js';
import { testRedisUrl } from '../subscriptions/support.js';
import { e2eActors, freePort, jsonLines, startServer, storageForFile, type ServerProcess } from './support/server.js';
import { startTcpProxy } from './support/tcp-proxy.js';

const storage = storageForFile();

const outageLines = (server: ServerProcess) => jsonLines(server).filter((line) => /^Redis unreachable/.test(line.msg));

async function redisUp(server: ServerProcess): Promise<number> {
  const text = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
  return Number(/^agent_audit_redis_up (\d+)/m.exec(text)?.[1]);
}

async function post(server: ServerProcess, query: string, variables: Record<string, unknown>, token: string) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as GraphQLResponse;
}

const CREATE_THREAD = `mutation { result: createThread(input: { title: "redis away" }) { id changeCursor } }`;
const CREATE_RUN = `mutation($threadId: ID!) { result: createRun(input: { threadId: $threadId }) { id } }`;
const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;
const CHANGES_AFTER = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status operationId } run { id status } }
}`;

describe('a server process whose Redis cannot be reached at start', () => {
  it('starts and serves queries and subscriptions, logs the outage once naming Redis, reports agent_audit_redis_up 0, and stops on SIGTERM', async () => {
    const closedPort = await freePort();
    const server = await startServer(storage(), { REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    const who = await e2eActors();

    const thread = must(await post(server, CREATE_THREAD, {}, who.owner));
    const stream = subscribeWs(server.url, CHANGES_AFTER, { threadId: thread.id, after: thread.changeCursor }, who.owner);
    onTestFinished(() => stream.close());
    const runId = must(await post(server, CREATE_RUN, { threadId: thread.id }, who.owner)).id;
    const [change] = payloads(await stream.take(1), 'threadChanges');
    expect(change.run).toEqual({ id: runId, status: 'QUEUED' });

    expect(await redisUp(server)).toBe(0);
    // Once, however many times it has tried again since.
    expect(outageLines(server)).toEqual([
      expect.objectContaining({ level: 'warn', redis: `127.0.0.1:${closedPort}`, error: expect.objectContaining({ code: 'ECONNREFUSED' }) }),
    ]);
    expect(jsonLines(server).filter((line) => line.level === 'fatal' || line.level === 'error')).toEqual([]);

    // The reconnecting connections keep nothing alive: a hang would end in the forced exit 1.
    await stream.close();
    expect(await server.stop('SIGTERM')).toBe(0);
  }, 120_000);

  const servicesMissing = [!onPostgres && 'TEST_DATABASE_URL', !testRedisUrl && 'TEST_REDIS_URL'].filter(Boolean).join(' and ');
  it.runIf(!servicesMissing || servicesRequired)(
    'joins Redis when it appears: a change served by another instance reaches its subscriber through Redis (PostgreSQL and Redis)',
    async () => {
      if (servicesMissing) throw new Error(`${servicesMissing} must be set when REQUIRE_SERVICES=1`);
      const real = new URL(testRedisUrl!);
      // Redis, at an address that refuses connections until the proxy listens there.
      const proxy = await startTcpProxy({ host: real.hostname, port: Number(real.port || 6379) });
      onTestFinished(() => proxy.close());
      await proxy.down();
      const prefix = `at-start-${Date.now()}:`;
      const a = await startServer(storage(), { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_PREFIX: prefix, AUTH_JWT_SECRET: TEST_JWT_SECRET });
      const b = await startTestApp({ REDIS_URL: testRedisUrl!, REDIS_PREFIX: prefix }, { databaseUrl: storage().env.DATABASE_URL });
      onTestFinished(() => b.close());

      const { session, owner, threadId } = await runningRun(b);
      const after = (await b.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor;
      const onA = subscribeWs(a.url, CHANGES_AFTER, { threadId, after }, owner);
      onTestFinished(() => onA.close());
      expect(await redisUp(a)).toBe(0);

      // Meanwhile B's changes reach A by the database poll.
      must(await session.modelStarted('while-away'));
      expect(payloads(await onA.take(1), 'threadChanges')[0].audit).toMatchObject({ operationId: 'while-away', status: 'RUNNING' });

      await proxy.up();
      await expect.poll(() => redisUp(a), { timeout: 20_000 }).toBe(1);
      // Logged once its channels are subscribed again, a moment after both connections are up.
      await expect.poll(() => jsonLines(a).filter((line) => line.msg === 'Redis is back')).toHaveLength(1);
      // A listens on the thread's Redis channel (no one else does): B's wake-ups reach it from now on.
      const observer = new Redis(testRedisUrl!);
      onTestFinished(() => void observer.quit());
      const listeners = async () => ((await observer.pubsub('NUMSUB', `${prefix}thread:${threadId}`)) as [string, number])[1];
      await expect.poll(listeners).toBe(1);

      must(await session.modelStarted('after-return'));
      const delivered = payloads(await onA.until((all) => all.length === 2, 'the change after the return'), 'threadChanges');
      expect(delivered[1].audit).toMatchObject({ operationId: 'after-return', status: 'RUNNING' });
      expect(outageLines(a)).toHaveLength(1);

      await onA.close();
      expect(await a.stop('SIGTERM')).toBe(0);
    },
    120_000,
  );
});
