// The TypeScript client's batching writer against the real server process: ten runs driven at
// once through one client, whose events meet while requests are in flight and go together
// (recordEvents); every run ends as its events say, in order, and each call gets its own answer.
import { expect, it } from 'vitest';
import { AuditApiError, AuditClient, type FetchLike } from '@agent-audit/client';
import { e2eActors, serverForFile } from './support/server.js';

const server = serverForFile();

it('drives ten runs at once through one batching client, each event answered by its own result or error', async () => {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const operations: string[] = [];
  const counting: FetchLike = (url, init) => {
    operations.push((JSON.parse(String(init.body)) as { operationName: string }).operationName);
    return fetch(url, init);
  };
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: counting });
  const { id: threadId } = await owner.createThread({ title: 'batching' });
  const runIds = await Promise.all(Array.from({ length: 10 }, async () => (await owner.createRun({ threadId })).id));

  const outcomes = await Promise.all(
    runIds.map(async (runId, index) => {
      const lease = await worker.claimRun(runId, 60);
      let sequence = 0n;
      await worker.recordModelStarted({ lease, operationId: `m${index}`, sequence: ++sequence });
      const model = await worker.recordModelFinished({ lease, operationId: `m${index}`, status: 'COMPLETED', toolCalls: [{ id: `c${index}`, name: 'search', args: { q: index } }] });
      await worker.recordToolStarted({ lease, toolCallId: `c${index}`, name: 'search', effectiveInput: { q: index }, sequence: ++sequence });
      const tool = await worker.recordToolFinished({ lease, toolCallId: `c${index}`, output: { content: 'found' } });
      const run = await worker.finishRun({ lease, status: 'COMPLETED' });
      // After its end, the run's lease is gone: this call alone gets LEASE_LOST.
      const late = await worker.renewLease(lease).catch((error: unknown) => error);
      return { model, tool, run, late };
    }),
  );
  await worker.close();

  for (const [index, { model, tool, run, late }] of outcomes.entries()) {
    expect(model).toMatchObject({ operationId: `m${index}`, status: 'COMPLETED', toolCalls: [{ toolCallId: `c${index}`, status: 'PENDING' }] });
    expect(tool).toMatchObject({ toolCallId: `c${index}`, status: 'COMPLETED' });
    expect(run).toMatchObject({ id: runIds[index], status: 'COMPLETED' });
    expect(late).toBeInstanceOf(AuditApiError);
    expect(late).toMatchObject({ code: 'LEASE_LOST', operationName: 'RenewLease' });
  }
  // 70 lifecycle calls (and 10 claims), fewer requests: those that met in flight went together.
  expect(operations.filter((name) => name === 'RecordEvents').length).toBeGreaterThan(0);
  expect(operations.filter((name) => name !== 'ClaimRun').length).toBeLessThan(60);
  const audits = (await owner.threadAudits(threadId)).items;
  expect(audits.map((audit) => audit.status)).toEqual(Array(20).fill('COMPLETED'));
});
