import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { WorkerSession, claim, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { expectRejected, interruptAndResume, runningScene, threadState, toolAuditOf, type Scene } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const DECLARED_BY = `mutation($input: ToolStartedInput!) {
  result: recordToolStarted(input: $input) {
    id runId status declaredBy { id runId operationId } toolCall { id status declaredBy { operationId } }
  }
}`;

/** Starts a tool and returns which model audit it was bound to, as the worker reads it back. */
async function startAndBind(session: WorkerSession, toolCallId: string, name = 'search') {
  const response = await t.gql(
    DECLARED_BY,
    { input: { lease: session.lease, toolCallId, name, sequence: '1000', observedAt: new Date().toISOString() } },
    session.token,
  );
  return must(response);
}

const toolCallsOf = async (s: Scene, runId: string) =>
  (await threadState(s)).runs.find((run: any) => run.id === runId).toolCalls as any[];

describe('a tool start with no declaring model fails closed', () => {
  it('when no model call declared the tool_call_id: MODEL_NOT_FOUND, nothing written', async () => {
    const { session, scene: s, runId } = await runningScene(t);
    await session.declare('m1', [{ id: 'call-known', name: 'search' }]);
    await expectRejected(s, 'MODEL_NOT_FOUND', () => session.toolStarted('call-unknown', 'search'));
    const { audits } = await threadState(s);
    expect(audits.items.filter((item: any) => item.__typename === 'ToolAudit')).toEqual([]);
    expect((await toolCallsOf(s, runId)).map((call) => [call.toolCallId, call.status])).toEqual([['call-known', 'PENDING']]);
  });

  it('when the declaring model call has not finished yet: MODEL_NOT_FOUND', async () => {
    const { session, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1'));
    await expectRejected(s, 'MODEL_NOT_FOUND', () => session.toolStarted('call-1', 'search'));
  });

  it('when only a sibling run (not an ancestor) of the thread declared it: MODEL_NOT_FOUND', async () => {
    const { session, scene: s, owner, worker, threadId } = await runningScene(t);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const sibling = await claim(t, worker, await createRun(t, owner, threadId));
    await expectRejected(s, 'MODEL_NOT_FOUND', () => sibling.toolStarted('call-1', 'search'));
  });
});

describe('binding through the resume ancestry', () => {
  it('finds a tool declared three runs up', async () => {
    const { session: first, scene: s, runId: rootRunId } = await runningScene(t);
    const declaring = await first.declare('m-root', [{ id: 'call-deep', name: 'search', args: { q: 1 } }]);
    const second = await interruptAndResume(s, first);
    await second.declare('m-second', []);
    const third = await interruptAndResume(s, second);
    const fourth = await interruptAndResume(s, third);

    const started = await startAndBind(fourth, 'call-deep');

    expect(started).toMatchObject({
      runId: fourth.lease.runId,
      status: 'RUNNING',
      declaredBy: { id: declaring.id, runId: rootRunId, operationId: 'm-root' },
      toolCall: { status: 'RUNNING', declaredBy: { operationId: 'm-root' } },
    });
    // The ToolCall stays in the declaring run's projection; the audit is in the run that executed it.
    expect((await toolCallsOf(s, rootRunId)).map((call) => [call.toolCallId, call.status])).toEqual([['call-deep', 'RUNNING']]);
    expect(await toolCallsOf(s, fourth.lease.runId)).toEqual([]);
    expect((await toolAuditOf(s, fourth.lease.runId, 'call-deep')).declaredBy).toEqual({
      id: declaring.id,
      runId: rootRunId,
      operationId: 'm-root',
    });
  });

  it('binds to the nearest declaration: the current run before its ancestors', async () => {
    const { session: first, scene: s } = await runningScene(t);
    await first.declare('m-old', [{ id: 'call-again', name: 'search' }]);
    const second = await interruptAndResume(s, first);
    const nearest = await second.declare('m-new', [{ id: 'call-again', name: 'search' }]);

    const started = await startAndBind(second, 'call-again');

    expect(started.declaredBy).toMatchObject({ id: nearest.id, operationId: 'm-new' });
    expect((await toolAuditOf(s, second.lease.runId, 'call-again')).declaredBy).toEqual({
      id: nearest.id,
      runId: second.lease.runId,
      operationId: 'm-new',
    });
    expect((await toolCallsOf(s, first.lease.runId)).map((call) => call.status)).toEqual(['PENDING']);
    expect((await toolCallsOf(s, second.lease.runId)).map((call) => call.status)).toEqual(['RUNNING']);
  });

  it('binds to the nearest ancestor before the farther ones', async () => {
    const { session: first, scene: s } = await runningScene(t);
    await first.declare('m-far', [{ id: 'call-again', name: 'search' }]);
    const second = await interruptAndResume(s, first);
    const near = await second.declare('m-near', [{ id: 'call-again', name: 'search' }]);
    const third = await interruptAndResume(s, second);

    expect((await startAndBind(third, 'call-again')).declaredBy).toMatchObject({ id: near.id, operationId: 'm-near' });
  });

  it('within one run, binds to the newest of several model calls declaring the same id', async () => {
    const { session, scene: s, runId } = await runningScene(t);
    await session.declare('m-1', [{ id: 'call-reused', name: 'search', args: { page: 1 } }]);
    const newest = await session.declare('m-2', [{ id: 'call-reused', name: 'search', args: { page: 2 } }]);

    const started = await startAndBind(session, 'call-reused');

    expect(started.declaredBy).toMatchObject({ id: newest.id, operationId: 'm-2' });
    const calls = await toolCallsOf(s, runId);
    expect(calls.map((call) => [call.declaredInput, call.status])).toEqual([
      [{ page: 1 }, 'PENDING'],
      [{ page: 2 }, 'RUNNING'],
    ]);
  });

  it('runs the same tool_call_id again in a resumed run after an interrupt: a new audit, the same declaration', async () => {
    const { session: first, scene: s } = await runningScene(t);
    const declaring = await first.declare('m1', [{ id: 'call-1', name: 'search' }]);
    must(await first.toolStarted('call-1', 'search', { effectiveInput: { attempt: 1 } }));
    must(await first.toolError('call-1', { type: 'GraphInterrupt' }));
    const second = await interruptAndResume(s, first);
    expect((await toolCallsOf(s, first.lease.runId)).map((call) => call.status)).toEqual(['PENDING']);

    const again = must(await second.toolStarted('call-1', 'search', { effectiveInput: { attempt: 2 } }));
    must(await second.toolFinished('call-1', { content: 'second time lucky' }));

    expect(again.runId).toBe(second.lease.runId);
    expect((await toolAuditOf(s, first.lease.runId, 'call-1')).status).toBe('INTERRUPTED');
    expect(await toolAuditOf(s, second.lease.runId, 'call-1')).toMatchObject({
      status: 'COMPLETED',
      effectiveInput: { attempt: 2 },
      declaredBy: { id: declaring.id },
    });
    expect(await toolCallsOf(s, first.lease.runId)).toEqual([
      expect.objectContaining({ status: 'COMPLETED', effectiveInput: { attempt: 2 }, output: 'second time lucky' }),
    ]);
  });

  it('keeps a pending call pending: a historical result for the same id is not its result', async () => {
    const { session: first, scene: s } = await runningScene(t);
    await first.declare('m1', [{ id: 'call-h', name: 'search' }]);
    must(await first.toolStarted('call-h', 'search'));
    must(await first.toolFinished('call-h', { content: 'old result' }));
    const second = await interruptAndResume(s, first);
    await second.declare('m2', [{ id: 'call-h', name: 'search', args: { fresh: true } }]);

    expect(await toolCallsOf(s, second.lease.runId)).toEqual([
      expect.objectContaining({ status: 'PENDING', output: null, effectiveInput: null, startedAt: null, finishedAt: null }),
    ]);
    // The historical call has ended; the pending one still starts, bound to its own declaration.
    const started = await startAndBind(second, 'call-h');
    expect(started).toMatchObject({ status: 'RUNNING', declaredBy: { operationId: 'm2' } });
    expect((await toolCallsOf(s, first.lease.runId))[0]).toMatchObject({ status: 'COMPLETED', output: 'old result' });
  });
});

describe('a broken resume ancestry is an error, never skipped', () => {
  it('createRun refuses to resume a run of another thread', async () => {
    const { session, owner } = await runningRun(t);
    must(await session.finish('INTERRUPTED'));
    const otherThread = await createThread(t, owner);
    const response = await t.gql(
      `mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`,
      { input: { threadId: otherThread, resumeFromRunId: session.lease.runId } },
      owner,
    );
    expect(errorCode(response)).toBe('INVALID_TRANSITION');
  });

  it('a cross-thread ancestor that declared the call fails the start closed', async () => {
    // Thread A's run declared call-x and ended; a run in thread B is linked to it behind the API's back.
    const { session: foreign, scene: foreignScene } = await runningScene(t);
    await foreign.declare('m-foreign', [{ id: 'call-x', name: 'search' }]);
    must(await foreign.finish('INTERRUPTED'));
    const { session: local, scene: s, runId } = await runningScene(t);
    await t.app.db.driver.query('UPDATE run SET resumed_from_id = $1::uuid WHERE id = $2::uuid', [foreign.lease.runId, runId]);
    const foreignBefore = await threadState(foreignScene);

    await expectRejected(s, 'INVALID_TRANSITION', () => local.toolStarted('call-x', 'search'));
    expect(await threadState(foreignScene)).toEqual(foreignBefore);
  });

  it('a cross-thread link further up fails closed even when that ancestor declared nothing', async () => {
    const { session: foreign } = await runningRun(t);
    must(await foreign.finish('INTERRUPTED'));
    const { session: first, scene: s } = await runningScene(t);
    const second = await interruptAndResume(s, first);
    await t.app.db.driver.query('UPDATE run SET resumed_from_id = $1::uuid WHERE id = $2::uuid', [
      foreign.lease.runId,
      first.lease.runId,
    ]);
    await expectRejected(s, 'INVALID_TRANSITION', () => second.toolStarted('call-nowhere', 'search'));
  });

  it('a cycle in the ancestry fails the start closed', async () => {
    const { session: first, scene: s } = await runningScene(t);
    const second = await interruptAndResume(s, first);
    must(await second.finish('INTERRUPTED'));
    const third = await claim(t, first.token, await createRun(t, s.owner, s.threadId, second.lease.runId));
    await t.app.db.driver.query('UPDATE run SET resumed_from_id = $1::uuid WHERE id = $2::uuid', [
      second.lease.runId,
      first.lease.runId,
    ]);
    await expectRejected(s, 'INVALID_TRANSITION', () => third.toolStarted('call-1', 'search'));
  });
});
