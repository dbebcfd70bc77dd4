// docs/operations.md "In a test suite": a server per test file, on a port the system picks
// (PORT=0), learnt from its listening line.
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { jsonLines, spawnServer } from '../e2e/support/server.js';
import { withTimeout } from '../e2e/support/wait.js';

const SECRET = 'a-secret-that-is-long-enough-for-hs256';

describe('servers started with PORT=0', () => {
  // Two servers on one host, both PORT=0, were both INSTANCE_ID "host:0": with the export on, two
  // instances sharing one name take each other's claims and may send spans twice (docs/export.md).
  it('each names itself by the port it was given: INSTANCE_ID defaults to hostname:<that port>', { timeout: 120_000 }, async () => {
    const server = spawnServer({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: ':memory:', DATABASE_URL: '', AUTH_JWT_SECRET: SECRET, REDIS_URL: '', INSTANCE_ID: '', SHUTDOWN_DRAIN_MS: '0' });
    try {
      const listening = () => jsonLines(server).find((line) => line.msg.startsWith('Agent audit server listening on'));
      await expect.poll(listening, { timeout: 90_000 }).toBeDefined();
      const { url, instanceId } = listening()! as unknown as { url: string; instanceId: string };
      const { port } = new URL(url);
      expect(Number(port)).toBeGreaterThan(0);
      expect(instanceId).toBe(`${hostname()}:${port}`);
      server.child.kill('SIGTERM');
      expect(await withTimeout(server.exited, 30_000, () => server.output())).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});
