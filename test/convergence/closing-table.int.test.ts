import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { clockAt, must, runningRun } from '../support/lifecycle.js';
import { eventually } from '../support/streams.js';
import { auditsOf, cancelRun, lateWrites, readRun } from './helpers.js';

// SEMANTICS.md, "Run terminal convergence": one row per way a run can end.
interface Ending {
  name: string;
  end(ctx: Awaited<ReturnType<typeof runningRun>>, t: TestApp): Promise<unknown>;
  runStatus: string;
  runError: Record<string, unknown> | null;
  /** A tool audit holding a bare error. */
  awaiting: string;
  /** A tool audit still RUNNING without an error, and a RUNNING model audit. */
  open: string;
  /** The ToolCall of a tool audit this ending closed. */
  toolCall: string;
  /** The closing reason written into `error` of rows that had none. */
  reason: string;
}

const ENDINGS: Ending[] = [
  {
    name: 'finishRun COMPLETED',
    end: async ({ session }) => must(await session.finish('COMPLETED')),
    runStatus: 'COMPLETED',
    runError: null,
    awaiting: 'ABANDONED',
    open: 'ABANDONED',
    toolCall: 'FAILED',
    reason: 'RUN_COMPLETED',
  },
  {
    name: 'finishRun FAILED',
    end: async ({ session }) => must(await session.finish('FAILED', { error: { message: 'agent crashed' } })),
    runStatus: 'FAILED',
    runError: { message: 'agent crashed' },
    awaiting: 'FAILED',
    open: 'FAILED',
    toolCall: 'FAILED',
    reason: 'RUN_FAILED',
  },
  {
    name: 'lease expiry',
    end: async ({ session, owner, runId }, t) => {
      must(await session.renew(1));
      await eventually(() => readRun(t, owner, runId), (run) => run.status !== 'RUNNING');
    },
    runStatus: 'FAILED',
    runError: { code: 'LEASE_EXPIRED' },
    awaiting: 'ABANDONED',
    open: 'ABANDONED',
    toolCall: 'FAILED',
    reason: 'LEASE_EXPIRED',
  },
  {
    name: 'cancelRun by the owner',
    end: async ({ owner, runId }, t) => must(await cancelRun(t, owner, runId)),
    runStatus: 'CANCELLED',
    runError: { code: 'CANCELLED' },
    awaiting: 'CANCELLED',
    open: 'CANCELLED',
    toolCall: 'CANCELLED',
    reason: 'RUN_CANCELLED',
  },
  {
    name: 'finishRun CANCELLED',
    end: async ({ session }) => must(await session.finish('CANCELLED')),
    runStatus: 'CANCELLED',
    runError: null,
    awaiting: 'CANCELLED',
    open: 'CANCELLED',
    toolCall: 'CANCELLED',
    reason: 'RUN_CANCELLED',
  },
  {
    name: 'finishRun INTERRUPTED',
    end: async ({ session }) => must(await session.finish('INTERRUPTED')),
    runStatus: 'INTERRUPTED',
    runError: null,
    awaiting: 'INTERRUPTED',
    open: 'INTERRUPTED',
    toolCall: 'PENDING',
    reason: 'RUN_INTERRUPTED',
  },
];

const BARE_ERROR = { message: 'connection reset', kind: 'GraphInterrupt?' };
const ERROR_OBSERVED_AT = '2026-03-01T10:00:00.000Z';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LEASE_MIN_SECONDS: '1', LEASE_SWEEP_INTERVAL_MS: '200' });
});
afterAll(() => t.close());

/**
 * One run with every kind of open work: a tool awaiting the verdict (bare error, measured on one
 * clock), a tool still running, a model still running, a tool that already completed, and a
 * declared tool call that never started.
 */
async function runWithOpenWork() {
  const ctx = await runningRun(t);
  const { session } = ctx;
  must(await session.modelStarted('m1', { clock: clockAt(0) }));
  must(
    await session.modelFinished('m1', ['t-await', 't-open', 't-done', 't-never'].map((id) => ({ id, name: 'search', args: { q: id } })), {
      clock: clockAt(5),
    }),
  );
  must(await session.toolStarted('t-await', 'search', { effectiveInput: { q: 'a' }, clock: clockAt(10) }));
  must(await session.toolError('t-await', BARE_ERROR, { clock: clockAt(40), observedAt: ERROR_OBSERVED_AT }));
  must(await session.toolStarted('t-open', 'search', { effectiveInput: { q: 'o' }, clock: clockAt(15) }));
  must(await session.toolStarted('t-done', 'search', { clock: clockAt(20) }));
  must(await session.toolFinished('t-done', { content: 'done', status: 'success' }, { clock: clockAt(30) }));
  must(await session.modelStarted('m-open', { clock: clockAt(50) }));
  return { ...ctx, before: await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId) };
}

