// README "PostgreSQL and Redis": the server does not create its database; started on one that
// does not exist, it answers one line naming it (no pg stack trace) and exits 1.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onPostgres, postgresAdminUrl, servicesRequired } from '../support/database.js';

const REPO_ROOT = join(import.meta.dirname, '../..');

/** `npm run serve`'s server on DATABASE_URL `url`, run to its exit. */
const serveOn = (url: URL) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: String(url), AUTH_JWT_SECRET: 'a-secret-that-is-long-enough-for-hs256', PORT: '0', REDIS_URL: '' },
    encoding: 'utf8',
    timeout: 60_000,
  });

describe.runIf(onPostgres || servicesRequired)('npm run serve on a PostgreSQL database that does not exist', () => {
  it('prints one line naming the database, as the README says, and exits 1', () => {
    const url = new URL(postgresAdminUrl!);
    url.pathname = '/audit_never_created';
    const run = serveOn(url);
    expect(run.status, run.stderr).toBe(1);
    // One fatal JSON line (docs/operations.md, "Logs"), its message the README's.
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(lines, run.stdout).toEqual([
      expect.objectContaining({
        level: 'fatal',
        msg: `cannot start: The database "audit_never_created" does not exist on ${url.hostname}:${url.port || 5432}: create it (CREATE DATABASE "audit_never_created", or createdb "audit_never_created") or point DATABASE_URL at one that does.`,
      }),
    ]);
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('The database "audit" does not exist on 127.0.0.1:5432: create it');
    expect(readme).toMatch(/create it first, once/);
  });

  it('names the server it could not reach (host and port, never the password) and why', () => {
    const url = new URL(postgresAdminUrl!);
    url.password = 'not-to-be-printed';
    url.port = '1'; // nothing listens there
    const run = serveOn(url);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stdout).not.toContain('not-to-be-printed');
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(lines, run.stdout).toEqual([
      expect.objectContaining({ level: 'fatal', msg: `cannot start: the PostgreSQL server of DATABASE_URL at ${url.hostname}:1 cannot be reached: connect ECONNREFUSED ${url.hostname}:1` }),
    ]);
  });
});
