// The embedded default's first start generates the JWT secret and prints two ready tokens; later
// starts print none (logs are collected and kept) and `npm run token` mints them instead.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killServers, runScript, startServer } from './support/server.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';

// The secret lives beside the database (DATA_DIR/jwt-secret), so the database may start migrated.
let storage: TestStorage;
const noSecret = { AUTH_JWT_SECRET: '' };

beforeAll(async () => {
  storage = await createTestStorage('embedded');
});

afterAll(async () => {
  await killServers();
  await storage?.remove();
});

const createThread = (url: string, token: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'mutation { createThread(input: { title: "t" }) { ownerId } }' }),
  }).then((response) => response.json());

describe('tokens printed only when the local secret is generated (embedded PGlite)', () => {
  it('first start prints them, the second does not, and npm run token mints one that works', async () => {
    const first = await startServer(storage, noSecret);
    const printed = /superadmin token: (\S+)/.exec(first.output());
    expect(printed, first.output()).not.toBeNull();
    expect(first.output()).toContain(`mint tokens with \`DATA_DIR=${storage.env.DATA_DIR} npm run -s token -- --sub <id>`);
    expect(await createThread(first.url, printed![1]!)).toEqual({ data: { createThread: { ownerId: 'local-admin' } } });
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await startServer(storage, noSecret);
    expect(second.output()).not.toMatch(/eyJ/);
    expect(second.output()).toMatch(/npm run -s token/);
    const minted = await runScript('src/cli/token.ts', ['--sub', 'alice', '--role', 'user', '--expires', '1h'], { DATA_DIR: storage.env.DATA_DIR!, ...noSecret });
    expect(minted.code, minted.output).toBe(0);
    expect(await createThread(second.url, minted.output.trim())).toEqual({ data: { createThread: { ownerId: 'alice' } } });
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 180_000);

  it('the banner\'s command to mint more names the DATA_DIR of a server not on .data, and mints a token it accepts', async () => {
    const server = await startServer(storage, noSecret);
    const command = /mint tokens with `([^`]+)`/.exec(server.output())?.[1];
    expect(command, server.output()).toBe(`DATA_DIR=${storage.env.DATA_DIR} npm run -s token -- --sub <id> --role <user|admin|superadmin|worker>`);
    // As a user types it, in another shell: no DATA_DIR of its own.
    const { DATA_DIR: _, ...env } = process.env;
    const typed = command!.replace('<id>', 'bob').replace(/<[a-z|]+>/, 'user');
    const minted = spawnSync('bash', ['-c', typed], { cwd: join(import.meta.dirname, '../..'), env: { ...env, ...noSecret }, encoding: 'utf8' });
    expect(minted.status, minted.stderr).toBe(0);
    expect(await createThread(server.url, minted.stdout.trim())).toEqual({ data: { createThread: { ownerId: 'bob' } } });
    expect(await server.stop('SIGTERM')).toBe(0);
  }, 180_000);
});
