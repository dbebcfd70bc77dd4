// The embedded default's first start generates the JWT secret and prints two ready tokens; later
// starts print none (logs are collected and kept) and `npm run token` mints them instead.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pgliteTemplateDataDir } from '../support/database-templates.js';
import { killServers, runScript, startServer } from './support/server.js';

// The secret lives beside the database (DATA_DIR/jwt-secret), so the database may start migrated.
const dataDir = mkdtempSync(join(tmpdir(), 'audit-local-secret-'));
const template = pgliteTemplateDataDir();
if (template) cpSync(template, join(dataDir, 'pglite'), { recursive: true });
const storage = { env: { DATABASE_URL: '', DATA_DIR: dataDir, AUTH_JWT_SECRET: '' }, describe: 'embedded', remove: async () => {} };

afterAll(async () => {
  await killServers();
  rmSync(dataDir, { recursive: true, force: true });
});

const createThread = (url: string, token: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'mutation { createThread(input: { title: "t" }) { ownerId } }' }),
  }).then((response) => response.json());

describe('tokens printed only when the local secret is generated (embedded PGlite)', () => {
  it('first start prints them, the second does not, and npm run token mints one that works', async () => {
    const first = await startServer(storage, storage.env);
    const printed = /superadmin token: (\S+)/.exec(first.output());
    expect(printed, first.output()).not.toBeNull();
    expect(await createThread(first.url, printed![1]!)).toEqual({ data: { createThread: { ownerId: 'local-admin' } } });
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await startServer(storage, storage.env);
    expect(second.output()).not.toMatch(/eyJ/);
    expect(second.output()).toMatch(/npm run -s token/);
    const minted = await runScript('src/cli/token.ts', ['--sub', 'alice', '--role', 'user', '--expires', '1h'], { DATA_DIR: dataDir, AUTH_JWT_SECRET: '' });
    expect(minted.code, minted.output).toBe(0);
    expect(await createThread(second.url, minted.output.trim())).toEqual({ data: { createThread: { ownerId: 'alice' } } });
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 180_000);
});
