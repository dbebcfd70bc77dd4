import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { actors, claim, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { sendRacing, untilEachOutcome } from '../support/races.js';
import { cancelRun } from '../convergence/helpers.js';
import { RunEvents, type Event } from '../batches/support.js';

// SEMANTICS.md "Batches": a lifecycle mutation's answer shows the moment of its write. A run it
// answers with (a finishRun's, an audit's `run`) is the run as that write left it, never a later
// state: not a later event's of the same batch, nor another worker's that committed before the
// answer was read.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const RACES = 240_000;
// PGlite runs a batch's calls one after another on the event loop, with no turn for another
// request between them: no resume gets in before the batch answers there. On PostgreSQL, when the
// answer's toolCalls were read after the commit, the first trial with a long batch showed the
// resumed run's start in them.
const RESUMES = onPostgres ? ['resumed after the answer', 'resumed before the answer'] : ['resumed after the answer'];
const CALLS = ['c1', 'c2', 'c3', 'c4'];
const TOOL_STARTED = `mutation($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { status run { status } } }`;
const RECORD = `mutation($events: [LifecycleEventInput!]!) {
  result: recordEvents(events: $events) {
    error { code }
    run { status toolCalls { toolCallId status effectiveInput } }
    audit { status run { status finishedAt } ... on ToolAudit { toolCall { status } } }
  }
}`;

describe(`a lifecycle answer's run is the run as its write left it (${backendName})`, () => {
  it("finishRun: the run's toolCalls as the finish left them, though a resumed run started one before the answer was read", async () => {
    const outcomes = await untilEachOutcome(RESUMES, async (index) => {
      const ctx = await runningRun(t);
      await ctx.session.declare('m1', [{ id: 'c1', name: 'search' }]);
      // Another run of the same worker, whose renewals make the batch's answer come late (or not).
      const other = await claim(t, ctx.worker, await createRun(t, ctx.owner, await createThread(t, ctx.owner)));
      const renewals = new RunEvents(other.lease);
      const filler: Event[] = Array.from({ length: index % 2 === 0 ? 0 : 499 }, () => renewals.renew(60));
      let answered = false;
      const batch = t
        .gql(RECORD, { events: [new RunEvents(ctx.session.lease).finish('INTERRUPTED'), ...filler] }, ctx.worker)
        .finally(() => (answered = true));
      // Another worker resumes the run once it has ended, and starts the call the finish left pending.
      const resumer = await actors(t);
      let resumedId: string | undefined;
      while (!resumedId) {
        const created = await t.gql(`mutation($input: CreateRunInput!) { result: createRun(input: $input) { id } }`, {
          input: { threadId: ctx.threadId, resumeFromRunId: ctx.runId },
        }, ctx.owner);
        if (created.errors) expect(errorCode(created)).toBe('INVALID_TRANSITION');
        else resumedId = must(created).id;
      }
      const resumed = await claim(t, resumer.worker, resumedId);
      must(await resumed.toolStarted('c1', 'search', { effectiveInput: { q: 'resumed' } }));
      const outcome = answered ? 'resumed after the answer' : 'resumed before the answer';
      const [finished] = must(await batch);
      expect(finished.run, outcome).toEqual({ status: 'INTERRUPTED', toolCalls: [{ toolCallId: 'c1', status: 'PENDING', effectiveInput: null }] });
      return outcome;
    });
    expect(outcomes).toEqual(RESUMES);
  }, RACES);

  it('recordToolStarted raced against cancelRun: started with its run RUNNING, or refused as LEASE_LOST', async () => {
    // When the answer's run was read after the commit, a RUNNING start showed its run CANCELLED on
    // PostgreSQL in trial 12 of one run, in none of 30 of another: 60 trials.
    const seen = new Set<string>();
    for (let index = 0; index < 60; index++) {
      const ctx = await runningRun(t);
      await ctx.session.declare('m1', CALLS.map((id) => ({ id, name: 'search' })));
      const start = (toolCallId: string) =>
        t.gql<{ result: any }>(TOOL_STARTED, { input: { lease: ctx.session.lease, toolCallId, name: 'search', sequence: '9', observedAt: new Date().toISOString() } }, ctx.worker);
      const [starts] = await sendRacing(index, () => Promise.all(CALLS.map(start)), () => cancelRun(t, ctx.owner, ctx.runId));
      for (const response of starts) {
        if (response.errors) {
          seen.add(errorCode(response)!);
          continue;
        }
        expect(must(response), `trial ${index}`).toEqual({ status: 'RUNNING', run: { status: 'RUNNING' } });
        seen.add('written');
      }
    }
    expect([...seen].sort()).toEqual(['LEASE_LOST', 'written']);
  }, RACES);

  it("recordEvents: each audit's run is as its own event left it, not as the batch's finishRun did", async () => {
    const ctx = await runningRun(t);
    const events = new RunEvents(ctx.session.lease);
    const response = await t.gql(
      RECORD,
      { events: [events.modelStarted('m1'), events.modelFinished('m1', [{ id: 'c1', name: 'search' }]), events.toolStarted('c1'), events.finish('COMPLETED')] },
      ctx.worker,
    );
    const [started, finished, toolStarted, runFinished] = must(response);
    const running = { status: 'RUNNING', finishedAt: null };
    expect(started.audit).toEqual({ status: 'RUNNING', run: running });
    expect(finished.audit).toEqual({ status: 'COMPLETED', run: running });
    expect(toolStarted.audit).toEqual({ status: 'RUNNING', run: running, toolCall: { status: 'RUNNING' } });
    expect(runFinished.run.status).toBe('COMPLETED');
  });
});
