import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, createThread } from '../support/lifecycle.js';

// A thread with more runs than one page of `Thread.runs` holds: `after` reads the rest.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const RUNS = `query($id: ID!, $first: Int, $after: ID) { thread(id: $id) { runs(first: $first, after: $after) { id } } }`;

/** `count` finished runs written straight into the table, in creation order (test data setup). */
async function insertRuns(threadId: string, count: number): Promise<string[]> {
  const runs = await t.app.db.prisma.run.createManyAndReturn({
    data: Array.from({ length: count }, () => ({ threadId, status: 'COMPLETED' as const, startedAt: new Date(), finishedAt: new Date() })),
    select: { id: true, createdOrder: true },
  });
  return runs.sort((a, b) => (a.createdOrder < b.createdOrder ? -1 : 1)).map((run) => run.id);
}

async function runIds(owner: string, variables: Record<string, unknown>): Promise<string[]> {
  const response = await t.gql(RUNS, variables, owner);
  expect(response.errors).toBeUndefined();
  return (response.data.thread.runs as { id: string }[]).map((run) => run.id);
}

describe('Thread.runs(after:)', () => {
  it('pages exactly past 500 runs: each run once, in creation order', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const created = await insertRuns(threadId, 520);

    const first = await runIds(owner, { id: threadId, first: 500 });
    expect(first).toEqual(created.slice(0, 500));
    const rest = await runIds(owner, { id: threadId, first: 500, after: first[499] });
    expect(rest).toEqual(created.slice(500));
    expect(await runIds(owner, { id: threadId, first: 500, after: rest[19] })).toEqual([]);
    expect(await runIds(owner, { id: threadId, first: 3, after: created[9] })).toEqual(created.slice(10, 13));
  });

  it('reads no runs after a run of another thread or none, and refuses a malformed after', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    await insertRuns(threadId, 3);
    const [otherRun] = await insertRuns(await createThread(t, owner), 1);
    for (const after of [otherRun, '00000000-0000-7000-8000-000000000000']) expect(await runIds(owner, { id: threadId, first: 10, after })).toEqual([]);
    expect(errorCode(await t.gql(RUNS, { id: threadId, first: 10, after: 'not-an-id' }, owner))).toBe('BAD_USER_INPUT');
  });
});
