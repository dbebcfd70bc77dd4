// A read whose client has gone (a debug UI navigating away, a dashboard reloading, a script's own
// timeout; over graphql-ws, a page that unsubscribes the reads of a thread it left or closes) held its pool connection until its statement ended or hit the statement timeout (30 s
// by default): a few of them filled the pool, and everyone else's requests waited for a
// connection, then failed UNAVAILABLE. The reads here wait for a table lock that a session of the
// test holds, a slow statement of the most common kind. PostgreSQL only (PGlite has one
// in-process connection and no statement to cancel); with REQUIRE_SERVICES=1 never skipped.
import { createClient } from 'graphql-ws';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AuditClient } from '@agent-audit/client';
import { postgresSuiteRuns } from '../support/database.js';
import { eventually } from '../support/streams.js';
import { e2eActors, jsonLines, startServer, storageForFile, type ServerProcess } from './support/server.js';

const meaningful = postgresSuiteRuns('client-gone.e2e.test.ts');
const POOL_SIZE = 3;
const READS = 6;

const storage = storageForFile({ runs: meaningful, postgresOnly: true });

const post = (url: string, token: string, query: string, variables: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
    signal,
  });

/**
 * A server with a pool of POOL_SIZE and a run whose table a session of the test holds locked while
 * `gone` sends READS reads of the run and gives them up once the pool is full of them: then no
 * statement of theirs may still run, another client's read is served, nothing is logged and
 * /metrics counts their statements cancelled.
 */
async function givenUp(gone: (server: ServerProcess, token: string, runId: string, poolFull: Promise<unknown>) => Promise<void>) {
  // A statement timeout far past the test: only the cancel can end the reads' statements. No lease
  // sweep in the test's time: its statement would wait for the lock too, counted as a read's.
  const server = await startServer(storage(), { DATABASE_POOL_SIZE: String(POOL_SIZE), DATABASE_STATEMENT_TIMEOUT_MS: '600000', LEASE_SWEEP_INTERVAL_MS: '3600000' });
  const admin = new pg.Client({ connectionString: storage().env.DATABASE_URL });
  const locker = new pg.Client({ connectionString: storage().env.DATABASE_URL });
  await Promise.all([admin.connect(), locker.connect()]);
  try {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const thread = await owner.createThread({ title: 'client gone' });
    const run = await owner.createRun({ threadId: thread.id });
    const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const lockWaiters = async () =>
      (
        await admin.query<{ count: number }>(
          `SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1) AND wait_event_type = 'Lock'`,
          [lockerPid],
        )
      ).rows[0]!.count;
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE run IN ACCESS EXCLUSIVE MODE');

    // The pool is full of reads waiting for the lock; the others wait for a connection.
    const poolFull = eventually(lockWaiters, (waiting) => waiting === POOL_SIZE, { what: `${POOL_SIZE} reads waiting for the lock`, timeoutMs: 60_000 });
    await gone(server, who.owner, run.id, poolFull);

    await eventually(lockWaiters, (waiting) => waiting === 0, { what: 'no statement of the reads given up still running', timeoutMs: 60_000 });
    // The lock still held: a read of another table, by another client, gets a connection.
    const other = await post(server.url, who.owner, 'query($id: ID!) { thread(id: $id) { title } }', { id: thread.id });
    expect(await other.json()).toEqual({ data: { thread: { title: 'client gone' } } });
    expect(await lockWaiters()).toBe(0);
    // Cancelled reads nobody waits for are no incident: not logged as the database unavailable, nor as a failure.
    expect(jsonLines(server).filter((line) => line.level !== 'info' && line.level !== 'debug').map((line) => line.msg)).toEqual([]);
    const metrics = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
    expect(Number(/^agent_audit_db_statements_cancelled_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(POOL_SIZE);

    await locker.query('ROLLBACK');
    const after = await post(server.url, who.owner, 'query($id: ID!) { run(id: $id) { id } }', { id: run.id });
    expect(await after.json()).toEqual({ data: { run: { id: run.id } } });
    await server.stop();
  } finally {
    await locker.end();
    await admin.end();
  }
}

const RUN_READ = 'query($id: ID!) { run(id: $id) { id } }';

describe.runIf(meaningful)(`reads whose client has gone (PostgreSQL, DATABASE_POOL_SIZE=${POOL_SIZE})`, () => {
  it(`cancels their statements: ${READS} reads given up while they wait leave no statement running, and another client's read is served`, async () => {
    await givenUp(async (server, token, runId, poolFull) => {
      const abort = new AbortController();
      const reads = Array.from({ length: READS }, () =>
        post(server.url, token, RUN_READ, { id: runId }, abort.signal).then(
          () => 'answered',
          (error: Error) => error.name,
        ),
      );
      await poolFull;
      abort.abort();
      // Those still waiting for a connection may have been refused one (10 s) on a loaded machine: the pool's are given up.
      expect((await Promise.all(reads)).filter((outcome) => outcome === 'AbortError').length).toBeGreaterThanOrEqual(POOL_SIZE);
    });
  }, 180_000);

  it.each([
    { how: 'unsubscribes them (graphql-ws `complete`)', giveUp: (_client: ReturnType<typeof createClient>, unsubscribes: (() => void)[]) => unsubscribes.forEach((unsubscribe) => unsubscribe()) },
    { how: 'closes its socket', giveUp: (client: ReturnType<typeof createClient>) => client.dispose() },
  ])(`cancels the statements of ${READS} queries over graphql-ws whose client $how while they wait`, async ({ giveUp }) => {
    await givenUp(async (server, token, runId, poolFull) => {
      // Not lazy: the socket stays open once its operations are completed.
      const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, lazy: false, retryAttempts: 0 });
      try {
        const unsubscribes = Array.from({ length: READS }, () =>
          client.subscribe({ query: RUN_READ, variables: { id: runId } }, { next: () => {}, error: () => {}, complete: () => {} }),
        );
        await poolFull;
        await giveUp(client, unsubscribes);
      } finally {
        await client.dispose();
      }
    });
  }, 180_000);
});
