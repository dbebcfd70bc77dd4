import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { sendRacing, untilEachOutcome } from '../support/races.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const CREATE_THREAD = `mutation($input: CreateThreadInput!) { result: createThread(input: $input) { id title ownerId } }`;
const CREATE_RUN = `mutation($input: CreateRunInput!) { result: createRun(input: $input) { id status } }`;
const OWN_THREADS = `query($ownerId: String!) { threads(first: 100, ownerId: $ownerId) { edges { node { id } } } }`;
const RUNS = `query($id: ID!) { thread(id: $id) { runCount runs { id } } }`;

const createThreadWith = (token: string, input: { title?: string | null; createId?: string }) => t.gql(CREATE_THREAD, { input }, token);
const createRunWith = (token: string, input: { threadId: string; resumeFromRunId?: string; createId?: string }) => t.gql(CREATE_RUN, { input }, token);
const threadIds = async (token: string, ownerId: string) =>
  (await t.gql(OWN_THREADS, { ownerId }, token)).data.threads.edges.map((edge: { node: { id: string } }) => edge.node.id) as string[];
const runIds = async (token: string, threadId: string) => {
  const { runCount, runs } = (await t.gql(RUNS, { id: threadId }, token)).data.thread;
  expect(runs).toHaveLength(runCount);
  return (runs as { id: string }[]).map((run) => run.id);
};

describe(`createThread with a createId (${backendName})`, () => {
  it('sent again by the same caller gets the thread the first send created, and creates nothing', async () => {
    const { owner, ownerSub } = await actors(t);
    const first = must(await createThreadWith(owner, { title: 'keyed', createId: 'k-1' }));
    const again = must(await createThreadWith(owner, { title: 'keyed', createId: 'k-1' }));
    expect(again).toEqual(first);
    expect(await threadIds(owner, ownerSub)).toEqual([first.id]);
  });

  it('with another title is CONFLICT and creates nothing', async () => {
    const { owner, ownerSub } = await actors(t);
    const first = must(await createThreadWith(owner, { title: 'keyed', createId: 'k-1' }));
    for (const title of ['another', null]) expect(errorCode(await createThreadWith(owner, { title, createId: 'k-1' }))).toBe('CONFLICT');
    expect(await threadIds(owner, ownerSub)).toEqual([first.id]);
  });

  it("is the caller's own: another caller's same key creates that caller's thread", async () => {
    const [a, b] = [await actors(t), await actors(t)];
    const mine = must(await createThreadWith(a.owner, { title: 'keyed', createId: 'shared' }));
    const theirs = must(await createThreadWith(b.owner, { title: 'keyed', createId: 'shared' }));
    expect(theirs.id).not.toBe(mine.id);
    expect(theirs.ownerId).toBe(b.ownerSub);
  });

  it('without a createId creates a thread at every send, as before', async () => {
    const { owner, ownerSub } = await actors(t);
    const ids = [must(await createThreadWith(owner, { title: 'plain' })).id, must(await createThreadWith(owner, { title: 'plain' })).id];
    expect((await threadIds(owner, ownerSub)).sort()).toEqual(ids.sort());
  });

  it('refuses a blank createId or one over 256 characters as BAD_USER_INPUT, and creates nothing', async () => {
    const { owner, ownerSub } = await actors(t);
    for (const createId of ['', ' ', 'k'.repeat(257), 'nul\u0000']) {
      expect(errorCode(await createThreadWith(owner, { createId })), JSON.stringify(createId)).toBe('BAD_USER_INPUT');
    }
    expect(await threadIds(owner, ownerSub)).toEqual([]);
    must(await createThreadWith(owner, { createId: 'k'.repeat(256) }));
  });

  it("a deleted thread's key goes with it: the key then creates a new thread", async () => {
    const { owner, ownerSub } = await actors(t);
    const first = must(await createThreadWith(owner, { title: 'keyed', createId: 'k-1' }));
    must(await t.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: first.id }, owner));
    const second = must(await createThreadWith(owner, { title: 'keyed', createId: 'k-1' }));
    expect(second.id).not.toBe(first.id);
    expect(await threadIds(owner, ownerSub)).toEqual([second.id]);
  });

  it('two sends at once create one thread, and both get it', async () => {
    const { owner, ownerSub } = await actors(t);
    for (let index = 0; index < 10; index++) {
      const input = { title: 'raced', createId: `race-${index}` };
      const [a, b] = await sendRacing(index, () => createThreadWith(owner, input), () => createThreadWith(owner, input));
      expect(must(a).id).toBe(must(b).id);
    }
    expect(await threadIds(owner, ownerSub)).toHaveLength(10);
  });
});

