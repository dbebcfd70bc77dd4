import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { failingInserts } from '../support/failing-inserts.js';
import { runningRun } from '../support/lifecycle.js';
import { threadState, type Scene } from '../write-path/support.js';
import { RunEvents, sendBatch, type Event } from './support.js';

// A statement the database gives up on (the statement timeout, 57014; a lock timeout, 55P03) is
// passing trouble: UNAVAILABLE, which clients retry (docs/semantics.md, "Errors"). A trigger raises
// it for one operation id, as a lock held past the timeout would, on both backends.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

/** Every insert of a model call `operationId` fails as a statement the database gave up on, until the returned function runs. */
const timesOut = (operationId: string, sqlstate: '57014' | '55P03') => failingInserts(t, operationId, sqlstate, 'canceling statement due to a timeout');

async function running() {
  const run = await runningRun(t);
  const scene: Scene = { t, owner: run.owner, threadId: run.threadId };
  return { ...run, scene, events: new RunEvents(run.session.lease) };
}

const operationIds = async (scene: Scene) => (await threadState(scene)).audits.items.map((audit: { operationId: string }) => audit.operationId);

describe('a lifecycle write the database gave up on', () => {
  it.each(['57014', '55P03'] as const)('(%s) answers UNAVAILABLE, writes nothing, and applies when sent again', async (sqlstate) => {
    const { worker, scene, events } = await running();
    const batch = [events.modelStarted('m1'), events.modelStarted(`slow-${sqlstate}`)];
    const healed = await timesOut(`slow-${sqlstate}`, sqlstate);
    let response;
    try {
      response = await sendBatch(t, worker, batch);
    } finally {
      await healed();
    }
    expect(errorCode(response), response.errors?.[0]?.message).toBe('UNAVAILABLE');
    expect(response.errors![0]!.message).not.toMatch(/timeout|canceling/);
    expect(await operationIds(scene)).toEqual([]);
    expect((await sendBatch(t, worker, batch)).data!.result.map((result) => result.error)).toEqual([null, null]);
  });
});

describe('a batch that fails after some of its calls committed', () => {
  it('answers what was applied: the committed calls keep their results, the failed call and those after it answer UNAVAILABLE per event', async () => {
    const { worker, scene, events } = await running();
    // 50 events to a call: the first call commits; the second fails at its first event.
    const batch: Event[] = [];
    for (let i = 0; i < 50; i++) batch.push(events.modelStarted(`m${i}`));
    batch.push(events.modelStarted('slow'), events.modelStarted('after'));
    for (let i = 0; i < 50; i++) batch.push(events.modelStarted(`late${i}`));
    const healed = await timesOut('slow', '57014');
    let response;
    try {
      response = await sendBatch(t, worker, batch);
    } finally {
      await healed();
    }
    expect(response.errors).toBeUndefined();
    const results = response.data!.result;
    expect(results.map((result) => result.index)).toEqual(batch.map((_, index) => index));
    expect(results.slice(0, 50).map((result) => [result.error, result.audit?.status])).toEqual(Array(50).fill([null, 'RUNNING']));
    for (const result of results.slice(50)) {
      expect(result.audit).toBeNull();
      expect(result.error).toMatchObject({ code: 'UNAVAILABLE', runStatus: null });
    }
    expect(await operationIds(scene)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
    // Sent again as it is, the applied events replay and the rest apply.
    const resent = (await sendBatch(t, worker, batch)).data!.result;
    expect(resent.map((result) => result.error)).toEqual(batch.map(() => null));
    expect(resent.slice(0, 50).map((result) => result.audit!.id)).toEqual(results.slice(0, 50).map((result) => result.audit!.id));
    expect(await operationIds(scene)).toHaveLength(batch.length);
  });
});