describe.each(ENDINGS)('a run ended by $name', (ending) => {
  it('closes every open audit and its ToolCall per the table, and leaves the rest alone', async () => {
    const ctx = await runWithOpenWork();
    await ending.end(ctx, t);

    const run = await readRun(t, ctx.owner, ctx.runId);
    expect(run).toMatchObject({ status: ending.runStatus, leaseOwner: null, leaseExpiresAt: null });
    expect(run.finishedAt).not.toBeNull();
    if (ending.runError) expect(run.error).toMatchObject(ending.runError);
    else expect(run.error).toBeNull();

    const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
    expect(Object.keys(audits).sort()).toEqual(['Model:m-open', 'Model:m1', 'Tool:t-await', 'Tool:t-done', 'Tool:t-open']);

    // The bare error is kept, with its finishedAt and the duration measured on one clock.
    expect(audits['Tool:t-await']).toMatchObject({
      status: ending.awaiting,
      error: BARE_ERROR,
      output: null,
      finishedAt: ERROR_OBSERVED_AT,
      durationMs: 30,
      awaitingRunTerminal: false,
    });
    // Rows without an end observation get the run's end as finishedAt and a closing reason.
    for (const key of ['Tool:t-open', 'Model:m-open']) {
      expect(audits[key], key).toMatchObject({ status: ending.open, finishedAt: run.finishedAt, durationMs: null });
      expect(audits[key].error, key).toMatchObject({ code: ending.reason });
    }
    expect(audits['Tool:t-open'].awaitingRunTerminal).toBe(false);

    // Audits the lifecycle closed are never rewritten.
    expect(audits['Tool:t-done']).toEqual(ctx.before['Tool:t-done']);
    const { toolCalls: _declared, ...declaringModel } = audits['Model:m1'];
    const { toolCalls: _declaredBefore, ...declaringModelBefore } = ctx.before['Model:m1'];
    expect(declaringModel).toEqual(declaringModelBefore);

    const toolCalls = Object.fromEntries(run.toolCalls.map((call: any) => [call.toolCallId, call]));
    expect(toolCalls['t-done']).toMatchObject({ status: 'COMPLETED', output: 'done' });
    // Never started: the model's declared intent, whatever the ending.
    expect(toolCalls['t-never']).toMatchObject({ status: 'PENDING', startedAt: null, finishedAt: null, effectiveInput: null });
    if (ending.toolCall === 'PENDING') {
      for (const id of ['t-await', 't-open']) {
        expect(toolCalls[id], id).toMatchObject({ status: 'PENDING', startedAt: null, finishedAt: null, error: null, output: null });
      }
    } else {
      expect(toolCalls['t-await']).toMatchObject({
        status: ending.toolCall,
        error: BARE_ERROR,
        effectiveInput: { q: 'a' },
        finishedAt: ERROR_OBSERVED_AT,
        durationMs: 30,
      });
      expect(toolCalls['t-open']).toMatchObject({ status: ending.toolCall, effectiveInput: { q: 'o' }, finishedAt: run.finishedAt, durationMs: null });
      expect(toolCalls['t-open'].error).toMatchObject({ code: ending.reason });
    }
  });

  it('rejects every later lifecycle write with LEASE_LOST and changes nothing', async () => {
    const ctx = await runWithOpenWork();
    await ending.end(ctx, t);
    const runBefore = await readRun(t, ctx.owner, ctx.runId);
    const auditsBefore = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);

    const writes = lateWrites(ctx.session, { toolCallId: 't-await', modelId: 'm-open', declaredId: 't-never' });
    for (const [name, write] of Object.entries(writes)) {
      expect(errorCode(await write()), name).toBe('LEASE_LOST');
    }

    expect(await readRun(t, ctx.owner, ctx.runId)).toEqual(runBefore);
    expect(await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId)).toEqual(auditsBefore);
  });
});
