import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../support/app.js';
import { backendName } from '../support/database.js';
import { WorkerSession, actors, claim, claimRunMutation, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { delivered, subscribeLive } from '../support/streams.js';
import { startListeningApp, testRedisUrl, type ListeningApp } from './support.js';

// SEMANTICS.md, "Subscriptions": every committed change reaches live subscribers over graphql-ws
// (a real socket) and SSE, in commit order, re-read after the commit; a rejected write sends nothing.

const TOOL_STATUS = `subscription($threadId: ID!, $runId: ID) {
  toolStatusChanged(threadId: $threadId, runId: $runId) {
    id runId toolCallId status awaitingRunTerminal error output toolCall { status output }
  }
}`;
const AUDITS = `subscription($threadId: ID!) {
  auditChanged(threadId: $threadId) {
    __typename id runId operationId status
    ... on ToolAudit { awaitingRunTerminal toolCall { status } }
    ... on ModelAudit { toolCalls { toolCallId status } }
  }
}`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status leaseOwner error } }`;
const CANCEL = `mutation($runId: ID!) { result: cancelRun(runId: $runId) { id status } }`;

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

describe(`live delivery (${backendName}, ${testRedisUrl ? 'Redis' : 'in-process'} pub/sub)`, () => {
  it('a tool goes RUNNING, then to its terminal status, on both transports', async () => {
    const { session, owner, threadId, runId } = await runningRun(t);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const streams = await subscribeLive(t.app, t.url, 'audit', TOOL_STATUS, { threadId, runId }, owner);

    must(await session.toolStarted('call-1', 'search', { effectiveInput: { q: 'x' } }));
    for (const events of await delivered(streams, 1, 'toolStatusChanged')) {
      expect(events).toMatchObject([{ runId, toolCallId: 'call-1', status: 'RUNNING', toolCall: { status: 'RUNNING' } }]);
    }
    must(await session.toolFinished('call-1', { content: 'found', status: 'success' }));
    for (const events of await delivered(streams, 2, 'toolStatusChanged')) {
      expect(events.map((event) => event.status)).toEqual(['RUNNING', 'COMPLETED']);
      // Re-read after the commit: nested data is the committed state too, not the first event's.
      expect(events[1]).toMatchObject({ output: { content: 'found' }, toolCall: { status: 'COMPLETED', output: 'found' } });
    }
  });

  it('a bare error is observed while the tool stays RUNNING; the run verdict closes it', async () => {
    const { session, owner, threadId, runId } = await runningRun(t);
    await session.declare('m1', [{ id: 'call-1', name: 'fetch' }]);
    const streams = await subscribeLive(t.app, t.url, 'audit', TOOL_STATUS, { threadId }, owner);

    must(await session.toolStarted('call-1', 'fetch'));
    await delivered(streams, 1, 'toolStatusChanged');
    must(await session.toolError('call-1', { message: 'connection reset' }));
    await delivered(streams, 2, 'toolStatusChanged');
    must(await session.finish('FAILED', { error: { message: 'gave up' } }));
    for (const events of await delivered(streams, 3, 'toolStatusChanged')) {
      expect(events).toMatchObject([
        { runId, status: 'RUNNING', awaitingRunTerminal: false, error: null },
        { status: 'RUNNING', awaitingRunTerminal: true, error: { message: 'connection reset' } },
        { status: 'FAILED', awaitingRunTerminal: false, toolCall: { status: 'FAILED' } },
      ]);
    }
  });

  it('toolStatusChanged with a runId leaves out the other runs of the thread', async () => {
    const first = await runningRun(t);
    const secondRunId = await createRun(t, first.owner, first.threadId);
    const second = await claim(t, first.worker, secondRunId);
    await first.session.declare('m1', [{ id: 'call-1', name: 'a' }]);
    await second.declare('m1', [{ id: 'call-2', name: 'b' }]);
    const streams = await subscribeLive(t.app, t.url, 'audit', TOOL_STATUS, { threadId: first.threadId, runId: secondRunId }, first.owner);

    must(await first.session.toolStarted('call-1', 'a'));
    must(await second.toolStarted('call-2', 'b'));
    for (const events of await delivered(streams, 1, 'toolStatusChanged')) {
      expect(events).toMatchObject([{ runId: secondRunId, toolCallId: 'call-2' }]);
    }
  });

  it('cancelling a run sends each audit it closes, then the run, on both transports', async () => {
    const { session, owner, threadId, runId } = await runningRun(t);
    await session.declare('m1', [
      { id: 'call-a', name: 'a' },
      { id: 'call-b', name: 'b' },
    ]);
    must(await session.toolStarted('call-a', 'a'));
    must(await session.toolStarted('call-b', 'b'));
    must(await session.toolError('call-b', { message: 'interrupted?' }));
    must(await session.modelStarted('m2'));
    const audits = await subscribeLive(t.app, t.url, 'audit', AUDITS, { threadId }, owner);
    const runs = await subscribeLive(t.app, t.url, 'run', RUNS, { threadId }, owner);

    expect(must(await t.gql(CANCEL, { runId }, owner))).toMatchObject({ status: 'CANCELLED' });
    for (const events of await delivered(audits, 3, 'auditChanged')) {
      expect(events).toMatchObject([
        { __typename: 'ToolAudit', operationId: 'call-a', status: 'CANCELLED', toolCall: { status: 'CANCELLED' } },
        { __typename: 'ToolAudit', operationId: 'call-b', status: 'CANCELLED', awaitingRunTerminal: false },
        { __typename: 'ModelAudit', operationId: 'm2', status: 'CANCELLED' },
      ]);
    }
    for (const events of await delivered(runs, 1, 'runChanged')) {
      expect(events).toMatchObject([{ id: runId, status: 'CANCELLED', leaseOwner: null, error: { code: 'CANCELLED' } }]);
    }
  });

  it('every committed change of a run sends one event, in commit order', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const audits = await subscribeLive(t.app, t.url, 'audit', AUDITS, { threadId }, who.owner);
    const runs = await subscribeLive(t.app, t.url, 'run', RUNS, { threadId }, who.owner);
    const auditStates: string[] = [];
    const runStates: string[] = [];
    // Each step waits for its events, so every payload shows the state that step committed.
    const step = async (change: () => Promise<unknown>, expected: { audits?: string[]; runs?: string[] }) => {
      await change();
      auditStates.push(...(expected.audits ?? []));
      runStates.push(...(expected.runs ?? []));
      for (const events of await delivered(audits, auditStates.length, 'auditChanged')) {
        expect(events.map((e) => `${e.operationId}:${e.status}${e.awaitingRunTerminal ? ':awaiting' : ''}`)).toEqual(auditStates);
      }
      for (const events of await delivered(runs, runStates.length, 'runChanged')) {
        expect(events.map((e) => e.status)).toEqual(runStates);
      }
    };

    let runId = '';
    let session: WorkerSession | undefined;
    await step(async () => (runId = await createRun(t, who.owner, threadId)), { runs: ['QUEUED'] });
    await step(async () => (session = await claim(t, who.worker, runId)), { runs: ['RUNNING'] });
    await step(async () => must(await session!.modelStarted('m1')), { audits: ['m1:RUNNING'] });
    const declared = [{ id: 'c1', name: 'x' }, { id: 'c2', name: 'y' }];
    await step(async () => must(await session!.modelFinished('m1', declared)), { audits: ['m1:COMPLETED'] });
    await step(async () => must(await session!.toolStarted('c1', 'x')), { audits: ['c1:RUNNING'] });
    await step(async () => must(await session!.toolFinished('c1', { content: 'ok' })), { audits: ['c1:COMPLETED'] });
    await step(async () => must(await session!.toolStarted('c2', 'y')), { audits: ['c2:RUNNING'] });
    await step(async () => must(await session!.toolError('c2', { message: 'lost' })), { audits: ['c2:RUNNING:awaiting'] });
    await step(async () => must(await session!.modelStarted('m2')), { audits: ['m2:RUNNING'] });
    // finishRun converges in its own transaction: each audit it closes, then the run.
    await step(async () => must(await session!.finish('COMPLETED')), {
      audits: ['c2:ABANDONED', 'm2:ABANDONED'],
      runs: ['COMPLETED'],
    });
  });

  it('an expired lease is swept: the open audits and the run are sent', async () => {
    const { session, owner, threadId, runId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'slow' }]);
    must(await session.toolStarted('c1', 'slow'));
    const audits = await subscribeLive(t.app, t.url, 'audit', AUDITS, { threadId }, owner);
    const runs = await subscribeLive(t.app, t.url, 'run', RUNS, { threadId }, owner);

    // The lease now ends in one second; the sweeper runs every 200 ms in tests.
    must(await session.renew(1));
    for (const events of await delivered(audits, 1, 'auditChanged')) {
      expect(events).toMatchObject([{ operationId: 'c1', status: 'ABANDONED', toolCall: { status: 'FAILED' } }]);
    }
    for (const events of await delivered(runs, 1, 'runChanged')) {
      expect(events).toMatchObject([{ id: runId, status: 'FAILED', error: { code: 'LEASE_EXPIRED' } }]);
    }
  });

  it('a rejected write sends nothing, nor does a replay that changes nothing', async () => {
    const { session, owner, worker, threadId, runId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'x' }]);
    const started = must(await session.toolStarted('c1', 'x', { effectiveInput: { v: 1 } }));
    const audits = await subscribeLive(t.app, t.url, 'audit', AUDITS, { threadId }, owner);
    const runs = await subscribeLive(t.app, t.url, 'run', RUNS, { threadId }, owner);

    const staleEpoch = new WorkerSession(t, worker, { runId, epoch: session.lease.epoch + 1 });
    expect(errorCode(await staleEpoch.toolFinished('c1', { content: 'late' }))).toBe('LEASE_LOST');
    expect(errorCode(await session.toolStarted('undeclared', 'x'))).toBe('MODEL_NOT_FOUND');
    expect(errorCode(await session.toolStarted('c1', 'x', { effectiveInput: { v: 2 } }))).toBe('CONFLICT');
    must(await session.toolStarted('c1', 'x', { effectiveInput: { v: 1 }, sequence: String(started.sequence) }));
    expect(errorCode(await t.gql(claimRunMutation, { input: { runId } }, worker))).toBe('INVALID_TRANSITION');
    must(await session.finish('INTERRUPTED'));
    expect(errorCode(await session.toolFinished('c1', { content: 'after the end' }))).toBe('LEASE_LOST');
    expect(errorCode(await t.gql(CANCEL, { runId }, owner))).toBe('INVALID_TRANSITION');

    // A fence: the next accepted writes. Everything before them is what was delivered.
    const nextRunId = await createRun(t, owner, threadId);
    // Payloads are read at delivery: let the QUEUED run be delivered before it is claimed.
    await delivered(runs, 2, 'runChanged');
    const next = await claim(t, worker, nextRunId);
    must(await next.modelStarted('fence'));
    for (const events of await delivered(audits, 2, 'auditChanged')) {
      expect(events.map((e) => `${e.runId === runId ? 'first' : 'next'}:${e.operationId}:${e.status}`)).toEqual([
        'first:c1:INTERRUPTED',
        'next:fence:RUNNING',
      ]);
    }
    for (const events of await delivered(runs, 3, 'runChanged')) {
      expect(events.map((e) => `${e.id === runId ? 'first' : 'next'}:${e.status}`)).toEqual([
        'first:INTERRUPTED',
        'next:QUEUED',
        'next:RUNNING',
      ]);
    }
  });
});
