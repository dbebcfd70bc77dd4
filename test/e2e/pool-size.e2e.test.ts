// Issue 43 item 4: "the pool is fixed at 10 connections per instance"; two instances took all 20
// of a server's connections. DATABASE_POOL_SIZE bounds what one instance opens, however many
// requests wait: the rest queue in the pool (agent_audit_db_pool_connections{state="waiting"})
// and are served when connections free. Lifecycle mutations sent alone take at most half of it
// (src/domain/lifecycle-events.ts): the others wait in the server and go together. PostgreSQL
// only; with REQUIRE_SERVICES=1 never skipped.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { postgresSuiteRuns } from '../support/database.js';
import { eventually } from '../support/streams.js';
import { e2eActors, startServer, storageForFile } from './support/server.js';

const meaningful = postgresSuiteRuns('pool-size.e2e.test.ts');
const POOL_SIZE = 3;
const WRITES = 8;

const storage = storageForFile({ runs: meaningful, postgresOnly: true });

const MODEL_STARTED = `mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { status } }`;
/** A batch of one event: its own call of the database, on a connection of its own. */
const RECORD_EVENTS = `mutation($events: [LifecycleEventInput!]!) { recordEvents(events: $events) { error { code } audit { status } } }`;

async function running(url: string) {
  const who = await e2eActors();
  const owner = new AuditClient({ url, token: who.owner });
  const worker = new AuditClient({ url, token: who.worker });
  const thread = await owner.createThread({ title: 'pool size' });
  const run = await owner.createRun({ threadId: thread.id });
  return { who, run, lease: await worker.claimRun(run.id, 300) };
}

const modelStarted = (lease: { runId: string; epoch: number }, i: number) => ({
  lease: { runId: lease.runId, epoch: lease.epoch },
  operationId: `m-${i}`,
  sequence: String(i + 1),
  model: 'm',
  observedAt: new Date().toISOString(),
});

async function post(url: string, token: string, query: string, variables: Record<string, unknown>) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as { data?: any } };
}

/**
 * A server with a pool of POOL_SIZE and a running run whose row lock another session holds, so
 * that every write of the run waits inside its transaction, holding its connection.
 */
async function withLockedRun(test: (scene: Awaited<ReturnType<typeof running>> & { url: string; serverConnections: () => Promise<number>; lockWaiters: () => Promise<number>; poolWaiting: () => Promise<number>; release: () => Promise<void> }) => Promise<void>) {
  const server = await startServer(storage(), { DATABASE_POOL_SIZE: String(POOL_SIZE) });
  const admin = new pg.Client({ connectionString: storage().env.DATABASE_URL });
  const locker = new pg.Client({ connectionString: storage().env.DATABASE_URL });
  await Promise.all([admin.connect(), locker.connect()]);
  try {
    const scene = await running(server.url);
    const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const countBackends = async (condition: string) =>
      (
        await admin.query<{ count: number }>(
          `SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1) AND ${condition}`,
          [lockerPid],
        )
      ).rows[0]!.count;
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM run WHERE id = $1 FOR UPDATE', [scene.run.id]);
    await test({
      ...scene,
      url: server.url,
      serverConnections: () => countBackends('true'),
      lockWaiters: () => countBackends(`wait_event_type = 'Lock'`),
      poolWaiting: async () => {
        const metrics = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
        return Number(/^agent_audit_db_pool_connections\{state="waiting"\} (\d+)/m.exec(metrics)?.[1]);
      },
      release: async () => void (await locker.query('ROLLBACK')),
    });
    await server.stop();
  } finally {
    await locker.end();
    await admin.end();
  }
}

describe.runIf(meaningful)(`DATABASE_POOL_SIZE=${POOL_SIZE} (PostgreSQL, the server process)`, () => {
  it(`opens at most ${POOL_SIZE} connections while ${WRITES} writes wait; the others queue in the pool and all are served`, async () => {
    await withLockedRun(async ({ url, who, lease, serverConnections, poolWaiting, release }) => {
      const writes = Array.from({ length: WRITES }, (_, i) => post(url, who.worker, RECORD_EVENTS, { events: [{ modelStarted: modelStarted(lease, i) }] }));
      // The pool is full and requests queue behind it.
      await eventually(poolWaiting, (queued) => queued >= WRITES - POOL_SIZE, { what: `${WRITES - POOL_SIZE} requests waiting for a connection` });
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) seen.push(await serverConnections());
      expect(Math.max(...seen)).toBe(POOL_SIZE);

      await release();
      const answers = await Promise.all(writes);
      expect(answers.map((answer) => answer.status)).toEqual(Array(WRITES).fill(200));
      expect(answers.map((answer) => answer.body.data?.recordEvents)).toEqual(Array(WRITES).fill([{ error: null, audit: { status: 'RUNNING' } }]));
      expect(await serverConnections()).toBeLessThanOrEqual(POOL_SIZE);
    });
  }, 120_000);

  const half = Math.ceil(POOL_SIZE / 2);
  it(`lets lifecycle mutations sent alone hold at most ${half} of them; the others wait in the server, not in the pool, and all are served`, async () => {
    await withLockedRun(async ({ url, who, lease, lockWaiters, poolWaiting, release }) => {
      const writes = Array.from({ length: WRITES }, (_, i) => post(url, who.worker, MODEL_STARTED, { input: modelStarted(lease, i) }));
      await eventually(lockWaiters, (waiting) => waiting === half, { what: `${half} writes waiting for the lock` });
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) seen.push(await lockWaiters());
      expect(Math.max(...seen)).toBe(half);
      expect(await poolWaiting()).toBe(0);

      await release();
      const answers = await Promise.all(writes);
      expect(answers.map((answer) => answer.status)).toEqual(Array(WRITES).fill(200));
      expect(answers.map((answer) => answer.body.data?.recordModelStarted?.status)).toEqual(Array(WRITES).fill('RUNNING'));
    });
  }, 120_000);
});
