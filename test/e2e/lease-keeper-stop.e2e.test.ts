// A worker that stops its LeaseKeeper while a renewal hangs (the server out of reach: no answer, no
// reset) must be able to exit: stop() cuts the renewal in flight, which otherwise holds Node open
// until its own bound, a third of the lease.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { e2eActors, serverForFile } from './support/server.js';
import { proxyForFile } from './support/tcp-proxy.js';
import { withTimeout } from './support/wait.js';

const server = serverForFile();
const through = proxyForFile(server);

// Claims with a 3 s lease (its first renewal a second later), renewed for 300 s each time (so a
// renewal in flight waits up to 100 s), and stops the keeper and closes the client once a renewal is sent.
const worker = `
import { AuditClient, LeaseKeeper } from '@agent-audit/client';
const client = new AuditClient({ url: process.env.URL, token: process.env.TOKEN });
const lease = await client.claimRun(process.env.RUN_ID, 3);
console.log('claimed');
const working = setInterval(() => {}, 1_000); // the agent's work, until the stop
const keeper = new LeaseKeeper({
  renewLease: (...args) => {
    setTimeout(async () => {
      keeper.stop();
      await client.close({ signal: AbortSignal.timeout(1_000) });
      clearInterval(working);
      console.log('stopped');
    }, 200);
    return client.renewLease(...args);
  },
}, lease, { leaseSeconds: 300 });
`;

describe('LeaseKeeper.stop() while a renewal hangs', () => {
  it('the worker process exits: the renewal in flight is cut', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'keeper stop' });
    const { id: runId } = await owner.createRun({ threadId });
    const child = spawn(process.execPath, ['--input-type=module', '-e', worker], {
      env: { ...process.env, URL: through.url, TOKEN: who.worker, RUN_ID: runId },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const claimed = new Promise<void>((resolve) => {
      for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('claimed')) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await withTimeout(claimed, 20_000, () => `the worker did not claim:\n${output}`);
      through.proxy.stall();
      expect(await withTimeout(exited, 20_000, () => `the worker did not exit after stopping its keeper:\n${output}`)).toBe(0);
      expect(output).toContain('stopped');
    } finally {
      child.kill('SIGKILL');
      through.proxy.resume();
    }
  });
});
