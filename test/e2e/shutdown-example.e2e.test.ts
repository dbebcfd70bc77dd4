// examples/typescript/shutdown.ts and examples/python/shutdown.py, each run with the runtime
// authors' guide's command as written: a worker stopped by SIGTERM mid-tool hands its run back
// INTERRUPTED; with the server out of reach it still exits within its bound and the lease's expiry
// ends the run; frozen past its lease and thawed, it finds the run gone and exits without retrying.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditClient, type ThreadAuditItem, type ToolAuditWithLinks } from '@agent-audit/client';
import { e2eActors, serverForFile } from './support/server.js';
import { proxyForFile } from './support/tcp-proxy.js';
import { withTimeout } from './support/wait.js';

const REPO_ROOT = join(import.meta.dirname, '../..');

/**
 * Each example: the guide's command (the code-blocks test checks it is the page's, as written),
 * what it runs with besides (the Python client from the work tree), and its exit status once a
 * stop has been handled (Python's `sys.exit("stopped by SIGTERM")` is 1).
 */
const EXAMPLES = [
  { file: 'examples/typescript/shutdown.ts', command: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/shutdown.ts', env: {}, stopped: 0 },
  {
    file: 'examples/python/shutdown.py',
    command: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> python3 examples/python/shutdown.py',
    env: { PYTHONPATH: join(REPO_ROOT, 'clients/python'), PYTHONDONTWRITEBYTECODE: '1' },
    stopped: 1,
  },
];

const server = serverForFile();
const through = proxyForFile(server);

/** The example started by bash as written, through the proxy, once its tool runs: its pid, run, and exit. */
async function startExample(example: (typeof EXAMPLES)[number], env: Record<string, string> = {}) {
  const who = await e2eActors();
  const child = spawn('bash', ['-c', example.command.replace('<superadmin>', who.owner).replace('<worker>', who.worker)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...example.env, AUDIT_URL: through.url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal!)));
  const working = await withTimeout(
    (async () => {
      for (;;) {
        const line = output.split('\n').find((each) => each.startsWith('{"working"'));
        if (line) return JSON.parse(line) as { pid: number; threadId: string; runId: string };
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    60_000,
    () => `the example never said it was working:\n${output}`,
  );
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const exit = () => withTimeout(exited, 60_000, () => `the example did not exit:\n${output}`);
  const ended = async () => {
    await expect.poll(async () => (await owner.run(working.runId))!.status, { timeout: 30_000, interval: 200 }).not.toBe('RUNNING');
    const run = (await owner.run(working.runId))!;
    const items = (await owner.threadAudits(working.threadId)).items.filter((item: ThreadAuditItem): item is ToolAuditWithLinks => item.__typename === 'ToolAudit');
    return { status: run.status, error: run.error, tool: items[0]!.status, call: items[0]!.toolCall.status };
  };
  return { ...working, exit, ended, output: () => output };
}

// Each test starts the example (npx tsx takes seconds under load) and waits for runs to end.
describe.each(EXAMPLES)('$file: a worker its platform stops', { timeout: 180_000 }, (shutdownExample) => {
  it('on SIGTERM mid-tool, hands the run back INTERRUPTED (its tool call PENDING for a resume) and exits', async () => {
    const example = await startExample(shutdownExample);
    process.kill(example.pid, 'SIGTERM');
    expect(await example.exit()).toBe(shutdownExample.stopped);
    expect(example.output()).toContain('handed back INTERRUPTED');
    expect(await example.ended()).toMatchObject({ status: 'INTERRUPTED', tool: 'INTERRUPTED', call: 'PENDING' });
  });

  it('with the server out of reach, exits within its bound; the lease expiry ends the run FAILED, its tool ABANDONED', async () => {
    // A lease of 10 s: renewed every 3.3 s by the example, each renewal with 6.7 s to commit before
    // it expires on a loaded machine (2 s leases left 1.3 s); its expiry ends the run after the stop.
    const example = await startExample(shutdownExample, { AUDIT_SHUTDOWN_MS: '1000', AUDIT_LEASE_SECONDS: '10' });
    through.proxy.stall();
    try {
      process.kill(example.pid, 'SIGTERM');
      expect(await example.exit()).toBe(shutdownExample.stopped);
    } finally {
      await through.proxy.close();
      await through.proxy.up();
    }
    expect(example.output()).toContain('not handed back');
    expect(await example.ended()).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' }, tool: 'ABANDONED', call: 'FAILED' });
  });

  it('frozen past its lease and thawed, finds the run gone and exits without retrying', async () => {
    const example = await startExample(shutdownExample, { AUDIT_LEASE_SECONDS: '2' });
    process.kill(example.pid, 'SIGSTOP');
    try {
      expect(await example.ended()).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
    } finally {
      process.kill(example.pid, 'SIGCONT');
    }
    expect(await example.exit()).toBe(1);
    expect(example.output()).toMatch(/the lease is gone \(LEASE_(LOST|EXPIRED): /);
  });
});
