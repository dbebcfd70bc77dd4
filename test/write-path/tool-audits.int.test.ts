import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { claim, clockAt, createRun, must } from '../support/lifecycle.js';
import { at, expectRejected, interruptAndResume, runningScene, threadState, toolAuditOf, type Scene } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** A running run whose model call declared `search` as call-1 (and call-2). */
async function declared() {
  const run = await runningScene(t);
  await run.session.declare('m1', [
    { id: 'call-1', name: 'search', args: { q: 'declared' } },
    { id: 'call-2', name: 'search' },
  ]);
  return run;
}

const projectionOf = async (scene: Scene, runId: string, toolCallId: string) => {
  const { runs } = await threadState(scene);
  return runs.find((run: any) => run.id === runId).toolCalls.find((call: any) => call.toolCallId === toolCallId);
};

describe('recordToolStarted', () => {
  it('opens a RUNNING TOOL audit and moves its ToolCall to RUNNING with the effective input', async () => {
    const { session, runId } = await declared();
    const audit = must(
      await session.toolStarted('call-1', 'search', { sequence: '4', effectiveInput: { q: 'effective' }, observedAt: at(3) }),
    );
    expect(audit).toMatchObject({
      runId,
      role: 'TOOL',
      operationId: 'call-1',
      toolCallId: 'call-1',
      name: 'search',
      sequence: '4',
      status: 'RUNNING',
      effectiveInput: { q: 'effective' },
      output: null,
      error: null,
      awaitingRunTerminal: false,
      startedAt: at(3),
      finishedAt: null,
      toolCall: { toolCallId: 'call-1', status: 'RUNNING', effectiveInput: { q: 'effective' }, output: null },
    });
  });

  it('takes a null effective input as {}', async () => {
    const { session } = await declared();
    expect(must(await session.toolStarted('call-1', 'search', { effectiveInput: null })).effectiveInput).toEqual({});
  });

  it('replayed returns the existing row: the first startedAt and monotonic origin are kept', async () => {
    const { session } = await declared();
    const start = { sequence: '3', effectiveInput: { q: 1 } };
    const first = must(await session.toolStarted('call-1', 'search', { ...start, observedAt: at(1), clock: clockAt(100) }));
    const replay = must(await session.toolStarted('call-1', 'search', { ...start, observedAt: at(8), clock: clockAt(800) }));
    expect(replay).toEqual(first);
    const finished = must(await session.toolFinished('call-1', { content: 'x' }, { observedAt: at(9), clock: clockAt(1000) }));
    expect(finished).toMatchObject({ startedAt: at(1), durationMs: 900, toolCall: { durationMs: 900 } });
    // Whatever its status, an identical start returns the row unchanged.
    expect(must(await session.toolStarted('call-1', 'search', start))).toEqual(finished);
  });

  it.each([
    ['name', { name: 'fetch', sequence: '3', effectiveInput: { q: 1 } }],
    ['effective input', { name: 'search', sequence: '3', effectiveInput: { q: 2 } }],
    ['sequence', { name: 'search', sequence: '4', effectiveInput: { q: 1 } }],
  ])('replayed with a different %s is CONFLICT and changes nothing', async (_what, replay) => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search', { sequence: '3', effectiveInput: { q: 1 } }));
    await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', replay.name, replay));
  });

  it('replayed with a different input after the tool finished is still CONFLICT', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search', { sequence: '3', effectiveInput: { q: 1 } }));
    must(await session.toolFinished('call-1', { content: 'x' }));
    await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', 'search', { sequence: '3', effectiveInput: {} }));
  });

  it.each([[['researcher']], [['researcher', 'tools:1']], [['']]])(
    'from the sub-agent namespace %j is NAMESPACE_REJECTED and writes nothing',
    async (namespace) => {
      const { session, scene } = await declared();
      await expectRejected(scene, 'NAMESPACE_REJECTED', () => session.toolStarted('call-1', 'search', { namespace }));
    },
  );

  it('of a ToolCall that already ended, in a resumed run, is INVALID_TRANSITION and writes nothing', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'done' }));
    must(await session.toolStarted('call-2', 'search'));
    must(await session.toolFinished('call-2', { content: 'bad', status: 'error' }));
    const resumed = await interruptAndResume(scene, session);
    await expectRejected(scene, 'INVALID_TRANSITION', () => resumed.toolStarted('call-1', 'search'));
    await expectRejected(scene, 'INVALID_TRANSITION', () => resumed.toolStarted('call-2', 'search'));
  });
});

