// A PostgreSQL database that refuses new sessions for a while (ALTER DATABASE … ALLOW_CONNECTIONS
// false, its sessions ended: SQLSTATE 55000 at connect) is an outage the client may retry, as a
// refused connection is: 503 UNAVAILABLE with Retry-After, no driver text; served again once it
// takes connections. Only PostgreSQL has databases to close; with REQUIRE_SERVICES=1 a missing
// one is a failure, never a skip.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onLogLine } from '../../src/log.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';
import { waitFor } from '../support/streams.js';

const meaningful = postgresSuiteRuns('database-refusing-connections.int.test.ts');

describe.runIf(meaningful)('a database not accepting connections (PostgreSQL)', () => {
  let t: TestApp;
  let admin: pg.Client;
  let database: string;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: requirePostgresUrl() });
    await admin.connect();
    t = await startTestApp();
    database = decodeURIComponent(new URL(t.config.databaseUrl!).pathname.slice(1));
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin?.end();
    await t?.close();
  });

  async function readThreads(token: string) {
    const response = await t.app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ threads(first: 1) { edges { node { id } } } }' }),
    });
    const body = (await response.json()) as { errors?: { message: string; extensions?: { code?: string } }[] };
    return { status: response.status, retryAfter: response.headers.get('retry-after'), errors: body.errors };
  }

  it('answers 503 UNAVAILABLE with Retry-After meanwhile, never INTERNAL_SERVER_ERROR, and serves again after', { timeout: 90_000 }, async () => {
    const token = await t.token('closed-db-reader', 'superadmin');
    expect((await readThreads(token)).status).toBe(200);
    const lines: { msg: string; error?: { code?: string } }[] = [];
    const stopListening = onLogLine((line) => lines.push(JSON.parse(line) as (typeof lines)[number]));
    try {
      await admin.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
      // The pool drops the ended sessions as their ends arrive (late on a loaded machine): once it
      // holds none, the next request needs a new one.
      await waitFor(() => t.app.db.poolStats!().total === 0, "the pool to drop the ended sessions", 30_000);
      for (let i = 0; i < 3; i++) {
        const answer = await readThreads(token);
        expect(answer.errors?.[0]?.extensions?.code, JSON.stringify(answer.errors)).toBe('UNAVAILABLE');
        expect(answer.status).toBe(503);
        expect(Number(answer.retryAfter)).toBeGreaterThan(0);
        expect(answer.errors?.[0]?.message).not.toMatch(/accepting|55000|SELECT|at .*\.ts/);
      }
      // Refused at connect, by this SQLSTATE: no other outage made these answers.
      expect(lines.filter((line) => line.msg === 'database unavailable').map((line) => line.error?.code)).toContain('55000');
      expect(lines.filter((line) => line.msg === 'unexpected error')).toEqual([]);
    } finally {
      stopListening();
      await admin.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS true`);
    }
    expect((await readThreads(token)).status).toBe(200);
  });
});
