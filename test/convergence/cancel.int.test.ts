import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { WorkerSession, claim, claimRunMutation, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { auditsOf, cancelRun, openWork, readRun } from './helpers.js';

// SEMANTICS.md, "Runs and leases": cancelRun, and a cancel racing the worker's own verdict.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('who may cancel', () => {
  it.each(['owner', 'admin', 'superadmin'] as const)('the %s cancels a running run and the worker loses its lease', async (who) => {
    const ownerSub = `user-${Math.random().toString(36).slice(2)}`;
    const owner = await t.token(ownerSub, 'user');
    const threadId = await createThread(t, owner);
    const runId = await createRun(t, owner, threadId);
    const worker = await claim(t, await t.token(`worker-${ownerSub}`, 'worker'), runId);
    const canceller = who === 'owner' ? owner : await t.token(`${who}-${ownerSub}`, who);

    const cancelled = must(await cancelRun(t, canceller, runId));
    expect(cancelled).toMatchObject({ id: runId, status: 'CANCELLED', leaseOwner: null, leaseExpiresAt: null });
    expect(cancelled.finishedAt).not.toBeNull();
    expect(cancelled.error).toMatchObject({ code: 'CANCELLED' });
    expect(errorCode(await worker.modelStarted('m1'))).toBe('LEASE_LOST');
    expect(errorCode(await worker.renew())).toBe('LEASE_LOST');
  });

  it('anyone else is refused and the run keeps running', async () => {
    const { runId, owner, worker, session } = await runningRun(t);
    const refusals = [
      [await t.token('another-user', 'user'), 'FORBIDDEN'],
      // Even the worker holding the lease: a worker ends its run with finishRun.
      [worker, 'FORBIDDEN'],
      [null, 'UNAUTHENTICATED'],
    ] as const;
    for (const [token, code] of refusals) expect(errorCode(await cancelRun(t, token as string, runId))).toBe(code);
    expect(await readRun(t, owner, runId)).toMatchObject({ status: 'RUNNING' });
    must(await session.modelStarted('m1'));
  });

  it('a run that does not exist is NOT_FOUND', async () => {
    const { owner } = await runningRun(t);
    expect(errorCode(await cancelRun(t, owner, '00000000-0000-4000-8000-000000000000'))).toBe('NOT_FOUND');
  });
});

describe('what may be cancelled', () => {
  it('a QUEUED run is cancelled at once and can no longer be claimed', async () => {
    const { owner, worker, threadId } = await runningRun(t);
    const runId = await createRun(t, owner, threadId);
    expect(must(await cancelRun(t, owner, runId))).toMatchObject({ status: 'CANCELLED' });
    expect(await readRun(t, owner, runId)).toMatchObject({ status: 'CANCELLED', startedAt: null });
    expect(errorCode(await t.gql(claimRunMutation, { input: { runId } }, worker))).toBe('INVALID_TRANSITION');
  });

  it.each(['COMPLETED', 'FAILED', 'INTERRUPTED'] as const)('a %s run is INVALID_TRANSITION and unchanged', async (status) => {
    const { owner, runId, session } = await runningRun(t);
    must(await session.finish(status));
    const before = await readRun(t, owner, runId);
    expect(errorCode(await cancelRun(t, owner, runId))).toBe('INVALID_TRANSITION');
    expect(await readRun(t, owner, runId)).toEqual(before);
  });

  it('a cancelled run cannot be cancelled again', async () => {
    const { owner, runId } = await runningRun(t);
    const first = must(await cancelRun(t, owner, runId));
    expect(errorCode(await cancelRun(t, owner, runId))).toBe('INVALID_TRANSITION');
    expect(await readRun(t, owner, runId)).toMatchObject({ status: 'CANCELLED', finishedAt: first.finishedAt });
  });
});

