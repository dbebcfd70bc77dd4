import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { claim, createRun, must, runningRun, type WorkerSession } from '../support/lifecycle.js';
import { eventually } from '../support/streams.js';
import { auditsOf, cancelRun, readRun } from './helpers.js';

// SEMANTICS.md: an INTERRUPTED run hands its open tool calls back as PENDING, and a resume
// starts the same tool_call_id again, bound to the model call that declared it.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

async function resume(ctx: Awaited<ReturnType<typeof runningRun>>, fromRunId: string): Promise<{ runId: string; session: WorkerSession }> {
  const runId = await createRun(t, ctx.owner, ctx.threadId, fromRunId);
  expect((await readRun(t, ctx.owner, runId)).resumedFrom).toEqual({ id: fromRunId });
  return { runId, session: await claim(t, ctx.worker, runId) };
}

const declaredToolCall = async (ctx: Awaited<ReturnType<typeof runningRun>>, toolCallId: string) =>
  (await readRun(t, ctx.owner, ctx.runId)).toolCalls.find((call: any) => call.toolCallId === toolCallId);

describe('interrupt, resume, complete', () => {
  it('two levels: the resumed run starts the same tool_call_id and finishes the same ToolCall', async () => {
    const ctx = await runningRun(t);
    const declaring = await ctx.session.declare('m1', [
      { id: 't-1', name: 'search', args: { q: 'a' } },
      { id: 't-2', name: 'fetch', args: { url: 'u' } },
    ]);
    must(await ctx.session.toolStarted('t-1', 'search', { effectiveInput: { q: 'a' } }));
    must(await ctx.session.toolError('t-1', { message: 'interrupted' }));
    must(await ctx.session.finish('INTERRUPTED'));
    const toolCall = await declaredToolCall(ctx, 't-1');
    expect(toolCall).toMatchObject({ status: 'PENDING', startedAt: null, error: null });

    const second = await resume(ctx, ctx.runId);
    const started = must(await second.session.toolStarted('t-1', 'search', { effectiveInput: { q: 'a2' } }));
    expect(started).toMatchObject({ status: 'RUNNING', toolCall: { id: toolCall.id, status: 'RUNNING', effectiveInput: { q: 'a2' } } });
    const finished = must(await second.session.toolFinished('t-1', { content: 'result', status: 'success' }));
    expect(finished.toolCall).toMatchObject({ id: toolCall.id, status: 'COMPLETED', output: 'result' });
    // A call the interrupted run never started may run in the resume too.
    must(await second.session.toolStarted('t-2', 'fetch'));
    must(await second.session.toolFinished('t-2', { content: 'page', status: 'success' }));
    must(await second.session.finish('COMPLETED'));

    const resumedAudits = await auditsOf(t, ctx.owner, ctx.threadId, second.runId);
    for (const id of ['t-1', 't-2']) {
      expect(resumedAudits[`Tool:${id}`].declaredBy, id).toEqual({ id: declaring.id, operationId: 'm1' });
    }
    expect((await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:t-1']).toMatchObject({ status: 'INTERRUPTED' });
    // The ToolCall belongs to the run that declared it; the resumed run declared none.
    const toolCalls = (await readRun(t, ctx.owner, ctx.runId)).toolCalls;
    expect(toolCalls.map((call: any) => [call.toolCallId, call.status, call.output])).toEqual([
      ['t-1', 'COMPLETED', 'result'],
      ['t-2', 'COMPLETED', 'page'],
    ]);
    expect(toolCalls.every((call: any) => call.declaredBy.id === declaring.id)).toBe(true);
    expect((await readRun(t, ctx.owner, second.runId)).toolCalls).toEqual([]);
  });

  it('three levels: interrupted twice, the third run still binds to the first run’s model call', async () => {
    const ctx = await runningRun(t);
    const declaring = await ctx.session.declare('m1', [{ id: 't-1', name: 'search' }]);
    must(await ctx.session.toolStarted('t-1', 'search'));
    must(await ctx.session.finish('INTERRUPTED'));

    const second = await resume(ctx, ctx.runId);
    must(await second.session.toolStarted('t-1', 'search'));
    must(await second.session.toolError('t-1', { message: 'interrupted again' }));
    must(await second.session.finish('INTERRUPTED'));
    expect(await declaredToolCall(ctx, 't-1')).toMatchObject({ status: 'PENDING' });

    const third = await resume(ctx, second.runId);
    const started = must(await third.session.toolStarted('t-1', 'search'));
    const toolCall = await declaredToolCall(ctx, 't-1');
    expect(started.toolCall).toMatchObject({ id: toolCall.id, status: 'RUNNING' });
    must(await third.session.toolFinished('t-1', { content: 'at last', status: 'success' }));
    must(await third.session.finish('COMPLETED'));

    expect(await declaredToolCall(ctx, 't-1')).toMatchObject({ id: toolCall.id, status: 'COMPLETED', output: 'at last' });
    for (const [runId, status] of [
      [ctx.runId, 'INTERRUPTED'],
      [second.runId, 'INTERRUPTED'],
      [third.runId, 'COMPLETED'],
    ] as const) {
      const audit = (await auditsOf(t, ctx.owner, ctx.threadId, runId))['Tool:t-1'];
      expect(audit, runId).toMatchObject({ status, declaredBy: { id: declaring.id } });
    }
  });
});

describe('endings that close the ToolCall for good', () => {
  it.each([
    ['cancelRun', 'CANCELLED'],
    ['finishRun FAILED', 'FAILED'],
    ['finishRun COMPLETED', 'FAILED'],
    ['lease expiry', 'FAILED'],
  ] as const)('after %s a resume cannot start the closed call, but can start a never-started one', async (ending, toolCallStatus) => {
    const ctx = await runningRun(t);
    await ctx.session.declare('m1', [
      { id: 't-1', name: 'search' },
      { id: 't-2', name: 'search' },
    ]);
    must(await ctx.session.toolStarted('t-1', 'search'));
    if (ending === 'cancelRun') must(await cancelRun(t, ctx.owner, ctx.runId));
    else if (ending === 'lease expiry') {
      must(await ctx.session.renew(1));
      await eventually(() => readRun(t, ctx.owner, ctx.runId), (run) => run.status === 'FAILED');
    } else must(await ctx.session.finish(ending === 'finishRun FAILED' ? 'FAILED' : 'COMPLETED'));
    expect(await declaredToolCall(ctx, 't-1')).toMatchObject({ status: toolCallStatus });

    const next = await resume(ctx, ctx.runId);
    expect(errorCode(await next.session.toolStarted('t-1', 'search'))).toBe('INVALID_TRANSITION');
    must(await next.session.toolStarted('t-2', 'search'));
    expect(await declaredToolCall(ctx, 't-1')).toMatchObject({ status: toolCallStatus });
    expect(await declaredToolCall(ctx, 't-2')).toMatchObject({ status: 'RUNNING' });
  });
});
