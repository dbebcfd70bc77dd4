import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredLeases } from '../../src/domain/convergence.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expireLeases, must, runningRun } from '../support/lifecycle.js';
import { auditsOf, cancelRun, readRun } from './helpers.js';

// A worker's clock may run minutes ahead of the database's: its audits start at its readings
// (`observedAt`), and a run's ending closes what is still open at the database's instant. An
// audit never ends before it started, whichever clock each end was read on.

const AHEAD_MS = 5 * 60_000;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const endings = {
  finishRun: (ctx: Awaited<ReturnType<typeof runningRun>>) => ctx.session.finish('COMPLETED').then(must),
  cancelRun: (ctx: Awaited<ReturnType<typeof runningRun>>) => cancelRun(t, ctx.owner, ctx.runId).then(must),
  'lease expiry': async (ctx: Awaited<ReturnType<typeof runningRun>>) => {
    await expireLeases(t.app.db.driver, [ctx.runId]);
    await sweepExpiredLeases(t.app.deps);
  },
};

describe('audits a run ending closes, started by a worker whose clock is 5 minutes ahead', () => {
  it.each(Object.keys(endings) as (keyof typeof endings)[])('%s: each ends at or after its start', async (ending) => {
    const ctx = await runningRun(t);
    const ahead = () => ({ observedAt: new Date(Date.now() + AHEAD_MS).toISOString() });
    must(await ctx.session.modelStarted('m1', ahead()));
    must(await ctx.session.modelFinished('m1', [{ id: 't-open', name: 'search' }], ahead()));
    must(await ctx.session.toolStarted('t-open', 'search', ahead()));
    must(await ctx.session.modelStarted('m-open', ahead()));
    await endings[ending](ctx);

    const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
    for (const key of ['Tool:t-open', 'Model:m-open']) {
      expect(audits[key].status, key).not.toBe('RUNNING');
      expect(Date.parse(audits[key].finishedAt), key).toBeGreaterThanOrEqual(Date.parse(audits[key].startedAt));
    }
    const [toolCall] = (await readRun(t, ctx.owner, ctx.runId)).toolCalls;
    expect(Date.parse(toolCall.finishedAt)).toBeGreaterThanOrEqual(Date.parse(toolCall.startedAt));
  });
});