describe('one execution at a time', () => {
  /** An interrupted run that declared call-1, and two runs that both resume it, claimed. */
  async function siblings() {
    const { session, scene } = await declared();
    must(await session.finish('INTERRUPTED'));
    const [left, right] = await Promise.all(
      [0, 1].map(async () => claim(t, session.token, await createRun(t, scene.owner, scene.threadId, session.lease.runId))),
    );
    return { scene, left: left!, right: right! };
  }

  it('a start of a ToolCall that another run is executing is INVALID_TRANSITION and writes nothing', async () => {
    const { scene, left, right } = await siblings();
    must(await left.toolStarted('call-1', 'search', { effectiveInput: { by: 'left' } }));
    await expectRejected(scene, 'INVALID_TRANSITION', () => right.toolStarted('call-1', 'search', { effectiveInput: { by: 'right' } }));
  });

  it('of two runs starting the same ToolCall at once, exactly one wins', async () => {
    const { scene, left, right } = await siblings();
    const results = await Promise.all([left, right].map((session) => session.toolStarted('call-1', 'search')));
    expect(results.map((result) => errorCode(result) ?? 'ok').sort()).toEqual(['INVALID_TRANSITION', 'ok']);
    const { audits } = await threadState(scene);
    expect(audits.items.filter((item: any) => item.__typename === 'ToolAudit')).toHaveLength(1);
  });
});

describe('recordToolFinished', () => {
  it('completes the audit with the raw envelope; the ToolCall gets the content only', async () => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search', { effectiveInput: { q: 'e' }, observedAt: at(1), clock: clockAt(10) }));
    const envelope = { content: 'found it', status: 'success', id: 'msg-1', name: 'search', artifact: { secret: 'raw-bytes' } };
    const finished = must(
      await session.toolFinished('call-1', envelope, { sequence: '12', observedAt: at(2), clock: clockAt(35) }),
    );
    expect(finished).toMatchObject({
      status: 'COMPLETED',
      output: envelope,
      error: null,
      awaitingRunTerminal: false,
      finishedAt: at(2),
      finishedSequence: '12',
      durationMs: 25,
    });
    const projected = await projectionOf(scene, runId, 'call-1');
    expect(projected).toMatchObject({
      status: 'COMPLETED',
      declaredInput: { q: 'declared' },
      effectiveInput: { q: 'e' },
      output: 'found it',
      error: null,
      startedAt: at(1),
      finishedAt: at(2),
      durationMs: 25,
    });
    expect(JSON.stringify(projected)).not.toMatch(/raw-bytes|artifact|msg-1/);
    expect(finished.toolCall).toEqual(expect.objectContaining({ output: 'found it' }));
  });

  it.each([
    ['a missing content', { status: 'success', artifact: { a: 1 } }, ''],
    ['a null content', { content: null, id: 'msg' }, ''],
    ['structured content', { content: [{ type: 'text', text: 'hi' }], artifact: 'x' }, [{ type: 'text', text: 'hi' }]],
  ])('projects %s onto the ToolCall', async (_what, envelope, content) => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', envelope));
    expect((await projectionOf(scene, runId, 'call-1')).output).toEqual(content);
  });

  it('with output.status "error" is a controlled failure: FAILED at once', async () => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    const envelope = { content: 'no such page', status: 'error', artifact: { trace: 't' } };
    const failed = must(await session.toolFinished('call-1', envelope));
    expect(failed).toMatchObject({ status: 'FAILED', output: envelope, awaitingRunTerminal: false });
    expect(await projectionOf(scene, runId, 'call-1')).toMatchObject({ status: 'FAILED', output: 'no such page' });
  });

  it('carries its reason: error = {message: content} on the audit and its ToolCall', async () => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    const failed = must(await session.toolFinished('call-1', { content: 'no such page', status: 'error' }));
    expect(failed.error).toEqual({ message: 'no such page' });
    expect(failed.toolCall.error).toEqual({ message: 'no such page' });
    expect((await projectionOf(scene, runId, 'call-1')).error).toEqual({ message: 'no such page' });
    // A success carries no error.
    must(await session.toolStarted('call-2', 'search'));
    expect(must(await session.toolFinished('call-2', { content: 'found', status: 'success' })).error).toBeNull();
  });

  it('of a tool that never started in this run is INVALID_TRANSITION', async () => {
    const { session, scene } = await declared();
    await expectRejected(scene, 'INVALID_TRANSITION', () => session.toolFinished('call-1', { content: 'x' }));
  });

  it('from a sub-agent namespace is NAMESPACE_REJECTED and changes nothing', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    await expectRejected(scene, 'NAMESPACE_REJECTED', () =>
      session.toolFinished('call-1', { content: 'x' }, { namespace: ['child'] }),
    );
  });
});

