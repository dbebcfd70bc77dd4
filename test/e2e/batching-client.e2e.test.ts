// The TypeScript client's batching writer against the real server process: ten runs driven at
// once through one client, whose events meet while requests are in flight and go together
// (recordEvents); every run ends as its events say, in order, and each call gets its own answer.
import { expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditApiError, AuditClient, LeaseKeeper, type FetchLike } from '@agent-audit/client';
import { e2eActors, serverForFile } from './support/server.js';

const server = serverForFile();

/** A new owner's client, and a worker's whose requests' operation names are noted in `operations`. */
async function clientsCountingOperations() {
  const who = await e2eActors();
  const operations: string[] = [];
  const counting: FetchLike = (url, init) => {
    operations.push((JSON.parse(String(init.body)) as { operationName: string }).operationName);
    return fetch(url, init);
  };
  return {
    owner: new AuditClient({ url: server.url, token: who.owner }),
    worker: new AuditClient({ url: server.url, token: who.worker, fetch: counting }),
    operations,
  };
}

it('drives ten runs at once through one batching client, each event answered by its own result or error', async () => {
  const { owner, worker, operations } = await clientsCountingOperations();
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
    expect(late).toMatchObject({ code: 'LEASE_LOST', operationName: 'RenewLease', runStatus: 'COMPLETED' });
  }
  // 70 lifecycle calls (and 10 claims), fewer requests: those that met in flight went together.
  expect(operations.filter((name) => name === 'RecordEvents').length).toBeGreaterThan(0);
  expect(operations.filter((name) => name !== 'ClaimRun').length).toBeLessThan(60);
  const audits = (await owner.threadAudits(threadId)).items;
  expect(audits.map((audit) => audit.status)).toEqual(Array(20).fill('COMPLETED'));
});

it('cuts a batch by bytes: concurrent large events are all stored, an event over the body limit alone gets its own 413, small events still go together', async () => {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const sent: { operationName: string; bytes: number; events: string[] }[] = [];
  const counting: FetchLike = (url, init) => {
    const body = String(init.body);
    const { operationName, variables } = JSON.parse(body) as { operationName: string; variables: { events?: Record<string, { toolCallId: string }>[]; input?: { toolCallId: string } } };
    const events = variables.events?.map((event) => Object.values(event)[0]!.toolCallId) ?? [variables.input!.toolCallId];
    sent.push({ operationName, bytes: Buffer.byteLength(body), events });
    return fetch(url, init);
  };
  // maxJsonBytes over the 9 MB value: the client sends it whole (it would cut it to a marker at
  // the default 1 MiB), so it meets the server's body limit.
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: counting, maxJsonBytes: 16 * 1024 * 1024 });
  const { id: threadId } = await owner.createThread({ title: 'batches by bytes' });
  const { id: runId } = await owner.createRun({ threadId });
  const lease = await worker.claimRun(runId, 120);
  const calls = [...Array.from({ length: 12 }, (_, i) => `c${i}`), 'huge'];
  await worker.recordModelStarted({ lease, operationId: 'm', sequence: 1n });
  await worker.recordModelFinished({ lease, operationId: 'm', status: 'COMPLETED', toolCalls: calls.map((id) => ({ id, name: 'fetch', args: {} })) });

  // Small events written at once go together (the first alone, if nothing was in flight).
  sent.length = 0;
  await Promise.all(calls.map((id, i) => worker.recordToolStarted({ lease, toolCallId: id, name: 'fetch', sequence: BigInt(10 + i) })));
  expect(sent.length).toBeLessThanOrEqual(2);
  expect(sent.at(-1)!.operationName).toBe('RecordEvents');
  expect(sent.flatMap(({ events }) => events)).toEqual(calls);

  // Twelve outputs of 900 kB (each accepted alone; 10.8 MB together, over the server's 8 MiB
  // body limit), and among them one of 9 MB, which no request can carry.
  sent.length = 0;
  const content = 'x'.repeat(900_000);
  const finishes = calls.map((id, i) =>
    worker.recordToolFinished({ lease, toolCallId: id, output: { content: id === 'huge' ? 'x'.repeat(9_000_000) : content }, sequence: BigInt(100 + i) }).then(
      (audit) => ({ audit }),
      (error: unknown) => ({ error }),
    ),
  );
  const settled = await Promise.all(finishes);
  for (const [i, outcome] of settled.entries()) {
    if (calls[i] === 'huge') {
      // What its own mutation answers: the server's 413, for it alone.
      expect((outcome as { error: unknown }).error).toBeInstanceOf(AuditApiError);
      expect((outcome as { error: AuditApiError }).error).toMatchObject({ code: 'BAD_USER_INPUT', httpStatus: 413, operationName: 'RecordToolFinished' });
    } else expect(outcome, calls[i]).toMatchObject({ audit: { toolCallId: calls[i], status: 'COMPLETED' } });
  }
  // Every request under the limit but the huge event's, which went alone; the large events still
  // shared requests, in the order they were written.
  const limit = 8 * 1024 * 1024;
  expect(sent.filter(({ bytes }) => bytes >= limit).map(({ operationName, events }) => [operationName, events])).toEqual([['RecordToolFinished', ['huge']]]);
  expect(sent.some(({ operationName, events }) => operationName === 'RecordEvents' && events.length > 1)).toBe(true);
  expect(sent.flatMap(({ events }) => events)).toEqual(calls);
  await worker.finishRun({ lease, status: 'COMPLETED' });
  await worker.close();

  const tools = (await owner.threadAudits(threadId)).items.flatMap((item) => (item.__typename === 'ToolAudit' && item.toolCallId !== 'huge' ? [item] : []));
  expect(tools.map((tool) => [tool.toolCallId, tool.status, (tool.output as { content: string }).content.length])).toEqual(calls.slice(0, 12).map((id) => [id, 'COMPLETED', 900_000]));
}, 120_000);

