import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// Issue 44: toolCallStats reads the counts the database keeps per (tool, status) instead of
// counting every call of the thread. Whatever the lifecycle did, they are what counting the
// ToolCall projection gives.

let t: TestApp;
let who: Actors;
beforeAll(async () => {
  t = await startTestApp();
  who = await actors(t);
});
afterAll(() => t.close());

const STATS = `query($id: ID!) { toolCallStats(threadId: $id) { name status count } }`;

/** toolCallStats, and the same counts taken from the projection itself, statuses in their declared order. */
async function statsAndCounted(threadId: string) {
  const response = await t.gql(STATS, { id: threadId }, who.owner);
  expect(response.errors).toBeUndefined();
  const counted = await t.app.db.driver.query<{ name: string; status: string; count: number }>(
    `SELECT name, status, count(*)::int AS count FROM tool_call WHERE thread_id = $1::uuid GROUP BY name, status ORDER BY name, status`,
    [threadId],
  );
  return { stats: response.data.toolCallStats, counted };
}

describe(`toolCallStats from kept counts (${backendName})`, () => {
  it('follow declarations, starts, ends, errors, an interrupted run and a resumed one; another thread apart', async () => {
    const threadId = await createThread(t, who.owner, 'counts');
    const other = await createThread(t, who.owner, 'other');
    const runId = await createRun(t, who.owner, threadId);
    const worker = await claim(t, who.worker, runId);
    const steps: (() => Promise<unknown>)[] = [
      () => worker.declare('m1', [{ id: 'a', name: 'search' }, { id: 'b', name: 'search' }, { id: 'c', name: 'fetch' }]),
      async () => must(await worker.toolStarted('a', 'search')),
      async () => must(await worker.toolFinished('a', { content: 'found', status: 'success' })),
      async () => must(await worker.toolStarted('b', 'search')),
      async () => must(await worker.toolError('b', { message: 'boom' })),
      async () => must(await worker.toolStarted('c', 'fetch')),
      async () => must(await worker.finish('INTERRUPTED')),
    ];
    const seen: unknown[] = [];
    for (const step of steps) {
      await step();
      const { stats, counted } = await statsAndCounted(threadId);
      expect(stats).toEqual(counted);
      seen.push(stats);
    }
    // The interrupted run sends its running fetch and its bare error (awaiting the run's verdict) back to PENDING.
    expect(seen.at(-1)).toEqual([
      { name: 'fetch', status: 'PENDING', count: 1 },
      { name: 'search', status: 'PENDING', count: 1 },
      { name: 'search', status: 'COMPLETED', count: 1 },
    ]);
    expect(seen).toContainEqual(expect.arrayContaining([{ name: 'fetch', status: 'RUNNING', count: 1 }]));

    const resumed = await claim(t, who.worker, await createRun(t, who.owner, threadId, runId));
    const failing = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    const later: (() => Promise<unknown>)[] = [
      async () => must(await resumed.toolStarted('c', 'fetch')),
      async () => must(await resumed.toolFinished('c', { content: 'ok', status: 'success' })),
      () => failing.declare('m2', [{ id: 'd', name: 'search' }]),
      async () => must(await failing.toolStarted('d', 'search')),
      async () => must(await failing.toolError('d', { message: 'boom' })),
      async () => must(await failing.finish('FAILED')),
    ];
    for (const step of later) {
      await step();
      const { stats, counted } = await statsAndCounted(threadId);
      expect(stats).toEqual(counted);
      seen.push(stats);
    }
    expect(seen.at(-1)).toEqual([
      { name: 'fetch', status: 'COMPLETED', count: 1 },
      { name: 'search', status: 'PENDING', count: 1 },
      { name: 'search', status: 'COMPLETED', count: 1 },
      { name: 'search', status: 'FAILED', count: 1 },
    ]);
    expect((await statsAndCounted(other)).stats).toEqual([]);
  });

  it('go with their thread when it is deleted', async () => {
    const threadId = await createThread(t, who.owner, 'deleted');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    await worker.declare('m1', [{ id: 'a', name: 'search' }]);
    const kept = () => t.app.db.driver.query(`SELECT count FROM tool_call_count WHERE thread_id = $1::uuid`, [threadId]);
    expect(await kept()).toEqual([{ count: 1 }]);
    const deleted = await t.gql(`mutation($id: ID!) { deleteThread(id: $id) { toolCalls } }`, { id: threadId }, who.owner);
    expect(deleted.errors).toBeUndefined();
    expect(deleted.data.deleteThread.toolCalls).toBe(1);
    expect(await kept()).toEqual([]);
  });
});
