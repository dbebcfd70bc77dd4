// A dropped database connection (pg_terminate_backend, a failover) fails the requests that were
// using it as UNAVAILABLE (HTTP 503 with Retry-After), safe to resend, and nothing else: the process stays up, the pool
// reconnects, and the same requests succeed when sent again. Only PostgreSQL has connections to
// drop; with REQUIRE_SERVICES=1 a missing one is a failure, never a skip.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';
import { e2eActors, serverForFile } from './support/server.js';
import { eventually } from '../support/streams.js';

/** Half the default pool of 10: the most lifecycle mutations sent alone that hold a connection at once. */
const IN_FLIGHT = 5;
const meaningful = postgresSuiteRuns('the dropped-connection suite');

let server: ReturnType<typeof serverForFile>;
/** Watches and terminates the server's backends. */
let admin: pg.Client;
/** Holds the run's row lock. */
let locker: pg.Client;

const MODEL_STARTED = `mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id status } }`;

async function post(token: string, query: string, variables: Record<string, unknown>) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
  return { ...body, status: response.status, retryAfter: response.headers.get('retry-after') };
}

/** The server's backends waiting for a lock, seen from the admin session. */
async function backendsWaitingForALock(): Promise<number> {
  const { rows } = await admin.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
  );
  return rows[0]!.count;
}

describe.runIf(meaningful)('a dropped database connection (PostgreSQL, the server process)', () => {
  beforeAll(() => requirePostgresUrl());
  server = serverForFile();
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: server.storage.env.DATABASE_URL });
    locker = new pg.Client({ connectionString: server.storage.env.DATABASE_URL });
    await Promise.all([admin.connect(), locker.connect()]);
  });
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    await locker?.end().catch(() => undefined);
  });

  it('fails the requests in flight on it as UNAVAILABLE (503, Retry-After, counted, one log line each); the process stays up and serves them when resent', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const thread = await owner.createThread({ title: 'dropped connection' });
    const run = await owner.createRun({ threadId: thread.id });
    const lease = await worker.claimRun(run.id, 300);

    // Hold the run's row lock, so that every write is inside its transaction, waiting, when its
    // connection is dropped.
    const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM run WHERE id = $1 FOR UPDATE', [run.id]);
    const inputs = Array.from({ length: IN_FLIGHT }, (_, i) => ({
      lease: { runId: lease.runId, epoch: lease.epoch },
      operationId: `model-${i}`,
      sequence: String(i + 1),
      model: 'm',
      observedAt: new Date().toISOString(),
    }));
    const inFlight = inputs.map((input) => post(who.worker, MODEL_STARTED, { input }));
    await eventually(backendsWaitingForALock, (waiting) => waiting === IN_FLIGHT, { what: `${IN_FLIGHT} writes waiting for the lock` });

    const { rows } = await admin.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
       WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1)`,
      [lockerPid],
    );
    expect(rows.length).toBeGreaterThanOrEqual(IN_FLIGHT);
    await locker.query('ROLLBACK');

    const answers = await Promise.all(inFlight);
    for (const answer of answers) {
      expect(answer.data?.recordModelStarted ?? null).toBeNull();
      expect(answer.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(answer.status).toBe(503);
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
      // Masked: no SQL, no driver message, no stack.
      expect(answer.errors?.[0]?.message).not.toMatch(/terminat|SELECT|pg_|at .*\.ts/i);
    }

    // The process is still serving, on fresh connections, and the same writes now land.
    expect(server.process.child.exitCode).toBeNull();
    for (const input of inputs) {
      const answer = await post(who.worker, MODEL_STARTED, { input });
      expect(answer.errors, server.process.output()).toBeUndefined();
      expect(answer.data.recordModelStarted.status).toBe('RUNNING');
    }
    const { items } = await owner.threadAudits(thread.id);
    expect(items.map((item) => item.operationId).sort()).toEqual(inputs.map((input) => input.operationId).sort());
    expect(server.process.child.exitCode).toBeNull();
    expect(server.process.output()).not.toMatch(/Unhandled 'error' event/);
    // Named as the outage it is: one JSON line per failed request, none an "unexpected error".
    const lines = server.process.output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg: string });
    expect(lines.filter((line) => line.msg === 'database unavailable').length).toBeGreaterThanOrEqual(IN_FLIGHT);
    expect(lines.filter((line) => line.msg === 'unexpected error')).toEqual([]);
    const metrics = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(Number(/^agent_audit_unavailable_total\{dependency="database"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(IN_FLIGHT);
  });
});
