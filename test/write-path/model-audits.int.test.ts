import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { clockAt, must, runningRun } from '../support/lifecycle.js';
import { at, expectRejected, runningScene, threadState } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('recordModelStarted', () => {
  it('creates a RUNNING ASSISTANT audit with the start observation', async () => {
    const { session, runId } = await runningRun(t);
    const audit = must(
      await session.modelStarted('m1', { sequence: '7', model: 'gpt-x', input: { messages: ['hi'] }, observedAt: at(1) }),
    );
    expect(audit).toMatchObject({
      runId,
      role: 'ASSISTANT',
      operationId: 'm1',
      sequence: '7',
      status: 'RUNNING',
      model: 'gpt-x',
      input: { messages: ['hi'] },
      startedAt: at(1),
      finishedAt: null,
      finishedSequence: null,
      durationMs: null,
      toolCalls: [],
    });
  });

  it('replayed returns the existing row: the first startedAt and monotonic origin are kept', async () => {
    const { session } = await runningRun(t);
    const first = must(await session.modelStarted('m1', { sequence: '1', input: { q: 1 }, observedAt: at(1), clock: clockAt(100) }));
    const replay = must(await session.modelStarted('m1', { sequence: '1', input: { q: 1 }, observedAt: at(9), clock: clockAt(900) }));
    expect(replay).toEqual(first);
    const finished = must(await session.modelFinished('m1', [], { sequence: '2', observedAt: at(10), clock: clockAt(1000) }));
    expect(finished).toMatchObject({ startedAt: at(1), durationMs: 900 });
    // A start replayed after the finish still returns the row, unchanged.
    expect(must(await session.modelStarted('m1', { sequence: '1', input: { q: 1 } }))).toEqual(finished);
  });

  it.each([
    ['a different sequence', { sequence: '2', input: { q: 1 }, model: 'gpt' }],
    ['a different input', { sequence: '1', input: { q: 2 }, model: 'gpt' }],
    ['a missing input', { sequence: '1', model: 'gpt' }],
    ['a different model', { sequence: '1', input: { q: 1 }, model: 'other' }],
  ])('replayed with %s is CONFLICT and changes nothing', async (_what, replay) => {
    const { session, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1', input: { q: 1 }, model: 'gpt' }));
    await expectRejected(s, 'CONFLICT', () => session.modelStarted('m1', replay));
  });
});

describe('recordModelFinished', () => {
  it('closes the audit and declares one PENDING ToolCall per tool call, in order', async () => {
    const { session, runId, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1', { observedAt: at(1), clock: clockAt(0) }));
    const closed = must(
      await session.modelFinished(
        'm1',
        [
          { id: 'call-b', name: 'search', args: { q: 'b' } },
          { id: 'call-a', name: 'fetch' },
        ],
        { sequence: '5', output: { text: 'ok' }, usage: { tokens: 12 }, observedAt: at(2), clock: clockAt(1500) },
      ),
    );
    expect(closed).toMatchObject({
      status: 'COMPLETED',
      output: { text: 'ok' },
      usage: { tokens: 12 },
      error: null,
      finishedAt: at(2),
      finishedSequence: '5',
      durationMs: 1500,
    });
    expect(closed.toolCalls).toEqual([
      expect.objectContaining({ toolCallId: 'call-b', name: 'search', status: 'PENDING', declaredInput: { q: 'b' } }),
      expect.objectContaining({ toolCallId: 'call-a', name: 'fetch', status: 'PENDING', declaredInput: null }),
    ]);
    const { runs } = await threadState(s);
    const projected = runs.find((run: any) => run.id === runId).toolCalls;
    expect(projected.map((call: any) => [call.id, call.status, call.effectiveInput, call.output])).toEqual(
      closed.toolCalls.map((call: any) => [call.id, 'PENDING', null, null]),
    );
  });

  it('records a FAILED model call with its error', async () => {
    const { session } = await runningRun(t);
    must(await session.modelStarted('m1'));
    const failed = must(await session.modelFinished('m1', [], { status: 'FAILED', error: { message: 'rate limited' } }));
    expect(failed).toMatchObject({ status: 'FAILED', error: { message: 'rate limited' } });
  });

  it.each(['RUNNING', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'])('refuses status %s with BAD_USER_INPUT', async (status) => {
    const { session, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1'));
    await expectRejected(s, 'BAD_USER_INPUT', () => session.modelFinished('m1', [{ id: 'c1', name: 'x' }], { status }));
  });

  it('refuses a response that declares one tool_call_id twice', async () => {
    const { session, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1'));
    const twice = [
      { id: 'c1', name: 'x' },
      { id: 'c1', name: 'y' },
    ];
    await expectRejected(s, 'BAD_USER_INPUT', () => session.modelFinished('m1', twice));
  });

  it('of a model call that never started is INVALID_TRANSITION', async () => {
    const { session, scene: s } = await runningScene(t);
    await expectRejected(s, 'INVALID_TRANSITION', () => session.modelFinished('never', [{ id: 'c1', name: 'x' }]));
  });

  it('replayed identically is a no-op, with or without its sequence', async () => {
    const { session } = await runningRun(t);
    must(await session.modelStarted('m1'));
    const tools = [{ id: 'c1', name: 'search', args: { q: 1 } }];
    const finish = { sequence: '3', output: { text: 'a' }, usage: { n: 1 }, observedAt: at(5) };
    const first = must(await session.modelFinished('m1', tools, finish));
    expect(must(await session.modelFinished('m1', tools, { ...finish, observedAt: at(50) }))).toEqual(first);
    expect(must(await session.modelFinished('m1', tools, { ...finish, sequence: null }))).toEqual(first);
  });

  it.each([
    ['status', { status: 'FAILED' }],
    ['output', { output: { text: 'b' } }],
    ['usage', { usage: { n: 2 } }],
    ['error', { error: { message: 'late' } }],
    ['sequence', { sequence: '4' }],
    ['declared tool calls', { toolCalls: [{ id: 'c1', name: 'search', args: { q: 2 } }] }],
    ['number of tool calls', { toolCalls: [] }],
  ])('replayed with a different %s is CONFLICT and changes nothing', async (_what, change) => {
    const { session, scene: s } = await runningScene(t);
    must(await session.modelStarted('m1'));
    const tools = [{ id: 'c1', name: 'search', args: { q: 1 } }];
    const finish = { sequence: '3', output: { text: 'a' }, usage: { n: 1 } };
    must(await session.modelFinished('m1', tools, finish));
    await expectRejected(s, 'CONFLICT', () => session.modelFinished('m1', tools, { ...finish, ...change }));
  });

  it('replayed never resets a started or finished ToolCall to PENDING', async () => {
    const { session, scene: s, runId } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1' }));
    const tools = [
      { id: 'c-run', name: 'search' },
      { id: 'c-done', name: 'search' },
    ];
    const finish = { sequence: '2' };
    must(await session.modelFinished('m1', tools, finish));
    must(await session.toolStarted('c-run', 'search', { effectiveInput: { q: 'r' } }));
    must(await session.toolStarted('c-done', 'search'));
    must(await session.toolFinished('c-done', { content: 'found' }));
    const before = await threadState(s);

    must(await session.modelFinished('m1', tools, finish));

    expect(await threadState(s)).toEqual(before);
    const calls = before.runs.find((run: any) => run.id === runId).toolCalls;
    expect(calls.map((call: any) => [call.toolCallId, call.status])).toEqual([
      ['c-run', 'RUNNING'],
      ['c-done', 'COMPLETED'],
    ]);
  });
});

describe('audit keys', () => {
  it('let a model audit and a tool audit of one run share an operationId', async () => {
    const { session, scene: s, runId } = await runningScene(t);
    must(await session.modelStarted('op-1'));
    must(await session.modelFinished('op-1', [{ id: 'op-1', name: 'search' }]));
    const tool = must(await session.toolStarted('op-1', 'search'));
    must(await session.toolFinished('op-1', { content: 'ok' }));
    expect(tool).toMatchObject({ role: 'TOOL', operationId: 'op-1', runId });
    const { audits } = await threadState(s);
    expect(audits.items.map((item: any) => [item.__typename, item.operationId, item.status])).toEqual([
      ['ModelAudit', 'op-1', 'COMPLETED'],
      ['ToolAudit', 'op-1', 'COMPLETED'],
    ]);
  });

  it('are per run: the same operationId in another run is another audit', async () => {
    const first = await runningScene(t);
    const second = await runningRun(t);
    must(await first.session.modelStarted('m1', { sequence: '1', input: { a: 1 } }));
    const other = must(await second.session.modelStarted('m1', { sequence: '9', input: { b: 2 } }));
    expect(other).toMatchObject({ runId: second.runId, sequence: '9', input: { b: 2 } });
    expect(errorCode(await first.session.modelStarted('m1', { sequence: '9', input: { b: 2 } }))).toBe('CONFLICT');
  });
});
