// Deterministic scenarios against the real server process: a worker drives runs with the
// runtime client over HTTP, a dashboard watches over graphql-ws, and the owner reads the
// timeline back through threadAudits.
import { afterAll, describe, expect, it } from 'vitest';
import {
  AuditApiError,
  AuditClient,
  LeaseKeeper,
  type AuditClientOptions,
  SequenceCounter,
  type DeclaredToolCallInput,
  type JsonObject,
  type ModelAudit,
  type RunLease,
  type ThreadAuditItem,
  type ToolAuditWithLinks,
} from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { LiveConnection, firstDelivered } from './support/live.js';
import { losingFirstResponses } from './support/lossy-fetch.js';
import { e2eActors, serverForFile } from './support/server.js';
import { withTimeout } from './support/wait.js';
import { rejectionOf } from '../support/client-errors.js';

const AUDIT_CHANGED = /* GraphQL */ `
  subscription ($threadId: ID!) {
    auditChanged(threadId: $threadId) {
      __typename id runId operationId sequence finishedSequence status durationMs
      ... on ToolAudit { output error awaitingRunTerminal toolCall { status output } }
    }
  }`;
const TOOL_STATUS_CHANGED = /* GraphQL */ `
  subscription ($threadId: ID!) {
    toolStatusChanged(threadId: $threadId) { id toolCallId status finishedSequence output error awaitingRunTerminal }
  }`;
