import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, expireLeases, must, runningRun } from '../support/lifecycle.js';
import { threadState, type Scene } from '../write-path/support.js';
import { claimEvent, RunEvents, sendAlone, sendBatch, type Event } from './support.js';

// SEMANTICS.md, "Batches": recordEvents applies 1 to 500 events in order, each exactly as its own
// mutation; a refused event writes nothing and stops nothing; one result per event.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

async function running() {
  const run = await runningRun(t);
  const scene: Scene = { t, owner: run.owner, threadId: run.threadId };
  return { ...run, scene, events: new RunEvents(run.session.lease) };
}

/** Another run, in its own thread of the same owner, claimed by the same worker. */
async function anotherRun(owner: string, worker: string) {
  const threadId = await createThread(t, owner);
  const runId = await createRun(t, owner, threadId);
  const session = await claim(t, worker, runId);
  return { threadId, runId, scene: { t, owner, threadId } as Scene, events: new RunEvents(session.lease) };
}

describe('recordEvents', () => {
  it('applies a whole run in one batch, a tool start binding to the model call finished before it', async () => {
    const { worker, scene, events } = await running();
    const batch = [
      events.modelStarted('m1'),
      events.modelFinished('m1', [{ id: 'c1', name: 'search', args: { q: 1 } }]),
      events.toolStarted('c1'),
      events.toolFinished('c1'),
      events.renew(),
      events.finish('COMPLETED'),
    ];
    const response = await sendBatch(t, worker, batch);
    expect(response.errors).toBeUndefined();
    const results = response.data!.result;
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(results.map((r) => r.error)).toEqual([null, null, null, null, null, null]);
    expect(results[2]!.audit).toMatchObject({ __typename: 'ToolAudit', toolCallId: 'c1', status: 'RUNNING' });
    expect(results[3]!.audit).toMatchObject({ __typename: 'ToolAudit', toolCallId: 'c1', status: 'COMPLETED' });
    expect(results[4]!.lease).toMatchObject({ runId: events.lease.runId, epoch: 1 });
    expect(results[5]!.run).toMatchObject({ id: events.lease.runId, status: 'COMPLETED' });
    const { runs, audits } = await threadState(scene);
    expect(runs[0].toolCalls).toMatchObject([{ toolCallId: 'c1', status: 'COMPLETED' }]);
    expect(audits.items.map((a: any) => [a.operationId, a.status])).toEqual([
      ['m1', 'COMPLETED'],
      ['c1', 'COMPLETED'],
    ]);
  });

  it('replays as a whole when sent again as it is: a bare error, then the tool result that closed its audit', async () => {
    const { worker, scene, events } = await running();
    const batch = [
      events.modelStarted('m1'),
      events.modelFinished('m1', [{ id: 'c1', name: 'search' }]),
      events.toolStarted('c1'),
      events.toolError('c1'),
      events.toolFinished('c1'),
    ];
    const first = (await sendBatch(t, worker, batch)).data!.result;
    expect(first.map((r) => r.error)).toEqual([null, null, null, null, null]);
    const state = await threadState(scene);
    const resent = (await sendBatch(t, worker, batch)).data!.result;
    expect(resent.map((r) => r.error)).toEqual([null, null, null, null, null]);
    expect(resent[3]!.audit).toMatchObject({ toolCallId: 'c1', status: 'COMPLETED', error: { message: 'boom c1' } });
    expect(await threadState(scene)).toEqual(state);
    // Another error, or the same one at a sequence past the close, is still a CONFLICT.
    const late = (await sendBatch(t, worker, [events.toolError('c1', { error: { message: 'other' }, sequence: '3' }), events.toolError('c1')])).data!.result;
    expect(late.map((r) => r.error?.code)).toEqual(['CONFLICT', 'CONFLICT']);
    expect(await threadState(scene)).toEqual(state);
  });

  it('refuses 0 and 501 events with BAD_USER_INPUT and applies nothing', async () => {
    const { worker, scene, events } = await running();
    const before = await threadState(scene);
    const empty = await sendBatch(t, worker, []);
    expect(errorCode(empty)).toBe('BAD_USER_INPUT');
    const tooMany = Array.from({ length: 501 }, (_, i) => events.modelStarted(`m${i}`));
    const over = await sendBatch(t, worker, tooMany);
    expect(errorCode(over)).toBe('BAD_USER_INPUT');
    expect(over.data?.result ?? null).toBeNull();
    expect(await threadState(scene)).toEqual(before);
    // 500 is within the limit.
    const full = await sendBatch(t, worker, tooMany.slice(0, 500));
    expect(full.errors).toBeUndefined();
    expect(full.data!.result.filter((r) => r.error === null)).toHaveLength(500);
  });

  it('is for workers only', async () => {
    const { owner, events } = await running();
    expect(errorCode(await sendBatch(t, owner, [events.renew()]))).toBe('FORBIDDEN');
  });

  it('refuses an event that sets no kind, two kinds, or one kind beside another sent as null (the input is @oneOf), applying nothing', async () => {
    const { worker, scene, events } = await running();
    const before = await threadState(scene);
    const two = { ...events.modelStarted('m1'), ...events.renew() };
    expect(errorCode(await sendBatch(t, worker, [events.modelStarted('m0'), two]))).toBe('BAD_USER_INPUT');
    expect(errorCode(await sendBatch(t, worker, [events.modelStarted('m0'), {}]))).toBe('BAD_USER_INPUT');
    expect(errorCode(await sendBatch(t, worker, [events.modelStarted('m0'), { renewLease: null, ...events.modelStarted('m1') } as never]))).toBe('BAD_USER_INPUT');
    expect(await threadState(scene)).toEqual(before);
  });

  it('refuses a time that is no RFC 3339 instant the database holds (year 0, past 9999 in UTC, 30 February, 24:00), alone or in a batch, applying nothing', async () => {
    const { worker, scene, events } = await running();
    const before = await threadState(scene);
    for (const observedAt of ['0000-01-01T00:00:00Z', '0000-12-31T23:59:59+00:00', '9999-12-31T23:59:59-23:59', '2026-02-30T00:00:00Z', '2025-02-29T12:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T12:00:00+24:00']) {
      const bad = events.modelStarted(`m-${observedAt}`, { observedAt });
      const alone = await sendAlone(t, worker, bad, 0);
      expect(alone.error?.code, observedAt).toBe('BAD_USER_INPUT');
      const batch = await sendBatch(t, worker, [events.modelStarted('m-before'), bad, events.modelStarted('m-after')]);
      expect(errorCode(batch), observedAt).toBe('BAD_USER_INPUT');
      expect(batch.errors![0]!.message).toMatch(/DateTime/);
    }
    expect(await threadState(scene)).toEqual(before);
    // The edges of what is held, and a leap day, are times like any other.
    const edges = ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-02-29T23:59:59+05:30'].map((observedAt, i) => events.modelStarted(`edge-${i}`, { observedAt }));
    expect((await sendBatch(t, worker, edges)).data!.result.map((r) => r.error)).toEqual([null, null, null]);
  });

  it('after a lease lost mid-batch refuses the rest of that run and still applies the other runs', async () => {
    const first = await running();
    const second = await anotherRun(first.owner, first.worker);
    const batch = [
      first.events.modelStarted('a1'),
      second.events.modelStarted('b1'),
      first.events.finish('COMPLETED'),
      first.events.modelFinished('a1'),
      second.events.modelFinished('b1'),
      first.events.renew(),
    ];
    const results = (await sendBatch(t, first.worker, batch)).data!.result;
    expect(results.map((r) => r.error?.code ?? null)).toEqual([null, null, null, 'LEASE_LOST', null, 'LEASE_LOST']);
    expect(results.map((r) => r.error?.runStatus ?? null)).toEqual([null, null, null, 'COMPLETED', null, 'COMPLETED']);
    // The run's end abandoned its open model call; the refused close wrote nothing.
    const firstAudits = (await threadState(first.scene)).audits.items;
    expect(firstAudits.map((a: any) => a.status)).toEqual(['ABANDONED']);
    expect((await threadState(second.scene)).audits.items.map((a: any) => a.status)).toEqual(['COMPLETED']);
  });

  it("refuses an event for another worker's run (or for no run) on its own, and applies the caller's", async () => {
    const mine = await running();
    const theirs = await running();
    const before = await threadState(theirs.scene);
    const missing = new RunEvents({ runId: '00000000-0000-4000-8000-000000000000', epoch: 1 });
    const batch = [
      mine.events.modelStarted('a1'),
      theirs.events.modelStarted('b1'),
      theirs.events.renew(),
      missing.renew(),
      mine.events.modelFinished('a1'),
    ];
    const results = (await sendBatch(t, mine.worker, batch)).data!.result;
    expect(results.map((r) => r.error?.code ?? null)).toEqual([null, 'LEASE_LOST', 'LEASE_LOST', 'NOT_FOUND', null]);
    expect(results[1]!.error!.message).toMatch(/held by another worker/);
    expect(results[1]!.error!.runStatus).toBeNull();
    expect((await threadState(mine.scene)).audits.items.map((a: any) => a.status)).toEqual(['COMPLETED']);
    expect(await threadState(theirs.scene)).toEqual(before);
  });

  it('answers an expired lease with LEASE_EXPIRED per event, and other runs go on', async () => {
    const first = await running();
    const second = await anotherRun(first.owner, first.worker);
    await expireLeases(t.app.db.driver, [first.runId]);
    const results = (await sendBatch(t, first.worker, [first.events.modelStarted('a1'), second.events.modelStarted('b1')])).data!.result;
    expect(results.map((r) => r.error?.code ?? null)).toEqual(['LEASE_EXPIRED', null]);
  });

  it('replays every event when the same batch is sent again (as after a cut connection), and changes nothing', async () => {
    const { worker, scene, events } = await running();
    const batch = [
      events.modelStarted('m1'),
      events.modelFinished('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'search' }]),
      events.toolStarted('c1'),
      events.toolStarted('c2'),
      events.toolFinished('c1'),
      events.toolError('c2'),
    ];
    const first = (await sendBatch(t, worker, batch)).data!.result;
    expect(first.every((r) => r.error === null)).toBe(true);
    const state = await threadState(scene);
    const again = (await sendBatch(t, worker, batch)).data!.result;
    // Each event answers as its own mutation replayed would: no error, the audit as it is now.
    expect(again.map((r) => [r.index, r.error, r.audit?.id])).toEqual(first.map((r) => [r.index, null, r.audit?.id]));
    expect(await threadState(scene)).toEqual(state);
  });

  it('answers each refusal with the code its own mutation answers', async () => {
    const { worker, scene, events } = await running();
    must(await t.gql(`mutation($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { id } }`, {
      input: { ...events.modelStarted('m-open').modelStarted },
    }, worker));
    const stale = new RunEvents({ ...events.lease, epoch: events.lease.epoch + 1 });
    const missing = new RunEvents({ runId: '00000000-0000-4000-8000-000000000000', epoch: 1 });
    const cases: [string, Event][] = [
      ['LEASE_LOST', stale.modelStarted('x')],
      ['NOT_FOUND', missing.renew()],
      ['CONFLICT', events.modelStarted('m-open', { input: { other: true } })],
      ['BAD_USER_INPUT', events.modelFinished('m-open', [], { status: 'RUNNING' })],
      ['BAD_USER_INPUT', events.modelStarted(' ')],
      ['NAMESPACE_REJECTED', events.toolStarted('c1', 'search', { namespace: ['sub'] })],
      ['INVALID_TRANSITION', events.toolFinished('never-started')],
      ['INVALID_TRANSITION', events.modelFinished('never-started')],
      ['MODEL_NOT_FOUND', events.toolStarted('never-declared')],
      ['BAD_USER_INPUT', events.toolStarted('c1', 'search', { effectiveInput: [1, 2] })],
    ];
    const before = await threadState(scene);
    const results = (await sendBatch(t, worker, cases.map(([, event]) => event))).data!.result;
    expect(results.map((r) => r.error?.code ?? null)).toEqual(cases.map(([code]) => code));
    expect(await threadState(scene)).toEqual(before);
    // Each code and message is the one the event's own mutation answers, and that too changes nothing.
    for (const [index, [, event]] of cases.entries()) {
      const alone = await sendAlone(t, worker, event, index);
      expect(alone.error, JSON.stringify(event)).toEqual(results[index]!.error);
    }
    expect(await threadState(scene)).toEqual(before);
  });
});

describe('recordEvents: claims', () => {
  /** A fresh owner's thread with `count` QUEUED runs, and a fresh worker. */
  async function queued(count: number) {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runIds: string[] = [];
    for (let i = 0; i < count; i++) runIds.push(await createRun(t, who.owner, threadId));
    return { ...who, threadId, runIds, scene: { t, owner: who.owner, threadId } as Scene };
  }

  it('claims as the claimRun mutation does: the lease, and a retry with the same claimId gets it back either way', async () => {
    const { worker, workerSub, runIds: [batched, alone] } = await queued(2);
    const [claimed] = (await sendBatch(t, worker, [claimEvent(batched!, 'claim-b')])).data!.result;
    expect(claimed).toMatchObject({ index: 0, error: null, audit: null, run: null, lease: { runId: batched, owner: workerSub, epoch: 1 } });
    // The mutation retrying the batch's claim, and a batch retrying the mutation's: the same lease.
    expect(await sendAlone(t, worker, claimEvent(batched!, 'claim-b'))).toEqual(claimed);
    const single = await sendAlone(t, worker, claimEvent(alone!, 'claim-a'));
    expect(single.lease).toMatchObject({ runId: alone, epoch: 1 });
    expect((await sendBatch(t, worker, [claimEvent(alone!, 'claim-a')])).data!.result).toEqual([single]);
  });

  it('answers each refused claim with the code the mutation answers, and changes nothing', async () => {
    const { worker, runIds: [running, ended], scene } = await queued(2);
    must(await t.gql(`mutation($id: ID!) { result: cancelRun(runId: $id) { id } }`, { id: ended }, scene.owner));
    const [first] = (await sendBatch(t, worker, [claimEvent(running!, 'first')])).data!.result;
    expect(first!.error).toBeNull();
    const other = await t.token(`other-worker-${Math.random().toString(36).slice(2)}`, 'worker');
    const cases: [string, Event, string][] = [
      ['INVALID_TRANSITION', claimEvent(running!, 'second'), worker],
      ['INVALID_TRANSITION', claimEvent(running!), worker],
      ['INVALID_TRANSITION', claimEvent(running!, 'first'), other],
      ['INVALID_TRANSITION', claimEvent(ended!, 'late'), worker],
      ['NOT_FOUND', claimEvent('00000000-0000-4000-8000-000000000000', 'x'), worker],
      ['BAD_USER_INPUT', claimEvent(running!, ' '), worker],
      ['BAD_USER_INPUT', claimEvent(running!, 'k'.repeat(257)), worker],
    ];
    const before = await threadState(scene);
    for (const [index, [code, event, token]] of cases.entries()) {
      const [result] = (await sendBatch(t, token, [event])).data!.result;
      expect(result!.error?.code, String(index)).toBe(code);
      expect(await sendAlone(t, token, event), String(index)).toEqual(result);
    }
    expect(await threadState(scene)).toEqual(before);
  });

  it('a claim refused mid-batch stops nothing: the other claims and runs go on, and a run claimed earlier in the batch is fenced by its lease', async () => {
    const first = await running();
    const second = await anotherRun(first.owner, first.worker);
    const threadId = await createThread(t, first.owner);
    const fresh = await createRun(t, first.owner, threadId);
    const later = new RunEvents({ runId: fresh, epoch: 1 });
    const batch = [
      later.modelStarted('too-early'),
      claimEvent(first.runId, 'again'),
      first.events.modelStarted('a1'),
      claimEvent(fresh, 'fresh'),
      claimEvent('00000000-0000-4000-8000-000000000000', 'missing'),
      second.events.modelStarted('b1'),
      later.modelStarted('f1'),
    ];
    const results = (await sendBatch(t, first.worker, batch)).data!.result;
    expect(results.map((r) => r.error?.code ?? null)).toEqual(['LEASE_LOST', 'INVALID_TRANSITION', null, null, 'NOT_FOUND', null, null]);
    expect(results[3]!.lease).toMatchObject({ runId: fresh, epoch: 1 });
    expect(results[6]!.audit).toMatchObject({ operationId: 'f1', status: 'RUNNING' });
    const { runs, audits } = await threadState({ t, owner: first.owner, threadId });
    expect(runs.map((r: any) => r.status)).toEqual(['RUNNING']);
    expect(audits.items.map((a: any) => a.operationId)).toEqual(['f1']);
  });
});
