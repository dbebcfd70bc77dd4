import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { claim, createRun, must, runningRun } from '../support/lifecycle.js';
import { auditsOf, readRun } from './helpers.js';

// SEMANTICS.md, "Final-state reconciliation": the final state completes bare tool errors only.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const BARE_ERROR = { message: 'tool raised' };
const toolMessage = (toolCallId: string, status: string, content: string, extra: Record<string, unknown> = {}) => ({
  type: 'tool',
  tool_call_id: toolCallId,
  status,
  content,
  name: 'search',
  ...extra,
});

async function runDeclaring(ids: string[]) {
  const ctx = await runningRun(t);
  await ctx.session.declare('m1', ids.map((id) => ({ id, name: 'search' })));
  return ctx;
}

async function startWithBareError(session: Awaited<ReturnType<typeof runningRun>>['session'], toolCallId: string) {
  must(await session.toolStarted(toolCallId, 'search'));
  must(await session.toolError(toolCallId, BARE_ERROR));
}

const toolCallsOf = async (owner: string, runId: string) =>
  Object.fromEntries((await readRun(t, owner, runId)).toolCalls.map((call: any) => [call.toolCallId, call]));

describe.each(['COMPLETED', 'FAILED'] as const)('a %s run with a final state', (status) => {
  it('completes a bare error from the last error message for its id, output recorded', async () => {
    const ctx = await runDeclaring(['t-a']);
    await startWithBareError(ctx.session, 't-a');
    const final = toolMessage('t-a', 'error', 'Error: timeout after 30s', { id: 'msg-2', artifact: { trace: 'x' } });
    must(
      await ctx.session.finish(status, {
        stateMessages: [
          { type: 'human', content: 'search please' },
          // An earlier use of the same id: superseded by the last one.
          toolMessage('t-a', 'error', 'Error: stale', { id: 'msg-1' }),
          { type: 'ai', content: '', tool_calls: [{ id: 't-a', name: 'search', args: {} }] },
          final,
          { type: 'ai', content: 'giving up' },
        ],
      }),
    );

    const audit = (await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:t-a'];
    expect(audit).toMatchObject({ status: 'FAILED', output: final, error: BARE_ERROR, awaitingRunTerminal: false });
    // The projection carries the content only, never the envelope.
    expect((await toolCallsOf(ctx.owner, ctx.runId))['t-a']).toMatchObject({ status: 'FAILED', output: 'Error: timeout after 30s' });
  });

  it('takes the LAST state message for the id: a later success leaves the closing table in charge', async () => {
    const ctx = await runDeclaring(['t-a']);
    await startWithBareError(ctx.session, 't-a');
    must(
      await ctx.session.finish(status, {
        stateMessages: [toolMessage('t-a', 'error', 'old'), toolMessage('t-a', 'success', 'new')],
      }),
    );
    const audit = (await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:t-a'];
    // The closing table: a bare error awaiting the verdict is ABANDONED by a COMPLETED run, FAILED by a FAILED one.
    expect(audit.status).toBe(status === 'COMPLETED' ? 'ABANDONED' : 'FAILED');
    expect(audit.output).toBeNull();
    expect(audit.error).toEqual(BARE_ERROR);
  });

  it('leaves audits the lifecycle closed, and audits without a bare error, out of it', async () => {
    const ctx = await runDeclaring(['t-ok', 't-failed', 't-open']);
    const { session } = ctx;
    must(await session.toolStarted('t-ok', 'search'));
    must(await session.toolFinished('t-ok', { content: 'found it', status: 'success' }));
    must(await session.toolStarted('t-failed', 'search'));
    must(await session.toolFinished('t-failed', { content: 'bad query', status: 'error' }));
    must(await session.toolStarted('t-open', 'search'));
    const before = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);

    must(
      await session.finish(status, {
        stateMessages: ['t-ok', 't-failed', 't-open'].map((id) => toolMessage(id, 'error', `rewritten ${id}`)),
      }),
    );

    const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
    expect(audits['Tool:t-ok']).toEqual(before['Tool:t-ok']);
    expect(audits['Tool:t-failed']).toEqual(before['Tool:t-failed']);
    // Running without a bare error: closed by the table, never completed from the state.
    expect(audits['Tool:t-open']).toMatchObject({ status: status === 'COMPLETED' ? 'ABANDONED' : 'FAILED', output: null });
    const toolCalls = await toolCallsOf(ctx.owner, ctx.runId);
    expect(toolCalls['t-ok']).toMatchObject({ status: 'COMPLETED', output: 'found it' });
    expect(toolCalls['t-failed']).toMatchObject({ status: 'FAILED', output: 'bad query' });
    expect(toolCalls['t-open']).toMatchObject({ status: 'FAILED', output: null });
  });

  it('ignores state messages for calls this run never started, and messages that are not errors', async () => {
    const ctx = await runDeclaring(['t-a', 't-never']);
    await startWithBareError(ctx.session, 't-a');
    must(
      await ctx.session.finish(status, {
        stateMessages: [
          toolMessage('t-never', 'error', 'never ran here'),
          toolMessage('t-undeclared', 'error', 'nobody declared me'),
          toolMessage('t-a', 'success', 'not an error'),
          { type: 'tool', tool_call_id: 't-a', content: 'no status at all' },
          'not an object',
        ],
      }),
    );

    const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
    expect(Object.keys(audits).sort()).toEqual(['Model:m1', 'Tool:t-a']);
    expect(audits['Tool:t-a']).toMatchObject({ status: status === 'COMPLETED' ? 'ABANDONED' : 'FAILED', output: null, error: BARE_ERROR });
    const toolCalls = await toolCallsOf(ctx.owner, ctx.runId);
    expect(toolCalls['t-never']).toMatchObject({ status: 'PENDING', output: null, startedAt: null });
    expect(toolCalls['t-a']).toMatchObject({ status: 'FAILED', output: null, error: BARE_ERROR });
  });
});

describe('runs that do not reconcile', () => {
  it.each(['CANCELLED', 'INTERRUPTED'] as const)('a %s run ignores the final state', async (status) => {
    const ctx = await runDeclaring(['t-a']);
    await startWithBareError(ctx.session, 't-a');
    must(await ctx.session.finish(status, { stateMessages: [toolMessage('t-a', 'error', 'from the state')] }));
    expect((await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:t-a']).toMatchObject({ status, output: null, error: BARE_ERROR });
  });

  it('an ancestor run’s audit with the same id is not this run’s and is never touched', async () => {
    const ctx = await runDeclaring(['t-a']);
    await startWithBareError(ctx.session, 't-a');
    must(await ctx.session.finish('INTERRUPTED'));
    const ancestorAudits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);

    const resumedId = await createRun(t, ctx.owner, ctx.threadId, ctx.runId);
    const resumed = await claim(t, ctx.worker, resumedId);
    must(await resumed.finish('COMPLETED', { stateMessages: [toolMessage('t-a', 'error', 'from the state')] }));

    expect(await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId)).toEqual(ancestorAudits);
    expect(await auditsOf(t, ctx.owner, ctx.threadId, resumedId)).toEqual({});
    expect((await toolCallsOf(ctx.owner, ctx.runId))['t-a']).toMatchObject({ status: 'PENDING', output: null });
  });
});
