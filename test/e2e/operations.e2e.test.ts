// Issue 43, as an operator meets the server process: start-up mistakes are one JSON line and
// exit 1; every request is one access line with its x-request-id echoed; SIGTERM answers /readyz
// 503 for SHUTDOWN_DRAIN_MS while requests are still served, then closes without resetting any.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Agent, fetch as undiciFetch } from 'undici';
import { AuditClient } from '@agent-audit/client';
import pg from 'pg';
import { MIGRATION_LOCK_KEY } from '../../src/db/migrate.js';
import { onPostgres, postgresAdminUrl, servicesRequired } from '../support/database.js';
import { E2E_JWT_SECRET, e2eActors, freePort, spawnServer, startServer, storageForFile } from './support/server.js';
import { withTimeout } from './support/wait.js';

/** The server to its exit. */
async function runServer(env: Record<string, string>): Promise<{ code: number | NodeJS.Signals; output: string }> {
  const { child, exited, output } = spawnServer(env);
  try {
    return { code: await withTimeout(exited, 100_000, () => `the server did not exit:\n${output()}`), output: output() };
  } finally {
    child.kill('SIGKILL');
  }
}

const storage = storageForFile();

const jsonLines = (output: string) =>
  output
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: string; msg: string; [key: string]: unknown });