const RUN_CHANGED = /* GraphQL */ `
  subscription ($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;

const server = serverForFile();
const connections: LiveConnection[] = [];

afterAll(async () => {
  await Promise.allSettled(connections.map((connection) => connection.close()));
});

/** A claimed run: its lease and its root stream sequence. */
interface Claimed {
  runId: string;
  lease: RunLease;
  sequence: SequenceCounter;
}

/** A fresh owner, worker and thread, with a dashboard subscribed to the thread's live streams. */
async function openThread(title: string, workerOptions: Partial<AuditClientOptions> = {}) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker, ...workerOptions });
  const { id: threadId } = await owner.createThread({ title });

  const live = await LiveConnection.open(server.wsUrl, who.owner);
  connections.push(live);
  const audits = live.subscribe<ThreadAuditItem>(AUDIT_CHANGED, { threadId });
  const tools = live.subscribe(TOOL_STATUS_CHANGED, { threadId });
  const runs = live.subscribe<{ id: string; status: string }>(RUN_CHANGED, { threadId });

  // The audit streams were subscribed first on the same socket, and have no event before a claim.
  async function startRun(resumeFromRunId?: string, leaseSeconds = 30): Promise<Claimed> {
    const runId = await firstDelivered(
      runs,
      async () => (await owner.createRun({ threadId, resumeFromRunId })).id,
      (id) => owner.cancelRun(id),
    );
    const lease = await worker.claimRun(runId, leaseSeconds);
    return { runId, lease, sequence: new SequenceCounter(1) };
  }

  return { who, owner, worker, threadId, audits, tools, startRun };
}

/** The model call of a runtime step, opened and closed with the client's own clock readings. */
async function modelCall(worker: AuditClient, run: Claimed, operationId: string, toolCalls: DeclaredToolCallInput[] = []) {
  const started = await worker.recordModelStarted({
    lease: run.lease,
    operationId,
    sequence: run.sequence.next(),
    model: 'e2e-model',
    input: { messages: [{ role: 'user', content: `prompt of ${operationId}` }] },
  });
  const finished = await worker.recordModelFinished({
    lease: run.lease,
    operationId,
    status: 'COMPLETED',
    output: { role: 'assistant', content: `reply of ${operationId}`, tool_calls: toolCalls.map((call) => ({ ...call })) },
    usage: { input_tokens: 100, output_tokens: 20 },
    toolCalls,
    sequence: run.sequence.next(),
  });
  return { started, finished };
}

const toolMessage = (call: DeclaredToolCallInput, content: string, status: 'success' | 'error' = 'success'): JsonObject => ({
  type: 'tool',
  tool_call_id: call.id,
  name: call.name,
  content,
  status,
});

/** One reading on a clock the test controls, `ms` after its origin. */
const clockAt = (ms: number) => ({ clockId: 'e2e-worker-clock', nanos: BigInt(ms) * 1_000_000n });

const toolAudits = (items: ThreadAuditItem[]) => items.filter((item): item is ToolAuditWithLinks => item.__typename === 'ToolAudit');
const modelAudits = (items: ThreadAuditItem[]) => items.filter((item): item is ModelAudit => item.__typename === 'ModelAudit');

/** The newest event of each audit id, which must show its committed final state. */
function lastEventOf<T extends { id: string }>(events: T[], id: string): T | undefined {
  return events.filter((event) => event.id === id).at(-1);
}


describe(`run scenarios against the server process (${backendName})`, () => {
  it('normal: model -> tool -> model, read back in sequence with the projection, events in commit order', async () => {
    const { owner, worker, threadId, audits, tools, startRun } = await openThread('normal');
    const run = await startRun();
    const weather = { id: 'call-weather', name: 'get_weather', args: { city: 'Paris' } };
    const effectiveInput = { city: 'Paris', units: 'metric' };
    const envelope = { ...toolMessage(weather, 'Sunny, 21 °C'), id: 'msg-tool-1', artifact: { raw: { celsius: 21 } } };

    const first = await modelCall(worker, run, 'model-1', [weather]);
    expect(first.finished.toolCalls).toMatchObject([{ toolCallId: 'call-weather', status: 'PENDING', declaredInput: { city: 'Paris' } }]);
    const started = await worker.recordToolStarted({
      lease: run.lease,
      toolCallId: weather.id,
      name: weather.name,
      effectiveInput,
      sequence: run.sequence.next(),
      observedAt: '2026-11-29T21:00:00.000Z',
      clock: clockAt(5_000),
    });
    expect(started.status).toBe('RUNNING');
    const finished = await worker.recordToolFinished({
      lease: run.lease,
      toolCallId: weather.id,
      output: envelope,
      sequence: run.sequence.next(),
      observedAt: '2026-11-29T21:00:01.500Z',
      clock: clockAt(6_500),
    });
    expect(finished).toMatchObject({ status: 'COMPLETED', durationMs: 1500 });
    const second = await modelCall(worker, run, 'model-2');
    const ended = await worker.finishRun({ lease: run.lease, status: 'COMPLETED' });
    expect(ended.status).toBe('COMPLETED');

    const { items, truncated } = await owner.threadAudits(threadId);
    expect(truncated).toBe(false);
    expect(items.map((item) => [item.__typename, item.operationId, item.sequence, item.finishedSequence, item.status])).toEqual([
      ['ModelAudit', 'model-1', '1', '2', 'COMPLETED'],
      ['ToolAudit', 'call-weather', '3', '4', 'COMPLETED'],
      ['ModelAudit', 'model-2', '5', '6', 'COMPLETED'],
    ]);

    const [tool] = toolAudits(items);
    const toolCall = {
      id: expect.any(String),
      toolCallId: 'call-weather',
      name: 'get_weather',
      declaredInput: { city: 'Paris' },
      effectiveInput,
      status: 'COMPLETED',
      output: 'Sunny, 21 °C',
      error: null,
      startedAt: '2026-11-29T21:00:00.000Z',
      finishedAt: '2026-11-29T21:00:01.500Z',
      durationMs: 1500,
    };
    expect(tool).toEqual({
      __typename: 'ToolAudit',
      id: started.id,
      runId: run.runId,
      role: 'TOOL',
      operationId: 'call-weather',
      sequence: '3',
      finishedSequence: '4',
      status: 'COMPLETED',
      startedAt: '2026-11-29T21:00:00.000Z',
      finishedAt: '2026-11-29T21:00:01.500Z',
      durationMs: 1500,
      toolCallId: 'call-weather',
      name: 'get_weather',
      effectiveInput,
      output: envelope,
      error: null,
      awaitingRunTerminal: false,
      toolCall,
      declaredBy: { id: first.started.id, operationId: 'model-1' },
    });

    const [model1, model2] = modelAudits(items);
    expect(model1).toEqual({
      __typename: 'ModelAudit',
      id: first.started.id,
      runId: run.runId,
      role: 'ASSISTANT',
      operationId: 'model-1',
      sequence: '1',
      finishedSequence: '2',
      status: 'COMPLETED',
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      // Measured on the client's per-process monotonic clock, which it filled in itself.
      durationMs: expect.any(Number),
      model: 'e2e-model',
      input: { messages: [{ role: 'user', content: 'prompt of model-1' }] },
      output: { role: 'assistant', content: 'reply of model-1', tool_calls: [weather] },
      error: null,
      usage: { input_tokens: 100, output_tokens: 20 },
      toolCalls: [toolCall],
    });
    expect(model2).toMatchObject({ id: second.started.id, status: 'COMPLETED', durationMs: expect.any(Number), toolCalls: [] });
    expect(model1!.durationMs).toBeGreaterThanOrEqual(0);

    const projected = await owner.run(run.runId);
    expect(projected?.toolCalls).toEqual([toolCall]);

    // Each change is one event, delivered in commit order; the last one of each audit is its final state.
    const auditEvents = await audits.waitFor(6);
    expect(auditEvents.map((event) => `${event.__typename} ${event.operationId}`)).toEqual([
      'ModelAudit model-1',
      'ModelAudit model-1',
      'ToolAudit call-weather',
      'ToolAudit call-weather',
      'ModelAudit model-2',
      'ModelAudit model-2',
    ]);
    for (const item of items) {
      expect(lastEventOf(auditEvents, item.id)).toMatchObject({ status: item.status, finishedSequence: item.finishedSequence });
    }
    expect(lastEventOf(auditEvents, tool!.id)).toMatchObject({ output: envelope, toolCall: { status: 'COMPLETED', output: 'Sunny, 21 °C' } });
    const toolEvents = await tools.waitFor(2);
    expect(toolEvents.map((event) => event.id)).toEqual([tool!.id, tool!.id]);
    expect(toolEvents[1]).toMatchObject({ status: 'COMPLETED', finishedSequence: '4', output: envelope });
  });

  it('tool error: a controlled error fails at once; a bare error fails with the run', async () => {
    const { owner, worker, threadId, tools, startRun } = await openThread('tool error');
    const run = await startRun();
    const lookup = { id: 'call-lookup', name: 'lookup_invoice', args: { invoice: 42 } };
    const email = { id: 'call-email', name: 'send_email', args: { to: 'me@example.com' } };
    await modelCall(worker, run, 'model-1', [lookup, email]);

    await worker.recordToolStarted({ lease: run.lease, toolCallId: lookup.id, name: lookup.name, effectiveInput: lookup.args, sequence: run.sequence.next() });
    const controlled = toolMessage(lookup, 'Invoice 42 not found', 'error');
    const failed = await worker.recordToolFinished({ lease: run.lease, toolCallId: lookup.id, output: controlled, sequence: run.sequence.next() });
    expect(failed).toMatchObject({ status: 'FAILED', output: controlled, awaitingRunTerminal: false });

    await worker.recordToolStarted({ lease: run.lease, toolCallId: email.id, name: email.name, effectiveInput: email.args, sequence: run.sequence.next() });
    const bareError = { type: 'ConnectionError', message: 'SMTP server timed out' };
    const awaiting = await worker.recordToolError({ lease: run.lease, toolCallId: email.id, error: bareError, sequence: run.sequence.next() });
    expect(awaiting).toMatchObject({ status: 'RUNNING', awaitingRunTerminal: true, error: bareError, finishedSequence: '6' });

    const finalToolMessage = toolMessage(email, 'SMTP server timed out', 'error');
    const ended = await worker.finishRun({
      lease: run.lease,
      status: 'FAILED',
      error: { message: 'send_email failed' },
      // The whole checkpoint, as docs/runtime-authors.md says to pass it: a long conversation past
      // the server's 8 MiB body limit, a NUL (which PostgreSQL's JSON cannot store) and an earlier
      // success that the last error supersedes. The client sends what can settle a bare error.
      stateMessages: [
        { type: 'human', content: 'Email me invoice 42.' },
        ...Array.from({ length: 9 }, () => ({ type: 'ai', content: 'x'.repeat(1024 * 1024 - 100) })),
        { type: 'ai', content: 'a\u0000b' },
        toolMessage(email, 'sent'),
        finalToolMessage,
      ],
    });
    expect(ended).toMatchObject({ status: 'FAILED', error: { message: 'send_email failed' }, leaseOwner: null });

    const { items } = await owner.threadAudits(threadId);
    expect(items.map((item) => [item.operationId, item.status])).toEqual([
      ['model-1', 'COMPLETED'],
      ['call-lookup', 'FAILED'],
      ['call-email', 'FAILED'],
    ]);
    const [lookupAudit, emailAudit] = toolAudits(items);
    expect(lookupAudit).toMatchObject({
      output: controlled,
      // A controlled failure carries its reason: the output's content.
      error: { message: 'Invoice 42 not found' },
      finishedSequence: '4',
      toolCall: { status: 'FAILED', output: 'Invoice 42 not found', error: { message: 'Invoice 42 not found' } },
    });
    // The run's final state completed the bare error: its output, with the error observation kept.
    expect(emailAudit).toMatchObject({
      awaitingRunTerminal: false,
      output: finalToolMessage,
      error: bareError,
      finishedSequence: '6',
      durationMs: expect.any(Number),
      toolCall: { status: 'FAILED', output: 'SMTP server timed out', error: bareError },
    });

    // start, terminal; start, error observation, convergence.
    const toolEvents = await tools.waitFor(5);
    expect(toolEvents.map((event) => event.toolCallId)).toEqual(['call-lookup', 'call-lookup', 'call-email', 'call-email', 'call-email']);
    expect(lastEventOf(toolEvents, lookupAudit!.id)).toMatchObject({ status: 'FAILED' });
    expect(lastEventOf(toolEvents, emailAudit!.id)).toMatchObject({ status: 'FAILED', output: finalToolMessage, awaitingRunTerminal: false });
  });

  it('cancel mid-tool: the open audits and ToolCalls are CANCELLED and every later worker write is LEASE_LOST', async () => {
    const { who, owner, worker, threadId, tools, startRun } = await openThread('cancel');
    // Renewed every 5 s, each renewal with 10 s to commit before the lease expires: room for a
    // loaded machine (a 6 s lease left 4 s, and its expiry would end the run before the cancel).
    const run = await startRun(undefined, 15);
    let lostCalls = 0;
    const keeper = new LeaseKeeper(worker, run.lease, { leaseSeconds: 15, onLost: () => lostCalls++ });
    const lost = new Promise<unknown>((resolve) => keeper.signal.addEventListener('abort', () => resolve(keeper.signal.reason)));
    try {
      const exportA = { id: 'call-export-a', name: 'export_orders', args: { shard: 'a' } };
      const exportB = { id: 'call-export-b', name: 'export_orders', args: { shard: 'b' } };
      const notify = { id: 'call-notify', name: 'notify', args: { channel: 'ops' } };
      await modelCall(worker, run, 'model-1', [exportA, exportB, notify]);
      // Parallel tool calls: each takes its sequence number when it starts, before the request.
      await Promise.all(
        [exportA, exportB].map((call) => {
          const sequence = run.sequence.next();
          return worker.recordToolStarted({ lease: keeper.lease, toolCallId: call.id, name: call.name, effectiveInput: call.args, sequence });
        }),
      );

      const cancelled = await owner.cancelRun(run.runId);
      expect(cancelled).toMatchObject({ status: 'CANCELLED', leaseOwner: null, error: { code: 'CANCELLED' } });

      // The keeper's next renewal finds the lease gone and tells the worker.
      const reason = await withTimeout(lost, 20_000, () => 'the lease keeper never reported the lost lease');
      expect(reason).toBeInstanceOf(AuditApiError);
      expect((reason as AuditApiError).code).toBe('LEASE_LOST');
      expect(lostCalls).toBe(1);

      const lateWrites = [
        () => worker.recordToolFinished({ lease: keeper.lease, toolCallId: exportA.id, output: toolMessage(exportA, 'exported 10000 orders'), sequence: run.sequence.next() }),
        () => worker.recordToolError({ lease: keeper.lease, toolCallId: exportB.id, error: { message: 'too late' }, sequence: run.sequence.next() }),
        () => worker.recordModelStarted({ lease: keeper.lease, operationId: 'model-2', sequence: run.sequence.next() }),
        () => worker.renewLease(keeper.lease, 15),
        () => worker.finishRun({ lease: keeper.lease, status: 'COMPLETED' }),
      ];
      for (const write of lateWrites) {
        const error = await rejectionOf(write());
        expect(error).toMatchObject({ code: 'LEASE_LOST', runStatus: 'CANCELLED' });
        // Final: the client sent it once, no retry loop.
        expect(error.attempts).toBe(1);
      }
    } finally {
      keeper.stop();
    }

    const { items } = await owner.threadAudits(threadId);
    expect(items.map((item) => [item.operationId, item.status])).toEqual([
      ['model-1', 'COMPLETED'],
      ['call-export-a', 'CANCELLED'],
      ['call-export-b', 'CANCELLED'],
    ]);
    for (const audit of toolAudits(items)) {
      expect(audit).toMatchObject({
        output: null,
        awaitingRunTerminal: false,
        finishedAt: expect.any(String),
        finishedSequence: null,
        durationMs: null,
        error: { code: 'RUN_CANCELLED' },
        toolCall: { status: 'CANCELLED', output: null },
      });
    }
    const projected = await owner.run(run.runId);
    expect(projected).toMatchObject({ status: 'CANCELLED', error: { code: 'CANCELLED', cancelledBy: who.ownerSub } });
    // The call that never started is still the model's declared intent.
    expect(projected!.toolCalls.map((call) => [call.toolCallId, call.status])).toEqual([
      ['call-export-a', 'CANCELLED'],
      ['call-export-b', 'CANCELLED'],
      ['call-notify', 'PENDING'],
    ]);

    const toolEvents = await tools.waitFor(4);
    const started = toolEvents.slice(0, 2).map((event) => event.toolCallId).sort();
    expect(started).toEqual(['call-export-a', 'call-export-b']);
    expect(toolEvents.slice(2).map((event) => [event.toolCallId, event.status])).toEqual([
      ['call-export-a', 'CANCELLED'],
      ['call-export-b', 'CANCELLED'],
    ]);
  }, 90_000);

  it('interrupt -> resume with the same tool_call_id -> completed, a ~300 KB output kept whole', async () => {
    const { owner, worker, threadId, audits, startRun } = await openThread('interrupt and resume');
    const first = await startRun();
    const payment = { id: 'call-pay', name: 'pay_invoice', args: { invoice: 7, amount: 120 } };
    const declaring = await modelCall(worker, first, 'model-1', [payment]);
    await worker.recordToolStarted({ lease: first.lease, toolCallId: payment.id, name: payment.name, effectiveInput: payment.args, sequence: first.sequence.next() });
    const interrupt = { type: 'GraphInterrupt', value: { question: 'Approve paying 120?' } };
    await worker.recordToolError({ lease: first.lease, toolCallId: payment.id, error: interrupt, sequence: first.sequence.next() });
    expect(await worker.finishRun({ lease: first.lease, status: 'INTERRUPTED' })).toMatchObject({ status: 'INTERRUPTED' });

    const pending = await owner.run(first.runId);
    expect(pending!.toolCalls).toMatchObject([{ toolCallId: 'call-pay', status: 'PENDING', effectiveInput: null, output: null }]);

    const resumed = await startRun(first.runId);
    const approvedInput = { ...payment.args, approved: true };
    const restarted = await worker.recordToolStarted({
      lease: resumed.lease,
      toolCallId: payment.id,
      name: payment.name,
      effectiveInput: approvedInput,
      sequence: resumed.sequence.next(),
    });
    expect(restarted).toMatchObject({ runId: resumed.runId, status: 'RUNNING', sequence: '1' });

    const content = Array.from({ length: 3_000 }, (_, i) => `${String(i).padStart(5, '0')} paid line ${i} ${'x'.repeat(80)}`).join('\n');
    expect(Buffer.byteLength(content)).toBeGreaterThan(290_000);
    const envelope = { ...toolMessage(payment, content), artifact: { receipt: 'PAY-7' } };
    await worker.recordToolFinished({ lease: resumed.lease, toolCallId: payment.id, output: envelope, sequence: resumed.sequence.next() });
    await modelCall(worker, resumed, 'model-2');
    expect(await worker.finishRun({ lease: resumed.lease, status: 'COMPLETED' })).toMatchObject({ status: 'COMPLETED' });

    const { items } = await owner.threadAudits(threadId);
    expect(items.map((item) => [item.runId, item.operationId, item.sequence, item.status])).toEqual([
      [first.runId, 'model-1', '1', 'COMPLETED'],
      [first.runId, 'call-pay', '3', 'INTERRUPTED'],
      [resumed.runId, 'call-pay', '1', 'COMPLETED'],
      [resumed.runId, 'model-2', '3', 'COMPLETED'],
    ]);
    const [interrupted, completed] = toolAudits(items);
    expect(interrupted).toMatchObject({ output: null, error: interrupt, effectiveInput: payment.args, awaitingRunTerminal: false });
    // Bound to the model call of the first run, and the same ToolCall, now run to completion.
    expect(completed!.declaredBy).toEqual({ id: declaring.started.id, operationId: 'model-1' });
    expect(completed!.toolCall.id).toBe(interrupted!.toolCall.id);
    expect(completed!.effectiveInput).toEqual(approvedInput);
    expect(completed!.output).toEqual(envelope);
    expect((completed!.output as JsonObject).content).toBe(content);
    expect(completed!.toolCall).toMatchObject({ status: 'COMPLETED', effectiveInput: approvedInput, declaredInput: payment.args });
    expect(completed!.toolCall.output).toBe(content);

    // run 1: model x2, tool start, error, interrupt; run 2: tool start, terminal, model x2.
    const auditEvents = await audits.waitFor(9);
    expect(lastEventOf(auditEvents, completed!.id)).toMatchObject({ status: 'COMPLETED', output: envelope });
    expect(lastEventOf(auditEvents, interrupted!.id)).toMatchObject({ status: 'INTERRUPTED' });
  });

  it('lost responses: every lifecycle call is replayed after it committed, and the timeline is as if sent once', async () => {
    const network = losingFirstResponses();
    const { owner, worker, threadId, audits, startRun } = await openThread('lost responses', {
      fetch: network,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
    });
    // The claim's answer is lost too: the replayed claim carries its claimId and gets the same lease back.
    const run = await startRun();
    expect(run.lease).toMatchObject({ runId: run.runId, epoch: 1 });

    const search = { id: 'call-search', name: 'search', args: { q: 'audit' } };
    const fetchPage = { id: 'call-fetch', name: 'fetch_page', args: { url: 'https://example.com' } };
    const declaring = await modelCall(worker, run, 'model-1', [search, fetchPage]);
    expect(declaring.finished.toolCalls.map((call) => call.status)).toEqual(['PENDING', 'PENDING']);

    const started = await worker.recordToolStarted({ lease: run.lease, toolCallId: search.id, name: search.name, effectiveInput: search.args, sequence: run.sequence.next() });
    const result = toolMessage(search, '3 results');
    const finished = await worker.recordToolFinished({ lease: run.lease, toolCallId: search.id, output: result, sequence: run.sequence.next() });
    expect(finished).toMatchObject({ id: started.id, status: 'COMPLETED', startedAt: started.startedAt });
    await worker.recordToolStarted({ lease: run.lease, toolCallId: fetchPage.id, name: fetchPage.name, effectiveInput: fetchPage.args, sequence: run.sequence.next() });
    const timeout = { type: 'TimeoutError', message: 'no answer in 10 s' };
    const errored = await worker.recordToolError({ lease: run.lease, toolCallId: fetchPage.id, error: timeout, sequence: run.sequence.next() });
    expect(errored).toMatchObject({ status: 'RUNNING', awaitingRunTerminal: true, error: timeout });
    await worker.renewLease(run.lease, 60);

    // An ended run refuses every lifecycle write, the replayed finish included: LEASE_LOST after
    // more than one attempt is the one ambiguous answer; the refusal names how the run ended,
    // and the owner's read says the rest.
    const finishing = await rejectionOf(worker.finishRun({ lease: run.lease, status: 'FAILED', error: { message: 'fetch_page timed out' } }));
    expect(finishing).toMatchObject({ code: 'LEASE_LOST', attempts: 2, runStatus: 'FAILED' });
    expect(await owner.run(run.runId)).toMatchObject({ status: 'FAILED', error: { message: 'fetch_page timed out' } });

    expect(network.lost).toEqual([
      'ClaimRun',
      'RecordModelStarted',
      'RecordModelFinished',
      'RecordToolStarted',
      'RecordToolFinished',
      'RecordToolStarted',
      'RecordToolError',
      'RenewLease',
      'FinishRun',
    ]);

    const { items } = await owner.threadAudits(threadId);
    expect(items.map((item) => [item.operationId, item.sequence, item.finishedSequence, item.status])).toEqual([
      ['model-1', '1', '2', 'COMPLETED'],
      ['call-search', '3', '4', 'COMPLETED'],
      ['call-fetch', '5', '6', 'FAILED'],
    ]);
    expect(toolAudits(items)[0]).toMatchObject({ output: result, toolCall: { status: 'COMPLETED', output: '3 results' } });
    expect(toolAudits(items)[1]).toMatchObject({ error: timeout, toolCall: { status: 'FAILED' } });

    // A replay changes nothing, so it publishes nothing: one event per change, the convergence last.
    const events = await audits.waitUntil((all) => all.some((event) => event.operationId === 'call-fetch' && event.status === 'FAILED'));
    expect(events.map((event) => event.operationId)).toEqual(['model-1', 'model-1', 'call-search', 'call-search', 'call-fetch', 'call-fetch', 'call-fetch']);
  });
});
