import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';

// A new row's id is a UUIDv7 stamped by the clock of the instance that wrote it. Two instances'
// clocks differ: a tool call run again in a resume, on an instance whose clock is behind the one
// that ran it first, has the lesser id, yet it is the latest execution, by the database's clock.

const clockAheadMs = { value: 0 };
vi.mock('../../src/domain/ids.js', async (importOriginal) => {
  const ids = await importOriginal<typeof import('../../src/domain/ids.js')>();
  return { ...ids, newId: () => (clockAheadMs.value ? uuidv7({ msecs: Date.now() + clockAheadMs.value }) : ids.newId()) };
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe(`a tool call's latest execution when instances' clocks differ (${backendName})`, () => {
  it('is the resume\'s, written by an instance 10 minutes behind the first one', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner, 'clocks');
    const firstRun = await createRun(t, who.owner, threadId);
    clockAheadMs.value = 10 * 60_000;
    const first = await claim(t, who.worker, firstRun);
    await first.declare('plan', [{ id: 'fetch-1', name: 'fetch', args: { url: 'a' } }]);
    must(await first.toolStarted('fetch-1', 'fetch', { effectiveInput: { url: 'a', attempt: 1 } }));
    must(await first.finish('INTERRUPTED'));
    clockAheadMs.value = 0;

    const resumeRun = await createRun(t, who.owner, threadId, firstRun);
    const resumed = await claim(t, who.worker, resumeRun);
    const second = must(await resumed.toolStarted('fetch-1', 'fetch', { effectiveInput: { url: 'a', attempt: 2 } }));
    must(await resumed.toolFinished('fetch-1', { content: 'fetched', status: 'success' }));
    must(await resumed.finish('COMPLETED'));

    const ledger = await t.gql(
      `query($threadId: ID) { toolCallLedger(threadId: $threadId) { edges { node { status executedInRunId auditId effectiveInput } } } }`,
      { threadId },
      who.owner,
    );
    expect(ledger.errors).toBeUndefined();
    expect(ledger.data.toolCallLedger.edges.map((edge: { node: unknown }) => edge.node)).toEqual([
      { status: 'COMPLETED', executedInRunId: resumeRun, auditId: second.id, effectiveInput: { url: 'a', attempt: 2 } },
    ]);

    const runs = await t.gql(
      `query($threadId: ID!) { thread(id: $threadId) { runs { id toolCalls { status effectiveInput output } } } }`,
      { threadId },
      who.owner,
    );
    expect(runs.errors).toBeUndefined();
    expect(runs.data.thread.runs.find((run: { id: string }) => run.id === firstRun).toolCalls).toEqual([
      { status: 'COMPLETED', effectiveInput: { url: 'a', attempt: 2 }, output: 'fetched' },
    ]);
  });
});