it('fails only the call whose value the server refuses: other runs\' events in its batch are stored', async () => {
  const { owner, worker, operations } = await clientsCountingOperations();
  const { id: threadId } = await owner.createThread({ title: 'one bad value in a batch' });
  const [a, b, c] = await Promise.all([0, 1, 2].map(async () => (await owner.createRun({ threadId })).id));
  const [leaseA, leaseB, leaseC] = await Promise.all([a!, b!, c!].map((runId) => worker.claimRun(runId, 60)));

  operations.length = 0;
  // Written at once, the calls meet in one recordEvents request (after C's renewal, sent on its own).
  const renewal = worker.renewLease(leaseC!, 60);
  const [a1, bad, a2] = await Promise.allSettled([
    worker.recordModelStarted({ lease: leaseA!, operationId: 'a1', sequence: 1n, model: 'm', input: { healthy: true } }),
    // A string, so it type-checks; the DateTime scalar refuses it.
    worker.recordModelStarted({ lease: leaseB!, operationId: 'b1', sequence: 1n, model: 'm', input: {}, observedAt: 'yesterday' }),
    worker.recordModelStarted({ lease: leaseA!, operationId: 'a2', sequence: 2n, model: 'm', input: { healthy: true } }),
  ]);
  expect(await renewal).toMatchObject({ runId: c, epoch: leaseC!.epoch });
  expect(operations).toContain('RecordEvents');

  expect(a1).toMatchObject({ status: 'fulfilled', value: { operationId: 'a1' } });
  expect(a2).toMatchObject({ status: 'fulfilled', value: { operationId: 'a2' } });
  expect(bad.status).toBe('rejected');
  expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: 'BAD_USER_INPUT', operationName: 'RecordModelStarted' });
  const audits = (await owner.threadAudits(threadId)).items;
  expect(audits.map((audit) => [audit.runId, (audit as { operationId?: string }).operationId])).toEqual([
    [a, 'a1'],
    [a, 'a2'],
  ]);
  await worker.close();
});

it("keeps run B's lease while run A's request is held in flight: a renewal does not wait behind another run's request", async () => {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = () => {};
  const inFlight = new Promise<void>((resolve) => (held = resolve));
  // A's event is answered slowly (a slow link, a large upload): held until the test lets it go.
  const holding: FetchLike = async (url, init) => {
    if ((JSON.parse(String(init.body)) as { operationName: string }).operationName === 'RecordModelStarted') {
      held();
      await released;
    }
    return fetch(url, init);
  };
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: holding });
  const { id: threadId } = await owner.createThread({ title: 'a held request' });
  const [a, b] = await Promise.all([0, 1].map(async () => (await owner.createRun({ threadId })).id));
  const leaseA = await worker.claimRun(a!, 60);
  // The keeper renews every third of the lease: each renewal has 10 s to commit before the lease
  // it renews expires, room for a loaded machine (4 s leases left 2.7 s).
  const leaseSeconds = 15;
  const leaseB = await worker.claimRun(b!, leaseSeconds);
  const keeper = new LeaseKeeper(worker, leaseB, { leaseSeconds });

  const slow = worker.recordModelStarted({ lease: leaseA, operationId: 'a1', sequence: 1n });
  await inFlight;
  // Past B's first lease, and past the server's sweeps of expired leases (every second).
  await sleep(leaseSeconds * 1000 + 1_500);
  expect(keeper.signal.aborted).toBe(false);
  expect(await owner.run(b!)).toMatchObject({ status: 'RUNNING' });
  expect(Date.parse(keeper.lease.expiresAt)).toBeGreaterThan(Date.parse(leaseB.expiresAt));

  release();
  expect(await slow).toMatchObject({ operationId: 'a1' });
  keeper.stop();
  expect(await worker.finishRun({ lease: keeper.lease, status: 'COMPLETED' })).toMatchObject({ status: 'COMPLETED' });
  expect(await worker.finishRun({ lease: leaseA, status: 'COMPLETED' })).toMatchObject({ status: 'COMPLETED' });
  await worker.close();
}, 60_000);
