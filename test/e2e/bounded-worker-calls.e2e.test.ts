// A worker told to stop (Kubernetes' SIGTERM, then SIGKILL after the grace period) bounds its last
// calls with an AbortSignal. With the server out of reach (a network partition: no answer, no
// reset) a call retries for minutes (30 s per attempt, 8 attempts); with a signal it rejects with
// the signal's reason as soon as it aborts, and `close({ signal })` gives up what is still queued.
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { e2eActors, serverForFile } from './support/server.js';
import { proxyForFile } from './support/tcp-proxy.js';
import { withTimeout } from './support/wait.js';

const server = serverForFile();
const through = proxyForFile(server);

/** A worker, through the proxy, holding the lease of a fresh run with one model call started. */
async function workerMidRun() {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: through.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title: 'bounded shutdown' });
  const { id: runId } = await owner.createRun({ threadId });
  const lease = await worker.claimRun(runId, 30);
  await worker.recordModelStarted({ lease, operationId: 'model-1', sequence: 1, model: 'm', input: {} });
  return { owner, worker, lease, runId };
}

const settled = <T>(promise: Promise<T>) => withTimeout(promise.then(() => 'resolved', (error: unknown) => error), 20_000, () => 'the call did not settle once its signal aborted');

describe('a worker bounding its calls with a signal while the server does not answer', () => {
  it('finishRun rejects with the signal\'s reason; the record calls and flush do too', async () => {
    const { worker, lease } = await workerMidRun();
    through.proxy.stall();
    try {
      const stop = new AbortController();
      const reason = new Error('grace period over');
      const finish = settled(worker.finishRun({ lease, status: 'INTERRUPTED' }, { signal: stop.signal }));
      const queued = settled(worker.recordModelFinished({ lease, operationId: 'model-1', status: 'COMPLETED', sequence: 2 }, { signal: stop.signal }));
      const flushed = settled(worker.flush({ signal: stop.signal }));
      stop.abort(reason);
      expect(await finish).toBe(reason);
      expect(await queued).toBe(reason);
      expect(await flushed).toBe(reason);
      // An aborted signal stops a call before it is sent.
      expect(await settled(worker.recordToolError({ lease, toolCallId: 'c', error: {} }, { signal: stop.signal }))).toBe(reason);
    } finally {
      through.proxy.resume();
    }
  });

  it('close({ signal }) gives up the calls still queued: each rejects with the reason, and those never sent stay unsent', async () => {
    const { worker, lease } = await workerMidRun();
    through.proxy.stall();
    const stop = new AbortController();
    const reason = new Error('grace period over');
    // The first goes out (and hangs); the second waits in the queue behind it.
    const inFlight = settled(worker.recordModelFinished({ lease, operationId: 'model-1', status: 'COMPLETED', sequence: 2 }));
    const queued = settled(worker.finishRun({ lease, status: 'INTERRUPTED' }));
    const closed = settled(worker.close({ signal: stop.signal }));
    stop.abort(reason);
    expect(await closed).toBe(reason);
    expect(await queued).toBe(reason);
    expect(await inFlight).toBe(reason);
    through.proxy.resume();
    // The finish given up was never sent (sent, it would have ended the run: LEASE_LOST now), and the client stays usable.
    expect(await worker.finishRun({ lease, status: 'INTERRUPTED' })).toMatchObject({ status: 'INTERRUPTED' });
  });
});