describe('terminal replays', () => {
  const envelope = { content: 'ok', status: 'success', id: 'msg-1', name: 'search' };

  async function finished() {
    const run = await declared();
    must(await run.session.toolStarted('call-1', 'search'));
    const first = must(await run.session.toolFinished('call-1', envelope, { sequence: '9', observedAt: at(4) }));
    return { ...run, first };
  }

  it.each([
    ['the same terminal', envelope, '9'],
    ['the same terminal without its sequence', envelope, null],
    ['another id and name', { ...envelope, id: 'msg-late', name: 'search_v2' }, '9'],
    ['id and name left out', { content: 'ok', status: 'success' }, '9'],
  ])('with %s is a no-op', async (_what, replay, sequence) => {
    const { session, scene, first } = await finished();
    const before = await threadState(scene);
    expect(must(await session.toolFinished('call-1', replay, { sequence, observedAt: at(30) }))).toEqual(first);
    expect(await threadState(scene)).toEqual(before);
  });

  it.each([
    ['an added artifact', { ...envelope, artifact: { extra: true } }, '9'],
    ['a changed content', { ...envelope, content: 'ko' }, '9'],
    ['a changed status', { ...envelope, status: 'error' }, '9'],
    ['a removed status', { content: 'ok', id: 'msg-1', name: 'search' }, '9'],
    ['another sequence', envelope, '10'],
  ])('with %s is CONFLICT and changes nothing', async (_what, replay, sequence) => {
    const { session, scene } = await finished();
    await expectRejected(scene, 'CONFLICT', () => session.toolFinished('call-1', replay, { sequence }));
  });

  it('a controlled failure replayed is a no-op; the same envelope as a success is CONFLICT', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    const failure = { content: 'nope', status: 'error' };
    const first = must(await session.toolFinished('call-1', failure, { sequence: '5' }));
    expect(must(await session.toolFinished('call-1', { ...failure, id: 'late' }, { sequence: '5' }))).toEqual(first);
    await expectRejected(scene, 'CONFLICT', () => session.toolFinished('call-1', { content: 'nope' }, { sequence: '5' }));
  });

  it('an error after the terminal is CONFLICT: a closed audit is never reopened or rewritten', async () => {
    const { session, scene } = await finished();
    await expectRejected(scene, 'CONFLICT', () => session.toolError('call-1', { message: 'late' }));
  });
});

