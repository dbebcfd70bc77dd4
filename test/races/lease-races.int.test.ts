import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredLeases } from '../../src/domain/convergence.js';
import { EVENTS_PER_CALL } from '../../src/domain/lifecycle-events.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, claim, createRun, expireLeases, must, runningRun } from '../support/lifecycle.js';
import { sendRacing, untilEachOutcome } from '../support/races.js';
import { auditsOf, readRun } from '../convergence/helpers.js';
import { threadState } from '../write-path/support.js';
import { RunEvents, sendAlone, sendBatch } from '../batches/support.js';

// SEMANTICS.md "Runs and leases", "Batches": the races test/races/history.int.test.ts mixes at
// random, each on its own, played until every outcome the contract allows has happened: a batch
// sent again after its lease expired racing the sweep that takes the run over, a resume racing that
// sweep, a tool start (bound through the resume ancestry) racing its run's end, a single event and
// a batch racing for one audit, and two batches of one run interleaving their calls.

let t: TestApp;
beforeAll(async () => {
  // Only the tests sweep, so that each race is between what the test sends.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' });
});
afterAll(() => t.close());

const RACES = 120_000;
const sweep = () => sweepExpiredLeases(t.app.deps);
const createRunWith = (owner: string, threadId: string, resumeFromRunId: string, createId: string) =>
  t.gql(`mutation($input: CreateRunInput!) { result: createRun(input: $input) { id } }`, { input: { threadId, resumeFromRunId, createId } }, owner);