describe('start-up mistakes: one line each, exit 1', () => {
  const valid = { AUTH_JWT_SECRET: E2E_JWT_SECRET, DATABASE_URL: '', REDIS_URL: '', DATA_DIR: ':memory:', PORT: '0', NODE_ENV: 'production' };
  const cases: [string, Record<string, string>, RegExp][] = [
    ['DATABASE_URL of another scheme', { DATABASE_URL: 'mysql://db/audit' }, /DATABASE_URL must start with postgres:\/\//],
    ['a short AUTH_JWT_SECRET', { AUTH_JWT_SECRET: 'short' }, /AUTH_JWT_SECRET must be at least/],
    ['RETENTION_DAYS=abc', { RETENTION_DAYS: 'abc' }, /RETENTION_DAYS must be a positive number/],
    ['PORT=abc', { PORT: 'abc' }, /PORT must be an integer from 0 to 65535, got "abc"/],
    ['DATABASE_POOL_SIZE=1', { DATABASE_POOL_SIZE: '1' }, /DATABASE_POOL_SIZE must be an integer of at least 2, got "1"/],
    ['an unreachable database host', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/audit' }, /ECONNREFUSED|connect/],
    ['a REDIS_URL that is no URL', { REDIS_URL: 'redis//127.0.0.1:6379' }, /REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL, got "redis\/\/127\.0\.0\.1:6379"/],
    ['a DATABASE_URL that is no URL', { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432:bad/audit' }, /DATABASE_URL is not a valid URL/],
    ['LOG_LEVEL=bogus', { LOG_LEVEL: 'bogus' }, /LOG_LEVEL must be one of .*info.*, got "bogus"/],
    ['PORT=99999', { PORT: '99999' }, /PORT must be an integer from 0 to 65535, got "99999"/],
    ['DATABASE_STATEMENT_TIMEOUT_MS=0', { DATABASE_STATEMENT_TIMEOUT_MS: '0' }, /DATABASE_STATEMENT_TIMEOUT_MS must be an integer of at least 100, got "0"/],
    ['RETENTION_SWEEP_INTERVAL_MS=0', { RETENTION_SWEEP_INTERVAL_MS: '0' }, /RETENTION_SWEEP_INTERVAL_MS must be an integer of at least 1000, got "0"/],
    ['MAX_JSON_BYTES=0', { MAX_JSON_BYTES: '0' }, /MAX_JSON_BYTES must be an integer of at least 1024, got "0"/],
    ['WS_MAX_CONNECTIONS_PER_PRINCIPAL=0', { WS_MAX_CONNECTIONS_PER_PRINCIPAL: '0' }, /WS_MAX_CONNECTIONS_PER_PRINCIPAL must be an integer of at least 1, got "0"/],
    ['an OTLP endpoint that is no URL', { OTEL_EXPORTER_OTLP_ENDPOINT: 'not-a-url' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL, got "not-a-url"/],
    ...(postgresAdminUrl
      ? [['a database that does not exist', { DATABASE_URL: `${postgresAdminUrl.replace(/\/[^/]*$/, '')}/no_such_database_43` }, /database "no_such_database_43" does not exist/] as [string, Record<string, string>, RegExp]]
      : []),
  ];

  it('a port in use', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const { code, output } = await runServer({ ...valid, HOST: '127.0.0.1', PORT: String(port) });
      expect(code, output).toBe(1);
      expect(jsonLines(output).filter((line) => line.level !== 'info'), output).toEqual([expect.objectContaining({ level: 'fatal', msg: expect.stringMatching(/EADDRINUSE/) })]);
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 120_000);

  it.each(cases)('%s', async (_, env, says) => {
    const { code, output } = await runServer({ ...valid, ...env });
    expect(code, output).toBe(1);
    // Info lines (the embedded database's migrations, one each) may come first; nothing else.
    const lines = jsonLines(output).filter((line) => line.level !== 'info');
    expect(lines, output).toEqual([expect.objectContaining({ level: 'fatal', msg: expect.stringMatching(says) })]);
    expect(output).not.toMatch(/\n\s+at /); // no stack
    expect(output).not.toMatch(/catch up from the database/);
  }, 120_000);
});

describe('a running server process', () => {
  it('logs one access line per request and echoes x-request-id (the client\'s when safe, else a new one)', async () => {
    const server = await startServer(storage());
    const who = await e2eActors();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` };
    const given = await fetch(server.url, { method: 'POST', headers: { ...headers, 'x-request-id': 'ops-43-given' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect(given.headers.get('x-request-id')).toBe('ops-43-given');
    const forged = await fetch(server.url, { method: 'POST', headers: { ...headers, 'x-request-id': 'no spaces\tor tabs' }, body: JSON.stringify({ query: '{ __typename }' }) });
    const generated = forged.headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect(await server.stop('SIGTERM')).toBe(0);

    const access = jsonLines(server.output()).filter((line) => line.msg === 'request' && line.path === '/graphql');
    expect(access).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 'info', requestId: 'ops-43-given', method: 'POST', status: 200, durationMs: expect.any(Number) }),
        expect.objectContaining({ requestId: generated, method: 'POST', status: 200 }),
      ]),
    );
    expect(jsonLines(server.output()).find((line) => /listening on/.test(line.msg))).toMatchObject({ liveUpdates: expect.any(String), retention: 'off', export: 'off', instanceId: expect.stringMatching(/:\d+$/) });
  }, 120_000);

  it('keeps an idle connection open past a load balancer\'s idle timeout: 65 s, said in Keep-Alive, not Node\'s 5 s', async () => {
    const server = await startServer(storage());
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    const ask = async () => {
      const before = received.length;
      socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\nConnection: keep-alive\r\n\r\n`);
      await expect.poll(() => received.slice(before)).toMatch(/\r\n\r\n(2\r\nok\r\n0\r\n\r\n|ok)$/);
      return received.slice(before);
    };
    expect(await ask()).toMatch(/^keep-alive: timeout=65$/im);
    // Past Node's default, on the same connection.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(socket.destroyed).toBe(false);
    expect(await ask()).toMatch(/^HTTP\/1\.1 200/);
    socket.destroy();
    expect(await server.stop('SIGTERM')).toBe(0);
  }, 60_000);

  it('SIGTERM: /readyz answers 503 through the drain while requests are still served; then it closes without resetting a request', async () => {
    const server = await startServer(storage(), { SHUTDOWN_DRAIN_MS: '1500' });
    const who = await e2eActors();
    const base = server.url.replace(/\/graphql$/, '');
    // One client with keep-alive connections, as a load balancer or a worker keeps them.
    const agent = new Agent({ keepAliveTimeout: 30_000, connections: 4 });
    const ask = () =>
      undiciFetch(server.url, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
    expect((await ask()).status).toBe(200);
    expect((await undiciFetch(`${base}/readyz`, { dispatcher: agent })).status).toBe(200);

    server.child.kill('SIGTERM');
    const outcomes: string[] = [];
    // The signal is handled a moment after kill() returns: a readiness read may still come first.
    const readiness: (number | undefined)[] = [];
    // Requests keep coming until the listener refuses new connections: each one is answered or
    // refused before it was sent, never cut after it was sent.
    for (;;) {
      const outcome = await ask().then(
        async (response) => (await response.text(), `status ${response.status}`),
        (error: Error & { cause?: { code?: string } }) => `error ${error.cause?.code ?? error.message}`,
      );
      outcomes.push(outcome);
      if (outcome.startsWith('error')) break;
      readiness.push(await undiciFetch(`${base}/readyz`, { dispatcher: agent }).then((r) => r.status, () => undefined));
    }
    expect(await server.exited).toBe(0);
    await agent.close();

    // Not ready from the signal's handling on, through the whole drain: no 200 after the first 503.
    const drained = readiness.slice(readiness.indexOf(503));
    expect(readiness, readiness.join(', ')).toContain(503);
    expect(drained.every((status) => status === 503 || status === undefined), readiness.join(', ')).toBe(true);
    expect(outcomes.filter((outcome) => outcome === 'status 200').length).toBeGreaterThan(1);
    // The first request not answered was never read by the server: refused, or reset by the kernel
    // when the listener closed with its connection still queued (not yet accepted by the process).
    // A clean-clone CI run met the second; nothing earlier than it may fail.
    expect(['error ECONNREFUSED', 'error ECONNRESET']).toContain(outcomes.at(-1));
    expect(outcomes.slice(0, -1).every((outcome) => outcome === 'status 200'), outcomes.join(', ')).toBe(true);
  }, 120_000);
});

// Issue 43 item 2: "the new instance logged nothing and refused /readyz connections throughout" its
// migrations. Now its port answers from the start: /healthz 200 (a liveness probe must not kill an
// instance mid-migration), /readyz 503, GraphQL 503 UNAVAILABLE (clients retry it); the log says
// what it waits for. Held here by another instance's migration lock (PostgreSQL only).
describe.runIf(onPostgres || servicesRequired)('a server process starting while another instance migrates (PostgreSQL)', () => {
  it('answers /healthz 200, /readyz 503 and GraphQL 503 UNAVAILABLE until its migrations are done, then serves', async () => {
    const migrating = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    await migrating.connect();
    await migrating.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = spawnServer({ ...storage().env, AUTH_JWT_SECRET: E2E_JWT_SECRET, REDIS_URL: '', NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port) });
    try {
      await expect.poll(() => fetch(`${base}/healthz`).then((r) => r.status, () => 0), { timeout: 60_000 }).toBe(200);
      await expect.poll(() => jsonLines(server.output()).some((line) => line.msg === "waiting for another instance's migrations"), { timeout: 30_000 }).toBe(true);
      const readyz = await fetch(`${base}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.text()).toMatch(/starting/);
      const who = await e2eActors();
      const early = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBe('1');
      expect(await early.json()).toEqual({ errors: [{ message: expect.any(String), extensions: { code: 'UNAVAILABLE' } }] });

      await migrating.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      await expect.poll(() => fetch(`${base}/readyz`).then((r) => r.status, () => 0), { timeout: 60_000 }).toBe(200);
      const served = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(served.status).toBe(200);
      expect(server.output()).toMatch(/listening on/);
    } finally {
      server.child.kill('SIGKILL');
      await server.exited;
      await migrating.end();
    }
  }, 120_000);

  // An orchestrator stops an instance that is still starting (a newer roll replaced it): it
  // vanished killed by the signal without a line, as if it had crashed mid-migration.
  it('SIGTERM while it waits for the migrations: one line saying so, exit 0', async () => {
    const migrating = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    await migrating.connect();
    await migrating.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const server = spawnServer({ ...storage().env, AUTH_JWT_SECRET: E2E_JWT_SECRET, REDIS_URL: '', NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0' });
    try {
      await expect.poll(() => jsonLines(server.output()).some((line) => line.msg === "waiting for another instance's migrations"), { timeout: 60_000 }).toBe(true);
      server.child.kill('SIGTERM');
      expect(await withTimeout(server.exited, 30_000, () => `the server did not exit:\n${server.output()}`), server.output()).toBe(0);
      expect(jsonLines(server.output()).at(-1), server.output()).toEqual(expect.objectContaining({ level: 'info', msg: 'SIGTERM during start-up: exiting before serving' }));
    } finally {
      server.child.kill('SIGKILL');
      await migrating.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      await migrating.end();
    }
  }, 120_000);
});

// Issue 43 item 6: "2–3 in-flight or keep-alive requests were reset per restart, so their clients
// cannot know whether the write committed". A write still waiting in the database when SIGTERM
// arrives is answered, and what it answered is what the database holds (PostgreSQL: another
// session holds the row lock the write waits for).
describe.runIf(onPostgres || servicesRequired)('SIGTERM with a write in flight (PostgreSQL)', () => {
  it('the write finishes and is answered before the process exits 0; it is in the database', async () => {
    const server = await startServer(storage());
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const thread = await owner.createThread({ title: 'in flight at SIGTERM' });
    const run = await owner.createRun({ threadId: thread.id });
    const lease = await worker.claimRun(run.id, 300);
    const locker = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM run WHERE id = $1 FOR UPDATE', [run.id]);
      const write = fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${who.worker}` },
        body: JSON.stringify({
          query: 'mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { status } }',
          variables: { input: { lease: { runId: lease.runId, epoch: lease.epoch }, operationId: 'in-flight', sequence: '1', model: 'm', observedAt: new Date().toISOString() } },
        }),
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as { data?: { recordModelStarted?: { status: string } } } }));
      // The write is inside the database, waiting for the lock, when the signal comes.
      await expect
        .poll(async () => (await locker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0].n)
        .toBe(1);
      server.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 500));
      await locker.query('COMMIT');
      const answer = await write;
      expect(answer).toEqual({ status: 200, body: { data: { recordModelStarted: { status: 'RUNNING' } } } });
      expect(await server.exited).toBe(0);
      const { rows } = await locker.query(`SELECT status FROM message WHERE run_id = $1 AND operation_id = 'in-flight'`, [run.id]);
      expect(rows).toEqual([{ status: 'RUNNING' }]);
    } finally {
      await locker.end();
    }
  }, 120_000);
});
