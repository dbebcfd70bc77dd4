import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { claim, createRun, must, runningRun } from '../support/lifecycle.js';
import { subscribeSse } from '../support/streams.js';
import { mergeAuditEvent, type AuditView, type Timeline } from './snapshot-merge.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

// The snapshot and the live stream select the same fields, so an event can replace an item.
const ITEM = `fragment Item on Audit {
  __typename id runId role operationId sequence finishedSequence status
  ... on ToolAudit { toolCall { id status output } }
  ... on ModelAudit { toolCalls { id status output } }
}`;
const SNAPSHOT = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) { truncated items { ...Item } }
  thread(id: $threadId) { runs { id } }
} ${ITEM}`;
const LIVE = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { ...Item } } ${ITEM}`;

async function snapshot(token: string, threadId: string, limit: number): Promise<Timeline> {
  const response = await t.gql(SNAPSHOT, { threadId, limit }, token);
  expect(response.errors).toBeUndefined();
  const { threadAudits, thread } = response.data;
  return { items: threadAudits.items, truncated: threadAudits.truncated, runOrder: thread.runs.map((run: { id: string }) => run.id) };
}

it('a truncated snapshot merged with auditChanged events equals a fresh read', async () => {
  const { session, owner, worker, threadId, runId } = await runningRun(t);
  await session.declare('m1', [{ id: 'call-1', name: 'search' }]); // sequences 1, 2
  must(await session.toolStarted('call-1', 'search')); // 3
  await session.declare('m2', [{ id: 'call-2', name: 'fetch' }]); // 4, 5
  must(await session.toolStarted('call-2', 'fetch')); // 6

  // Subscribe first, then read: nothing committed in between can be missed.
  const live = await subscribeSse(t.app, LIVE, { threadId }, owner);
  let timeline = await snapshot(owner, threadId, 2);
  expect(timeline.truncated).toBe(true);
  expect(timeline.items.map((item) => item.operationId)).toEqual(['m2', 'call-2']);
  expect(timeline.items[0]!.toolCalls).toMatchObject([{ status: 'RUNNING' }]);

  let seen = 0;
  async function apply(expected: number) {
    const events = await live.take(seen + expected);
    for (const event of events.slice(seen)) {
      expect(event.errors).toBeUndefined();
      const audit = event.data.auditChanged as AuditView;
      if (!timeline.runOrder.includes(audit.runId)) timeline = { ...timeline, ...(await snapshotRunOrder(owner, threadId)) };
      timeline = mergeAuditEvent(timeline, audit);
    }
    seen += expected;
  }

  must(await session.toolFinished('call-1', { content: 'one', status: 'success' })); // outside the window
  must(await session.toolFinished('call-2', { content: 'two', status: 'success', artifact: { big: true } }));
  await apply(2);
  expect(timeline.items.map((item) => [item.operationId, item.status])).toEqual([
    ['m2', 'COMPLETED'],
    ['call-2', 'COMPLETED'],
  ]);
  // The ToolCall the event carried also updates the model audit that declared it.
  expect(timeline.items[0]!.toolCalls).toEqual([{ id: timeline.items[1]!.toolCall!.id, status: 'COMPLETED', output: 'two' }]);

  must(await session.finish('INTERRUPTED'));
  const resumed = await claim(t, worker, await createRun(t, owner, threadId, runId));
  // A resumed run starts its sequences again: its entries still come after the first run's.
  must(await resumed.modelStarted('m3'));
  must(await resumed.modelFinished('m3'));
  await apply(2);
  await live.close();

  const fresh = await snapshot(owner, threadId, timeline.items.length);
  expect(timeline.items.map((item) => item.operationId)).toEqual(['m2', 'call-2', 'm3']);
  expect(timeline).toEqual(fresh);
});

it('an event that overtook a newer read never moves an audit backwards', async () => {
  const { session, owner, threadId } = await runningRun(t);
  await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
  const started = must(await session.toolStarted('call-1', 'search'));
  must(await session.toolFinished('call-1', { content: 'done' }));
  const timeline = await snapshot(owner, threadId, 500);
  const finished = timeline.items[1]!;
  const stale = { ...finished, status: 'RUNNING', finishedSequence: null, toolCall: { id: started.toolCall.id, status: 'RUNNING', output: null } };
  expect(stale.id).toBe(started.id);
  expect(mergeAuditEvent(timeline, stale)).toEqual(timeline);
});

async function snapshotRunOrder(token: string, threadId: string) {
  const response = await t.gql(`query($id: ID!) { thread(id: $id) { runs { id } } }`, { id: threadId }, token);
  return { runOrder: response.data.thread.runs.map((run: { id: string }) => run.id) as string[] };
}
