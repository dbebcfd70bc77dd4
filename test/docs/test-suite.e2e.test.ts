// docs/operations.md "In a test suite": a server per test file, on a port the system picks
// (PORT=0), learnt from its listening line.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { jsonLines, spawnServer } from '../e2e/support/server.js';
import { withTimeout } from '../e2e/support/wait.js';

const SECRET = 'a-secret-that-is-long-enough-for-hs256';
const REPO_ROOT = join(import.meta.dirname, '../..');

/** The page's commands, as written, with this test's checks between them. */
const script = [
  'export AUTH_JWT_SECRET=$(openssl rand -base64 32)',
  'LOG=$(mktemp)',
  'PORT=0 DATA_DIR=:memory: SHUTDOWN_DRAIN_MS=0 npm run -s serve > "$LOG" & SERVER=$!',
  `until grep -q 'Agent audit server listening on' "$LOG"; do kill -0 $SERVER || exit 1; sleep 0.2; done`,
  `URL=$(grep -o '"url":"[^"]*"' "$LOG" | cut -d'"' -f4)`,
  'TOKEN=$(npm run -s token -- --sub ci-owner --role superadmin)',
  'echo "url: $URL"',
  // The token works on that server.
  `node -e "fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + process.argv[2] }, body: JSON.stringify({ query: 'mutation { createThread(input: {}) { id } }' }) }).then((r) => r.text()).then(console.log)" "$URL" "$TOKEN"`,
  'kill $SERVER; wait $SERVER',
  'echo "exit: $?"',
  'rm -f "$LOG"',
].join('\n');

describe('servers started with PORT=0', () => {
  it("the page's commands: a server in memory on a port it was given, its URL from the log, a token, a stop with exit 0", { timeout: 180_000 }, async () => {
    // Its own process group, so that a failure leaves nothing running.
    const shell = spawn('sh', ['-c', script], { cwd: REPO_ROOT, detached: true, env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: '', INSTANCE_ID: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    shell.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const code = await withTimeout(new Promise((resolve) => shell.once('exit', resolve)), 150_000, () => output);
      expect(code, output).toBe(0);
      expect(output).toMatch(/^url: http:\/\/127\.0\.0\.1:[1-9]\d*\/graphql$/m);
      expect(output).toMatch(/^\{"data":\{"createThread":\{"id":"[^"]+"\}\}\}$/m);
      expect(output).toMatch(/^exit: 0$/m);
    } finally {
      try {
        process.kill(-shell.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

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

  // A server in memory ran PGlite's initdb in its own process (a second instance beside its own,
  // the install's template left unused): seconds of a start, and a peak of 650-735 MB resident,
  // against about 300 MB for one on a new directory, which copies the template.
  it.runIf(process.platform === 'linux')('a server in memory starts from the install\'s template: its peak resident memory stays under 500 MB', { timeout: 120_000 }, async () => {
    const server = spawnServer({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: ':memory:', DATABASE_URL: '', AUTH_JWT_SECRET: SECRET, REDIS_URL: '', SHUTDOWN_DRAIN_MS: '0' });
    try {
      await expect.poll(() => server.output().includes('Agent audit server listening on'), { timeout: 90_000 }).toBe(true);
      const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]);
      expect(peakKiB / 1024).toBeLessThan(500);
      server.child.kill('SIGTERM');
      expect(await withTimeout(server.exited, 30_000, () => server.output())).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  // With AUTH_JWT_SECRET a server never prints tokens, yet one in memory said "Tokens are printed
  // on the first start only", which every start of a server in memory is.
  it('a server given AUTH_JWT_SECRET says how to mint tokens, never that it printed or will print some', { timeout: 120_000 }, async () => {
    const server = spawnServer({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: ':memory:', DATABASE_URL: '', AUTH_JWT_SECRET: SECRET, REDIS_URL: '', SHUTDOWN_DRAIN_MS: '0' });
    try {
      const tokensLine = () => jsonLines(server).find((line) => line.msg.startsWith('Tokens'));
      await expect.poll(tokensLine, { timeout: 90_000 }).toBeDefined();
      expect(tokensLine()!.msg).toBe('Tokens: mint tokens with `npm run -s token -- --sub <id> --role <user|admin|superadmin|worker>` and the same AUTH_JWT_SECRET.');
      server.child.kill('SIGTERM');
      expect(await withTimeout(server.exited, 30_000, () => server.output())).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});
