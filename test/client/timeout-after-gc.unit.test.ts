import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// A request given a signal and a timeout, over a server that never answers, the garbage collector
// run while it waits (as a busy worker's does): the timeout must still give it up. Node 20's
// AbortSignal.timeout inside AbortSignal.any is collected and never fires (nodejs/node#57736).
const CHILD = `
import { AuditClient } from '@agent-audit/client';
const never = (_url, init) => new Promise((_resolve, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason)));
const client = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch: never, batching: false });
const lease = { runId: 'run-1', owner: 'w', epoch: 1, expiresAt: new Date(Date.now() + 60000).toISOString(), grantedAt: new Date().toISOString() };
const hold = setInterval(() => {}, 1000);
const outcome = client.renewLease(lease, 30, { maxAttempts: 1, timeoutMs: 500 }, { signal: new AbortController().signal })
  .then(() => 'answered', (error) => error.code ?? error.name);
for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((resolve) => setTimeout(resolve, 10)); }
console.log(await outcome);
clearInterval(hold);
`;

describe('a request timeout over a hung server', () => {
  it('gives the request up after a garbage collection, with a signal of the caller beside it', { timeout: 120_000 }, async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], { timeout: 90_000 });
    expect(stdout.trim()).toBe('TRANSPORT_ERROR');
  });
});
