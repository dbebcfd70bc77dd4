// Issue 43, as an operator meets the server process: start-up mistakes are one JSON line and
// exit 1; every request is one access line with its x-request-id echoed; SIGTERM answers /readyz
// 503 for SHUTDOWN_DRAIN_MS while requests are still served, then closes without resetting any.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Agent, fetch as undiciFetch } from 'undici';
import { postgresAdminUrl } from '../support/database.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { E2E_JWT_SECRET, e2eActors, killServers, startServer } from './support/server.js';
import { withTimeout } from './support/wait.js';

/** The server (this run's bundle of src/main.ts when there is one, as startServer runs it) to its exit. */
async function runServer(env: Record<string, string>): Promise<{ code: number | NodeJS.Signals; output: string }> {
  const bundle = inject('serverBundle');
  const child = spawn(process.execPath, bundle ? [bundle] : ['--import', 'tsx', 'src/main.ts'], {
    cwd: join(import.meta.dirname, '../..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal!)));
  try {
    return { code: await withTimeout(exited, 100_000, () => `the server did not exit:\n${output}`), output };
  } finally {
    child.kill('SIGKILL');
  }
}

let storage: TestStorage;
beforeAll(async () => {
  storage = await createTestStorage();
});
afterAll(async () => {
  await killServers();
  await storage?.remove();
});

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
    ['PORT=abc', { PORT: 'abc' }, /PORT must be a non-negative integer/],
    ['DATABASE_POOL_SIZE=1', { DATABASE_POOL_SIZE: '1' }, /DATABASE_POOL_SIZE must be at least 2/],
    ['an unreachable database host', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/audit' }, /ECONNREFUSED|connect/],
    ['an unreachable Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, /REDIS_URL is set but Redis cannot be reached/],
    ...(postgresAdminUrl
      ? [['a database that does not exist', { DATABASE_URL: `${postgresAdminUrl.replace(/\/[^/]*$/, '')}/no_such_database_43` }, /database "no_such_database_43" does not exist/] as [string, Record<string, string>, RegExp]]
      : []),
  ];

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
    const server = await startServer(storage);
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

  it('SIGTERM: /readyz answers 503 through the drain while requests are still served; then it closes without resetting a request', async () => {
    const server = await startServer(storage, { SHUTDOWN_DRAIN_MS: '1500' });
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
    let readyDuringDrain: number | undefined;
    // Requests keep coming until the listener refuses new connections: each one is answered or
    // refused before it was sent, never cut after it was sent.
    for (;;) {
      const outcome = await ask().then(
        async (response) => (await response.text(), `status ${response.status}`),
        (error: Error & { cause?: { code?: string } }) => `error ${error.cause?.code ?? error.message}`,
      );
      outcomes.push(outcome);
      if (outcome.startsWith('error')) break;
      readyDuringDrain ??= (await undiciFetch(`${base}/readyz`, { dispatcher: agent }).then((r) => r.status, () => undefined));
    }
    expect(await server.exited).toBe(0);
    await agent.close();

    expect(readyDuringDrain).toBe(503);
    expect(outcomes.filter((outcome) => outcome === 'status 200').length).toBeGreaterThan(1);
    // The first request not answered was never read by the server: refused, or reset by the kernel
    // when the listener closed with its connection still queued (not yet accepted by the process).
    // A clean-clone CI run met the second; nothing earlier than it may fail.
    expect(['error ECONNREFUSED', 'error ECONNRESET']).toContain(outcomes.at(-1));
    expect(outcomes.slice(0, -1).every((outcome) => outcome === 'status 200'), outcomes.join(', ')).toBe(true);
  }, 120_000);
});