describe(`createRun with a createId (${backendName})`, () => {
  async function thread() {
    const who = await actors(t);
    return { ...who, threadId: await createThread(t, who.owner) };
  }

  it('sent again gets the run the first send created, whatever became of it, and creates nothing', async () => {
    const { owner, worker, threadId } = await thread();
    const first = must(await createRunWith(owner, { threadId, createId: 'r-1' }));
    expect(must(await createRunWith(owner, { threadId, createId: 'r-1' }))).toEqual(first);
    await claim(t, worker, first.id);
    expect(must(await createRunWith(owner, { threadId, createId: 'r-1' }))).toEqual({ id: first.id, status: 'RUNNING' });
    expect(await runIds(owner, threadId)).toEqual([first.id]);
  });

  it('with another resumeFromRunId is CONFLICT and creates nothing', async () => {
    const { owner, worker, threadId } = await thread();
    const ended = await createRun(t, owner, threadId);
    must(await (await claim(t, worker, ended)).finish('INTERRUPTED'));
    const resumed = must(await createRunWith(owner, { threadId, resumeFromRunId: ended, createId: 'r-1' }));
    expect(errorCode(await createRunWith(owner, { threadId, createId: 'r-1' }))).toBe('CONFLICT');
    const plain = must(await createRunWith(owner, { threadId, createId: 'r-2' }));
    expect(errorCode(await createRunWith(owner, { threadId, resumeFromRunId: ended, createId: 'r-2' }))).toBe('CONFLICT');
    expect(must(await createRunWith(owner, { threadId, resumeFromRunId: ended.toUpperCase(), createId: 'r-1' })).id).toBe(resumed.id);
    expect(await runIds(owner, threadId)).toEqual([ended, resumed.id, plain.id]);
  });

  it('is the thread’s own: the same key in another thread creates a run there', async () => {
    const { owner, threadId } = await thread();
    const otherThread = await createThread(t, owner);
    const here = must(await createRunWith(owner, { threadId, createId: 'r-1' }));
    const there = must(await createRunWith(owner, { threadId: otherThread, createId: 'r-1' }));
    expect(there.id).not.toBe(here.id);
    expect(await runIds(owner, otherThread)).toEqual([there.id]);
  });

  it('replays only to those who may create runs in the thread', async () => {
    const { owner, worker, threadId } = await thread();
    must(await createRunWith(owner, { threadId, createId: 'r-1' }));
    for (const token of [worker, await t.token(`stranger-${threadId}`, 'user')]) {
      expect(errorCode(await createRunWith(token, { threadId, createId: 'r-1' }))).toBe('FORBIDDEN');
    }
  });

  it('refuses a blank createId or one over 256 characters as BAD_USER_INPUT, and creates nothing', async () => {
    const { owner, threadId } = await thread();
    for (const createId of ['', ' ', 'k'.repeat(257)]) {
      expect(errorCode(await createRunWith(owner, { threadId, createId })), createId).toBe('BAD_USER_INPUT');
    }
    expect(await runIds(owner, threadId)).toEqual([]);
  });

  it('without a createId creates a run at every send, as before', async () => {
    const { owner, threadId } = await thread();
    const ids = [must(await createRunWith(owner, { threadId })).id, must(await createRunWith(owner, { threadId })).id];
    expect(await runIds(owner, threadId)).toEqual(ids);
  });

  // The loser of a race either finds the winner's key (it started after the winner committed) or
  // has its insert refused by the unique index (both passed the key check): an insert refused has
  // taken a number of the runs' creation order, so the next run's number tells which it was. One
  // PGlite connection runs one statement at a time, so there the key is always found first.
  it('two sends at once create one run, and both get it', async () => {
    const { owner, threadId } = await thread();
    const createdOrder = async (runId: string) =>
      BigInt((await t.app.db.driver.query<{ createdOrder: string }>('SELECT created_order::text AS "createdOrder" FROM run WHERE id = $1', [runId]))[0]!.createdOrder);
    let trials = 0;
    const outcomes = await untilEachOutcome(onPostgres ? ['key found', 'unique index'] : ['key found'], async (index) => {
      trials++;
      const input = { threadId, createId: `race-${index}` };
      const [a, b] = await sendRacing(index, () => createRunWith(owner, input), () => createRunWith(owner, input));
      expect(must(a).id).toBe(must(b).id);
      const next = await createRun(t, owner, threadId);
      return (await createdOrder(next)) - (await createdOrder(must(a).id)) === 1n ? 'key found' : 'unique index';
    });
    expect(outcomes).toEqual(onPostgres ? ['key found', 'unique index'] : ['key found']);
    // Each trial: the raced run and the next one.
    expect(await runIds(owner, threadId)).toHaveLength(2 * trials);
  });
});
