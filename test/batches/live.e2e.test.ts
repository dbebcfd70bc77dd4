import { afterAll, beforeAll, expect, it } from 'vitest';
import { actors, createRun, createThread, runningRun } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeLive } from '../support/streams.js';
import { startListeningApp, type ListeningApp } from '../subscriptions/support.js';
import { claimEvent, RunEvents, sendBatch } from './support.js';

// SEMANTICS.md, "Batches": a batch's changes are published as if each event came alone, one live
// change each, in commit order: a tool that starts and finishes in one batch is delivered RUNNING,
// then COMPLETED, and threadChanges gets every cursor once.

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const THREAD_CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id status } run { id status } } }`;
const TOOL_STATUS = `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { toolCallId status } }`;

it('delivers each change of a batch once, in commit order, over graphql-ws and SSE', async () => {
  const { owner, worker, threadId, session } = await runningRun(t);
  const { data } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, owner);
  const start = counterOf(data.thread.changeCursor);
  const changes = await subscribeLive(t.app, t.url, 'changes', THREAD_CHANGES, { threadId }, owner);
  const tools = await subscribeLive(t.app, t.url, 'audit', TOOL_STATUS, { threadId }, owner);

  const events = new RunEvents(session.lease);
  const batch = [
    events.modelStarted('m1'),
    events.modelFinished('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'search' }]),
    events.toolStarted('c1'),
    events.toolFinished('c1'),
    events.toolStarted('c2'),
    events.toolFinished('c2'),
    events.finish('COMPLETED'),
  ];
  const response = await sendBatch(t, worker, batch);
  expect(response.data!.result.map((r) => r.error)).toEqual(batch.map(() => null));

  // One change per event, each its own cursor.
  const expected = Array.from({ length: batch.length }, (_, i) => start + BigInt(i + 1));
  for (const stream of changes) {
    await stream.until((results) => payloads(results, 'threadChanges').length >= batch.length, 'every change of the batch');
    const delivered = payloads(stream.results, 'threadChanges');
    expect(delivered.map((change: { cursor: string }) => counterOf(change.cursor))).toEqual(expected);
    expect(delivered.map((change: any) => change.audit?.status ?? `run ${change.run.status}`)).toEqual([
      'RUNNING',
      'COMPLETED',
      'RUNNING',
      'COMPLETED',
      'RUNNING',
      'COMPLETED',
      'run COMPLETED',
    ]);
  }
  for (const stream of tools) {
    await stream.until((results) => payloads(results, 'toolStatusChanged').length >= 4, 'every tool change of the batch');
    expect(payloads(stream.results, 'toolStatusChanged')).toEqual([
      { toolCallId: 'c1', status: 'RUNNING' },
      { toolCallId: 'c1', status: 'COMPLETED' },
      { toolCallId: 'c2', status: 'RUNNING' },
      { toolCallId: 'c2', status: 'COMPLETED' },
    ]);
  }
});

it('delivers a claim of a batch as the run going RUNNING, before the events after it, each once', async () => {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const runId = await createRun(t, who.owner, threadId);
  const { data } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner);
  const start = counterOf(data.thread.changeCursor);
  const changes = await subscribeLive(t.app, t.url, 'changes', THREAD_CHANGES, { threadId }, who.owner);

  const events = new RunEvents({ runId, epoch: 1 });
  const batch = [claimEvent(runId, 'live-claim'), events.modelStarted('m1'), events.modelFinished('m1'), claimEvent(runId, 'live-claim')];
  const response = await sendBatch(t, who.worker, batch);
  expect(response.data!.result.map((r) => r.error)).toEqual(batch.map(() => null));

  // The retried claim (a replay that extends the lease) is a change of its own, as when sent alone.
  for (const stream of changes) {
    await stream.until((results) => payloads(results, 'threadChanges').length >= 4, 'every change of the batch');
    const delivered = payloads(stream.results, 'threadChanges');
    expect(delivered.map((change: { cursor: string }) => counterOf(change.cursor))).toEqual([1, 2, 3, 4].map((i) => start + BigInt(i)));
    expect(delivered.map((change: any) => change.audit?.status ?? `run ${change.run.status}`)).toEqual(['run RUNNING', 'RUNNING', 'COMPLETED', 'run RUNNING']);
  }
});
