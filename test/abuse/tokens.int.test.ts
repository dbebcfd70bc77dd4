import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateLocalSecret } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { errorCode, startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

let t: TestApp;
const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-secret-'));
  dirs.push(dir);
  return dir;
};
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe(`tokens and secrets (${backendName})`, () => {
  it('a token without exp is UNAUTHENTICATED', async () => {
    const forever = await new SignJWT({ role: 'superadmin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('eve')
      .setIssuedAt()
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const response = await t.gql(`mutation { createThread(input: { title: "x" }) { id } }`, {}, forever);
    expect(errorCode(response)).toBe('UNAUTHENTICATED');
    expect(response.data ?? null).toBeNull();
  });

  it('the server refuses to start with an AUTH_JWT_SECRET shorter than 32 bytes', async () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: 'x' })).toThrow(/AUTH_JWT_SECRET must be at least 32 bytes/);
    expect(() => loadConfig({ AUTH_JWT_SECRET: 'a'.repeat(31) })).toThrow(/32 bytes/);
    expect(loadConfig({ AUTH_JWT_SECRET: 'a'.repeat(32) }).jwtSecret).toBe('a'.repeat(32));
    await expect(startTestApp({ AUTH_JWT_SECRET: 'short' })).rejects.toThrow(/32 bytes/);
  });

  it('the local secret is created once, private (0600), and reused', () => {
    const dir = freshDir();
    const first = loadOrCreateLocalSecret(dir);
    expect(first.created).toBe(true);
    expect(Buffer.byteLength(first.secret)).toBeGreaterThanOrEqual(32);
    expect(statSync(join(dir, 'jwt-secret')).mode & 0o777).toBe(0o600);
    expect(loadOrCreateLocalSecret(dir)).toEqual({ secret: first.secret, created: false });
  });

  it('a group- or world-readable local secret is refused', () => {
    const dir = freshDir();
    loadOrCreateLocalSecret(dir);
    for (const mode of [0o640, 0o604]) {
      chmodSync(join(dir, 'jwt-secret'), mode);
      expect(() => loadOrCreateLocalSecret(dir)).toThrow(/readable by others.*chmod 600/);
    }
  });

  it('processes starting together all end with the same secret', async () => {
    const dir = freshDir();
    const module = new URL('../../src/auth/jwt.ts', import.meta.url).pathname;
    // Every process sleeps until the same instant (without spinning), then creates (or reads) the secret.
    const startAt = Date.now() + 3000;
    const script = `const { loadOrCreateLocalSecret } = await import(${JSON.stringify(module)});
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ${startAt} - Date.now()));
      console.log(JSON.stringify(loadOrCreateLocalSecret(${JSON.stringify(dir)})));`;
    const results = await Promise.all(
      Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        return new Promise<{ secret: string; created: boolean }>((resolve, reject) =>
          child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(output)) : reject(new Error(`exit ${code}: ${output}`)))),
        );
      }),
    );
    expect(new Set(results.map((result) => result.secret)).size).toBe(1);
    expect(results.filter((result) => result.created)).toHaveLength(1);
  }, 60_000);
});