describe(`races on ${backendName}`, () => {
  const ITERATIONS = 20;
  // A generous ceiling for many sequential runs on a shared, busy machine; nothing is timed.
  const RACE_TIMEOUT = 300_000;

  it(`cancel vs finishRun(COMPLETED): exactly one wins, and only its outcome is stored (${ITERATIONS} runs or more)`, async () => {
    const winners = { cancel: 0, finish: 0 };
    // At least ITERATIONS runs, then on until each side has won (which side wins how often moves
    // with the machine's load): at most three times as many.
    for (let i = 0; i < ITERATIONS || (i < 3 * ITERATIONS && (winners.cancel === 0 || winners.finish === 0)); i++) {
      const ctx = await runningRun(t);
      const { session } = ctx;
      await openWork(session);

      const finishing = () =>
        session.finish('COMPLETED', { stateMessages: [{ tool_call_id: 't-await', status: 'error', content: 'from state' }] });
      const cancelling = () => cancelRun(t, ctx.owner, ctx.runId);
      // Alternate who is sent first, so both orders are exercised. finishRun first tries its
      // one statement for a run with no audit open, which finds the open work and leaves it to
      // the run end's transaction: a
      // round trip in which a cancel sent at the same instant nearly always overtakes it. On
      // PostgreSQL the second is therefore sent 0 to 9 ms after the first (spread over the
      // iterations); PGlite runs one statement at a time, so there the two are sent one after
      // the other (the race is sequential there by construction).
      const both = <A, B>(first: () => Promise<A>, second: () => Promise<B>): Promise<[A, B]> =>
        backendName === 'PGlite'
          ? first().then(async (a) => [a, await second()])
          : Promise.all([first(), new Promise((resolve) => setTimeout(resolve, (i % 4) * 3)).then(second)]);
      let finish, cancel;
      if (i % 2 === 0) [finish, cancel] = await both(finishing, cancelling);
      else [cancel, finish] = await both(cancelling, finishing);

      const cancelWon = !cancel.errors;
      expect(cancelWon, `iteration ${i}: exactly one winner`).toBe(!!finish.errors);
      const run = await readRun(t, ctx.owner, ctx.runId);
      const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
      const toolCalls = Object.fromEntries(run.toolCalls.map((call: any) => [call.toolCallId, call.status]));
      if (cancelWon) {
        winners.cancel++;
        expect(errorCode(finish)).toBe('LEASE_LOST');
        expect(run).toMatchObject({ status: 'CANCELLED', error: { code: 'CANCELLED' } });
        for (const key of ['Tool:t-await', 'Tool:t-open', 'Model:m-open']) {
          expect(audits[key], `${i} ${key}`).toMatchObject({ status: 'CANCELLED', output: null });
        }
        expect(toolCalls).toEqual({ 't-await': 'CANCELLED', 't-open': 'CANCELLED' });
      } else {
        winners.finish++;
        expect(errorCode(cancel)).toBe('INVALID_TRANSITION');
        expect(run).toMatchObject({ status: 'COMPLETED', error: null });
        expect(audits['Tool:t-await']).toMatchObject({ status: 'FAILED', output: { content: 'from state' } });
        expect(audits['Tool:t-open']).toMatchObject({ status: 'ABANDONED' });
        expect(audits['Model:m-open']).toMatchObject({ status: 'ABANDONED' });
        expect(toolCalls).toEqual({ 't-await': 'FAILED', 't-open': 'FAILED' });
      }
    }
    expect(winners.cancel + winners.finish).toBeGreaterThanOrEqual(ITERATIONS);
    console.info(`[cancel vs finishRun on ${backendName}] winners:`, winners);
    // Each accepted outcome must really have occurred. On PostgreSQL the two transactions race
    // for the run's row lock; PGlite runs one transaction at a time, so there the race is
    // sequential by construction and the order sent (alternated above) decides the winner.
    expect(winners.cancel, 'a cancel won at least once').toBeGreaterThan(0);
    expect(winners.finish, 'a finish won at least once').toBeGreaterThan(0);
  }, RACE_TIMEOUT);

  it(`cancel vs claimRun on a QUEUED run: the run ends CANCELLED either way, and a winning claim's lease is dead (${ITERATIONS} runs)`, async () => {
    const { owner, worker, threadId } = await runningRun(t);
    for (let i = 0; i < ITERATIONS; i++) {
      const runId = await createRun(t, owner, threadId);
      const [claimed, cancel] = await Promise.all([t.gql(claimRunMutation, { input: { runId } }, worker), cancelRun(t, owner, runId)]);
      expect(cancel.errors, `iteration ${i}`).toBeUndefined();
      expect(await readRun(t, owner, runId)).toMatchObject({ status: 'CANCELLED', leaseOwner: null });
      if (claimed.errors) {
        expect(errorCode(claimed)).toBe('INVALID_TRANSITION');
      } else {
        const lease = claimed.data.result;
        expect(errorCode(await t.gql(claimRunMutation, { input: { runId } }, worker))).toBe('INVALID_TRANSITION');
        expect(errorCode(await new WorkerSession(t, worker, { runId, epoch: lease.epoch }).modelStarted('m1'))).toBe('LEASE_LOST');
      }
    }
  }, RACE_TIMEOUT);

  it(`cancel vs a tool's terminal: the audit shows the finish only if it committed first (${ITERATIONS} runs)`, async () => {
    for (let i = 0; i < ITERATIONS; i++) {
      const ctx = await runningRun(t);
      await ctx.session.declare('m1', [{ id: 't-1', name: 'search' }]);
      must(await ctx.session.toolStarted('t-1', 'search'));

      const [finished, cancel] = await Promise.all([
        ctx.session.toolFinished('t-1', { content: 'done', status: 'success' }),
        cancelRun(t, ctx.owner, ctx.runId),
      ]);
      expect(cancel.errors, `iteration ${i}`).toBeUndefined();
      const audit = (await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:t-1'];
      if (finished.errors) {
        expect(errorCode(finished)).toBe('LEASE_LOST');
        expect(audit).toMatchObject({ status: 'CANCELLED', output: null, toolCall: { status: 'CANCELLED' } });
      } else {
        expect(audit).toMatchObject({ status: 'COMPLETED', output: { content: 'done' }, toolCall: { status: 'COMPLETED' } });
      }
    }
  }, RACE_TIMEOUT);
});
