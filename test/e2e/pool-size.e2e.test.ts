// Issue 43 item 4: "the pool is fixed at 10 connections per instance"; two instances took all 20
// of a server's connections. DATABASE_POOL_SIZE bounds what one instance opens, however many
// requests wait: the rest queue in the pool (agent_audit_db_pool_connections{state="waiting"})
// and are served when connections free. PostgreSQL only; with REQUIRE_SERVICES=1 never skipped.
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

describe.runIf(meaningful)(`DATABASE_POOL_SIZE=${POOL_SIZE} (PostgreSQL, the server process)`, () => {
  it(`opens at most ${POOL_SIZE} connections while ${WRITES} writes wait; the others queue in the pool and all are served`, async () => {
    const server = await startServer(storage(), { DATABASE_POOL_SIZE: String(POOL_SIZE) });
    const admin = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    const locker = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    await Promise.all([admin.connect(), locker.connect()]);
    try {
      const who = await e2eActors();
      const owner = new AuditClient({ url: server.url, token: who.owner });
      const worker = new AuditClient({ url: server.url, token: who.worker });
      const thread = await owner.createThread({ title: 'pool size' });
      const run = await owner.createRun({ threadId: thread.id });
      const lease = await worker.claimRun(run.id, 300);
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const serverConnections = async () =>
        (
          await admin.query<{ count: number }>(
            `SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1)`,
            [lockerPid],
          )
        ).rows[0]!.count;

      // Every write waits for the run's row lock while it holds its connection.
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM run WHERE id = $1 FOR UPDATE', [run.id]);
      const writes = Array.from({ length: WRITES }, async (_, i) => {
        const response = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${who.worker}` },
          body: JSON.stringify({
            query: MODEL_STARTED,
            variables: { input: { lease: { runId: lease.runId, epoch: lease.epoch }, operationId: `m-${i}`, sequence: String(i + 1), model: 'm', observedAt: new Date().toISOString() } },
          }),
        });
        return { status: response.status, body: (await response.json()) as { data?: { recordModelStarted?: { status: string } } } };
      });
      const waiting = async () => {
        const metrics = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
        return Number(/^agent_audit_db_pool_connections\{state="waiting"\} (\d+)/m.exec(metrics)?.[1]);
      };
      // The pool is full and requests queue behind it.
      await eventually(waiting, (queued) => queued >= WRITES - POOL_SIZE, { what: `${WRITES - POOL_SIZE} requests waiting for a connection` });
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) seen.push(await serverConnections());
      expect(Math.max(...seen)).toBe(POOL_SIZE);

      await locker.query('ROLLBACK');
      const answers = await Promise.all(writes);
      expect(answers.map((answer) => answer.status)).toEqual(Array(WRITES).fill(200));
      expect(answers.map((answer) => answer.body.data?.recordModelStarted?.status)).toEqual(Array(WRITES).fill('RUNNING'));
      expect(await serverConnections()).toBeLessThanOrEqual(POOL_SIZE);
      await server.stop();
    } finally {
      await locker.end();
      await admin.end();
    }
  }, 120_000);
});