describe('recordToolError (a bare error)', () => {
  it('records the error and keeps the audit RUNNING, awaiting the run verdict', async () => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search', { observedAt: at(1), clock: clockAt(0) }));
    const errored = must(
      await session.toolError('call-1', { type: 'GraphInterrupt' }, { sequence: '6', observedAt: at(2), clock: clockAt(42) }),
    );
    expect(errored).toMatchObject({
      status: 'RUNNING',
      awaitingRunTerminal: true,
      error: { type: 'GraphInterrupt' },
      output: null,
      finishedAt: at(2),
      finishedSequence: '6',
      durationMs: 42,
    });
    expect(await projectionOf(scene, runId, 'call-1')).toMatchObject({
      status: 'RUNNING',
      error: { type: 'GraphInterrupt' },
      output: null,
      durationMs: 42,
    });
  });

  it('replayed with the same error is a no-op; a different error or sequence is CONFLICT', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    const first = must(await session.toolError('call-1', { message: 'boom' }, { sequence: '6', observedAt: at(2) }));
    const before = await threadState(scene);
    expect(must(await session.toolError('call-1', { message: 'boom' }, { sequence: '6', observedAt: at(20) }))).toEqual(first);
    expect(must(await session.toolError('call-1', { message: 'boom' }, { sequence: null }))).toEqual(first);
    expect(await threadState(scene)).toEqual(before);
    await expectRejected(scene, 'CONFLICT', () => session.toolError('call-1', { message: 'bang' }, { sequence: '6' }));
    await expectRejected(scene, 'CONFLICT', () => session.toolError('call-1', { message: 'boom' }, { sequence: '7' }));
  });

  it('differs from a controlled failure, which is FAILED at once', async () => {
    const { session } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolStarted('call-2', 'search'));
    const bare = must(await session.toolError('call-1', { message: 'timeout' }));
    const controlled = must(await session.toolFinished('call-2', { content: 'timeout', status: 'error' }));
    expect([bare.status, bare.awaitingRunTerminal, bare.toolCall.status]).toEqual(['RUNNING', true, 'RUNNING']);
    expect([controlled.status, controlled.awaitingRunTerminal, controlled.toolCall.status]).toEqual(['FAILED', false, 'FAILED']);
  });

  it('of a tool that never started in this run is INVALID_TRANSITION', async () => {
    const { session, scene } = await declared();
    await expectRejected(scene, 'INVALID_TRANSITION', () => session.toolError('call-1', { message: 'x' }));
  });

  it('is settled by a terminal that still arrives: the terminal closes the audit, the error stays recorded', async () => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search', { clock: clockAt(0) }));
    must(await session.toolError('call-1', { message: 'boom' }, { sequence: '5', clock: clockAt(10) }));
    const failed = must(
      await session.toolFinished('call-1', { content: 'boom', status: 'error' }, { sequence: '6', clock: clockAt(12) }),
    );
    expect(failed).toMatchObject({
      status: 'FAILED',
      awaitingRunTerminal: false,
      error: { message: 'boom' },
      finishedSequence: '6',
      durationMs: 12,
    });
    expect(await projectionOf(scene, runId, 'call-1')).toMatchObject({ status: 'FAILED', output: 'boom', error: { message: 'boom' } });
  });

  it('from a sub-agent namespace is NAMESPACE_REJECTED and changes nothing', async () => {
    const { session, scene } = await declared();
    must(await session.toolStarted('call-1', 'search'));
    await expectRejected(scene, 'NAMESPACE_REJECTED', () => session.toolError('call-1', { message: 'x' }, { namespace: ['child'] }));
  });
});

describe('durations', () => {
  it.each([
    ['on one clock, in whole milliseconds', clockAt(0), { clockId: 'test-clock', nanos: '1999999' }, 1],
    ['over a long span', { clockId: 'c', nanos: '5' }, { clockId: 'c', nanos: '86400000000005' }, 86_400_000],
    ['never negative', clockAt(500), clockAt(200), 0],
    ['null across two clocks', clockAt(0, 'process-a'), clockAt(10, 'process-b'), null],
    ['null without a start reading', null, clockAt(10), null],
    ['null without an end reading', clockAt(0), null, null],
  ])('are %s', async (_what, startClock, endClock, expected) => {
    const { session, scene, runId } = await declared();
    must(await session.toolStarted('call-1', 'search', { clock: startClock }));
    must(await session.toolStarted('call-2', 'search', { clock: startClock }));
    expect(must(await session.toolFinished('call-1', { content: 'x' }, { clock: endClock })).durationMs).toBe(expected);
    expect(must(await session.toolError('call-2', { message: 'x' }, { clock: endClock })).durationMs).toBe(expected);
    expect((await projectionOf(scene, runId, 'call-1')).durationMs).toBe(expected);
    expect((await toolAuditOf(scene, runId, 'call-2')).durationMs).toBe(expected);
  });

  it('of model calls follow the same rule', async () => {
    const { session } = await declared();
    must(await session.modelStarted('m-a', { clock: clockAt(0) }));
    must(await session.modelStarted('m-b', { clock: clockAt(0, 'other') }));
    expect(must(await session.modelFinished('m-a', [], { clock: { clockId: 'test-clock', nanos: '2500000' } })).durationMs).toBe(2);
    expect(must(await session.modelFinished('m-b', [], { clock: clockAt(5) })).durationMs).toBeNull();
  });
});