describe(`lease races (${backendName})`, () => {
  it('a batch sent again after its lease expired, racing the sweep: every event refused, LEASE_EXPIRED before the sweep and LEASE_LOST after it, and the takeover keeps what was recorded', async () => {
    const outcomes = await untilEachOutcome(['LEASE_EXPIRED', 'LEASE_LOST'], async (index) => {
      const ctx = await runningRun(t);
      const events = new RunEvents(ctx.session.lease);
      const batch = [events.modelStarted('m1'), events.modelFinished('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'fetch' }]), events.toolStarted('c1'), events.toolError('c1')];
      expect((await sendBatch(t, ctx.worker, batch)).data!.result.map((result) => result.error)).toEqual([null, null, null, null]);
      await expireLeases(t.app.db.driver, [ctx.runId]);

      const [again] = await sendRacing(index, () => sendBatch(t, ctx.worker, batch), sweep);
      // On PostgreSQL the sweep may commit between two events of the call (a refused event's sub-block keeps no lock).
      const refusals = again.data!.result.map((result) => [result.error?.code, result.error?.runStatus]);
      const expired = refusals.filter(([code]) => code === 'LEASE_EXPIRED').length;
      expect(refusals).toEqual([...Array(expired).fill(['LEASE_EXPIRED', null]), ...Array(batch.length - expired).fill(['LEASE_LOST', 'FAILED'])]);
      const code = refusals[0]![0];
      expect(await readRun(t, ctx.owner, ctx.runId)).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });

      // Taken over: a resume claimed by another worker runs the call the expired run never started.
      const scene = { t, owner: ctx.owner, threadId: ctx.threadId };
      const resumeId = await createRun(t, ctx.owner, ctx.threadId, ctx.runId);
      const other = await claim(t, (await actors(t)).worker, resumeId);
      must(await other.toolStarted('c2', 'fetch'));
      const before = await threadState(scene);
      const late = await sendBatch(t, ctx.worker, batch);
      expect(late.data!.result.map((result) => [result.error?.code, result.error?.runStatus])).toEqual(Array(4).fill(['LEASE_LOST', 'FAILED']));
      expect(await threadState(scene)).toEqual(before);
      expect(await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId)).toMatchObject({ 'Tool:c1': { status: 'ABANDONED', error: { message: 'boom c1' } }, 'Model:m1': { status: 'COMPLETED' } });
      return code!;
    });
    expect(outcomes).toEqual(['LEASE_EXPIRED', 'LEASE_LOST']);
  }, RACES);

  it('a resume racing the sweep of the run it resumes: refused while that run still runs, else created; the resume then binds to its declarations', async () => {
    const outcomes = await untilEachOutcome(['created', 'INVALID_TRANSITION'], async (index) => {
      const ctx = await runningRun(t);
      const declaring = await ctx.session.declare('m1', [{ id: 'c1', name: 'search' }]);
      await expireLeases(t.app.db.driver, [ctx.runId]);

      const [raced] = await sendRacing(index, () => createRunWith(ctx.owner, ctx.threadId, ctx.runId, 'resume-1'), sweep);
      const outcome = raced.errors ? errorCode(raced)! : 'created';
      if (raced.errors) expect(await readRun(t, ctx.owner, ctx.runId)).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
      // The same createId again: the run the first created, or the first now that the run has ended.
      const resumed = must(await createRunWith(ctx.owner, ctx.threadId, ctx.runId, 'resume-1'));
      if (!raced.errors) expect(resumed.id).toBe(raced.data.result.id);
      const runs = (await t.gql(`query($id: ID!) { thread(id: $id) { runs { id } } }`, { id: ctx.threadId }, ctx.owner)).data.thread.runs;
      expect(runs).toHaveLength(2);

      const other = await claim(t, (await actors(t)).worker, resumed.id);
      const started = must(await other.toolStarted('c1', 'search'));
      expect(started.toolCall.status).toBe('RUNNING');
      expect((await auditsOf(t, ctx.owner, ctx.threadId, resumed.id))['Tool:c1'].declaredBy).toEqual({ id: declaring.id, operationId: 'm1' });
      expect(errorCode(await ctx.session.modelStarted('m2'))).toBe('LEASE_LOST');
      return outcome;
    });
    expect(outcomes).toEqual(['INVALID_TRANSITION', 'created']);
  }, RACES);

  it("a tool start bound through the resume ancestry, racing its run's end: started then interrupted, or refused; a later resume runs it either way", async () => {
    const outcomes = await untilEachOutcome(['started, then interrupted', 'LEASE_LOST'], async (index) => {
      const ctx = await runningRun(t);
      const declaring = await ctx.session.declare('m1', [{ id: 'c1', name: 'search' }]);
      must(await ctx.session.finish('INTERRUPTED'));
      const first = await claim(t, ctx.worker, await createRun(t, ctx.owner, ctx.threadId, ctx.runId));
      const ending = new RunEvents(first.lease);

      // The start alone, the run's end in a batch.
      const [start, end] = await sendRacing(index, () => first.toolStarted('c1', 'search'), () => sendBatch(t, ctx.worker, [ending.finish('INTERRUPTED')]));
      expect(end.data!.result[0]!.error).toBeNull();
      const audit = (await auditsOf(t, ctx.owner, ctx.threadId, first.lease.runId))['Tool:c1'];
      if (start.errors) {
        expect([errorCode(start), start.errors[0]!.extensions!.runStatus]).toEqual(['LEASE_LOST', 'INTERRUPTED']);
        expect(audit).toBeUndefined();
      } else {
        expect(audit).toMatchObject({ status: 'INTERRUPTED', declaredBy: { id: declaring.id } });
      }
      const toolCall = (await readRun(t, ctx.owner, ctx.runId)).toolCalls[0];
      expect(toolCall).toMatchObject({ toolCallId: 'c1', status: 'PENDING' });

      const second = await claim(t, ctx.worker, await createRun(t, ctx.owner, ctx.threadId, first.lease.runId));
      expect(must(await second.toolStarted('c1', 'search')).toolCall).toMatchObject({ id: toolCall.id, status: 'RUNNING' });
      return start.errors ? errorCode(start)! : 'started, then interrupted';
    });
    expect(outcomes).toEqual(['LEASE_LOST', 'started, then interrupted']);
  }, RACES);

  it("a tool's terminal sent alone and another in a batch: one wins, the other is CONFLICT every time it is sent, and the audit and its ToolCall show the winner's", async () => {
    const outcomes = await untilEachOutcome(['alone', 'in the batch'], async (index) => {
      const ctx = await runningRun(t);
      await ctx.session.declare('m1', [{ id: 'c1', name: 'search' }]);
      must(await ctx.session.toolStarted('c1', 'search'));
      const events = new RunEvents(ctx.session.lease);
      const alone = events.toolFinished('c1', { output: { content: 'alone', status: 'success' } });
      const batch = [events.modelStarted('m2'), events.toolFinished('c1', { output: { content: 'batch', status: 'error' } }), events.renew()];

      const [single, batched] = await sendRacing(index, () => sendAlone(t, ctx.worker, alone), () => sendBatch(t, ctx.worker, batch));
      const results = batched.data!.result;
      expect([results[0]!.error, results[2]!.error]).toEqual([null, null]);
      const winner = single.error ? 'in the batch' : 'alone';
      const loser = single.error ? single : results[1]!;
      expect(loser.error?.code).toBe('CONFLICT');
      expect(single.error === null).not.toBe(results[1]!.error === null);
      // The loser sent again: the same refusal; the winner sent again: its replay.
      expect((await sendAlone(t, ctx.worker, single.error ? alone : batch[1]!)).error?.code).toBe('CONFLICT');
      expect((await sendAlone(t, ctx.worker, single.error ? batch[1]! : alone)).error).toBeNull();
      const audit = (await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId))['Tool:c1'];
      expect(audit).toMatchObject(
        winner === 'alone'
          ? { status: 'COMPLETED', output: { content: 'alone' }, toolCall: { status: 'COMPLETED', output: 'alone' } }
          : { status: 'FAILED', output: { content: 'batch' }, toolCall: { status: 'FAILED', output: 'batch' } },
      );
      return winner;
    });
    expect(outcomes).toEqual(['alone', 'in the batch']);
  }, RACES);

  it('two batches of one run, each longer than one call: a tool start is bound or MODEL_NOT_FOUND as its declaration committed before it or not, and the record holds exactly the bound ones', async () => {
    const CALLS = 30; // two events each: longer than one call of EVENTS_PER_CALL
    expect(2 * CALLS).toBeGreaterThan(EVENTS_PER_CALL);
    const outcomes = await untilEachOutcome(['every start bound', 'some starts before their declaration'], async (index) => {
      const ctx = await runningRun(t);
      const events = new RunEvents(ctx.session.lease);
      const declaring = Array.from({ length: CALLS }, (_, i) => [events.modelStarted(`m${i}`), events.modelFinished(`m${i}`, [{ id: `c${i}`, name: 'search' }])]).flat();
      const starting = Array.from({ length: 2 * CALLS }, (_, i) => (i % 2 === 0 ? events.toolStarted(`c${i / 2}`) : events.renew()));

      const [declared, started] = await sendRacing(index, () => sendBatch(t, ctx.worker, declaring), () => sendBatch(t, ctx.worker, starting));
      expect(declared.data!.result.filter((result) => result.error)).toEqual([]);
      const starts = started.data!.result.filter((_, i) => i % 2 === 0);
      expect(started.data!.result.filter((result, i) => i % 2 === 1 && result.error)).toEqual([]);
      expect(new Set(starts.filter((result) => result.error).map((result) => result.error!.code))).toEqual(new Set(starts.some((result) => result.error) ? ['MODEL_NOT_FOUND'] : []));
      const bound = starts.flatMap((result, i) => (result.error ? [] : [`c${i}`]));
      const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
      expect(Object.keys(audits).filter((key) => key.startsWith('Tool:')).sort()).toEqual(bound.map((id) => `Tool:${id}`).sort());
      const toolCalls = (await readRun(t, ctx.owner, ctx.runId)).toolCalls;
      expect(toolCalls.map((call: any) => [call.toolCallId, call.status])).toEqual(Array.from({ length: CALLS }, (_, i) => [`c${i}`, bound.includes(`c${i}`) ? 'RUNNING' : 'PENDING']));
      return bound.length === CALLS ? 'every start bound' : 'some starts before their declaration';
    });
    expect(outcomes).toEqual(['every start bound', 'some starts before their declaration']);
  }, RACES);
});
