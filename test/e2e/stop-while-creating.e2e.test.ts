// A test harness starts a server on a new DATA_DIR and stops it (SIGTERM) before it serves: a
// test that timed out, a run cancelled. The server said "exiting before serving" and exited 0,
// but the process creating its database (new-pglite.ts) went on for seconds, orphaned, writing
// into the directory the harness was removing and printing into its pipe.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { E2E_JWT_SECRET, spawnServer, startServer } from './support/server.js';
import { withTimeout } from './support/wait.js';

/** Whether process `pid` exists (a child the server has not reaped counts). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The ids of `pid`'s child processes (Linux). */
const childrenOf = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

describe.skipIf(onPostgres || process.platform !== 'linux')('a stop while the embedded database is being created', () => {
  it('SIGTERM while a new DATA_DIR is being created: the creating process ends before the server exits 0; the next start serves', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'audit-new-data-dir-'));
    const server = spawnServer({ DATABASE_URL: '', DATA_DIR: dataDir, AUTH_JWT_SECRET: E2E_JWT_SECRET, PORT: '0', HOST: '127.0.0.1', REDIS_URL: '', NODE_ENV: 'production' });
    try {
      // Its first migration line comes from the creating process: it runs now.
      await expect.poll(() => server.output().includes('"migration_started"'), { timeout: 90_000 }).toBe(true);
      const creating = childrenOf(server.child.pid!);
      expect(creating).toHaveLength(1);
      server.child.kill('SIGTERM');
      expect(await withTimeout(server.exited, 30_000, () => `the server did not exit:\n${server.output()}`), server.output()).toBe(0);
      expect(exists(creating[0]!), `the creating process ${creating[0]} outlived the server`).toBe(false);
      expect(server.output()).toMatch(/SIGTERM during start-up: exiting before serving/);

      // Whatever the creation had done (a copy or migrations cut short), the next start serves.
      const next = await startServer({ env: { DATABASE_URL: '', DATA_DIR: dataDir }, describe: dataDir, remove: async () => {} });
      expect(await next.stop('SIGTERM')).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 20 });
    }
  });
});
