import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { claim, createRun, createThread, must } from '../support/lifecycle.js';

let t: TestApp;
let alice: string; // user, thread owner
let mallory: string; // another user
let admin: string;
let worker: string;
beforeAll(async () => {
  t = await startTestApp();
  [alice, mallory, admin, worker] = await Promise.all([
    t.token('alice', 'user'),
    t.token('mallory', 'user'),
    t.token('ada', 'admin'),
    t.token('w-1', 'worker'),
  ]);
});
afterAll(() => t.close());

const THREAD = `query($id: ID!) { thread(id: $id) { id title ownerId createdAt messageCount messages { role content } runs { id status } } }`;
const APPEND = `mutation($input: AppendMessageInput!) { result: appendMessage(input: $input) { id role content createdAt } }`;
const RUN = `query($id: ID!) { run(id: $id) { id status resumedFrom { id } thread { id } leaseEpoch toolCalls { id } } }`;

describe(`threads, history and runs (${backendName})`, () => {
  it('creates a thread, appends history and reads it back, oldest first', async () => {
    const threadId = await createThread(t, alice, 'Support chat');
    must(await t.gql(APPEND, { input: { threadId, role: 'USER', content: { text: 'hello' } } }, alice));
    must(await t.gql(APPEND, { input: { threadId, role: 'ASSISTANT', content: 'hi there' } }, alice));
    const response = await t.gql(THREAD, { id: threadId }, alice);
    expect(response.errors).toBeUndefined();
    expect(response.data.thread).toMatchObject({
      id: threadId,
      title: 'Support chat',
      ownerId: 'alice',
      messageCount: 2,
      messages: [
        { role: 'USER', content: { text: 'hello' } },
        { role: 'ASSISTANT', content: 'hi there' },
      ],
      runs: [],
    });
  });

  it("appendMessage answers the message's thread as it now is, so a client's cache updates the count without a refetch", async () => {
    const threadId = await createThread(t, alice, 'Counted');
    const append = `mutation($input: AppendMessageInput!) { result: appendMessage(input: $input) { id thread { id messageCount messages { id } } } }`;
    const first = must(await t.gql(append, { input: { threadId, role: 'USER', content: 'one' } }, alice));
    expect(first.thread).toEqual({ id: threadId, messageCount: 1, messages: [{ id: first.id }] });
    // An admin appends too: it reads the thread it wrote to.
    const second = must(await t.gql(append, { input: { threadId, role: 'ASSISTANT', content: 'two' } }, admin));
    expect(second.thread).toEqual({ id: threadId, messageCount: 2, messages: [{ id: first.id }, { id: second.id }] });
    // A message read through its thread names the same thread.
    const read = await t.gql(`query($id: ID!) { thread(id: $id) { messages { thread { id } } } }`, { id: threadId }, alice);
    expect(read.data.thread.messages).toEqual([{ thread: { id: threadId } }, { thread: { id: threadId } }]);
  });

  it('the owner, an admin and a superadmin may read a thread; another user and a worker may not', async () => {
    const threadId = await createThread(t, alice);
    for (const token of [alice, admin, await t.token('root', 'superadmin')]) {
      expect((await t.gql(THREAD, { id: threadId }, token)).data.thread.id).toBe(threadId);
    }
    for (const token of [mallory, worker]) expect(errorCode(await t.gql(THREAD, { id: threadId }, token))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(APPEND, { input: { threadId, role: 'USER', content: 'x' } }, mallory))).toBe('FORBIDDEN');
  });

  it('a missing thread or run is NOT_FOUND, whatever the id looks like', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const thread = await t.gql(THREAD, { id }, admin);
      expect(errorCode(thread)).toBe('NOT_FOUND');
      expect(thread.data?.thread ?? null).toBeNull();
      expect(errorCode(await t.gql(RUN, { id }, admin))).toBe('NOT_FOUND');
    }
    expect(errorCode(await t.gql(THREAD, { id: ' ' }, admin))).toBe('BAD_USER_INPUT');
  });

  it('createRun makes a QUEUED run; a resume must name an ended run of the same thread', async () => {
    const threadId = await createThread(t, alice);
    const first = await createRun(t, alice, threadId);
    const queued = await t.gql(RUN, { id: first }, alice);
    expect(queued.data.run).toMatchObject({ status: 'QUEUED', resumedFrom: null, thread: { id: threadId }, leaseEpoch: 0 });

    const resumeQueued = await t.gql(`mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`, { input: { threadId, resumeFromRunId: first } }, alice);
    expect(errorCode(resumeQueued)).toBe('INVALID_TRANSITION');

    const session = await claim(t, worker, first);
    must(await session.finish('INTERRUPTED'));
    const resumed = await createRun(t, alice, threadId, first);
    expect((await t.gql(RUN, { id: resumed }, alice)).data.run.resumedFrom).toEqual({ id: first });

    const otherThread = await createThread(t, alice);
    const crossThread = await t.gql(
      `mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`,
      { input: { threadId: otherThread, resumeFromRunId: first } },
      alice,
    );
    expect(errorCode(crossThread)).toBe('INVALID_TRANSITION');
    expect(errorCode(await t.gql(`mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`, { input: { threadId } }, mallory))).toBe('FORBIDDEN');
  });

  it('a blank resumeFromRunId is BAD_USER_INPUT, never a run that resumes nothing', async () => {
    const threadId = await createThread(t, alice);
    for (const resumeFromRunId of ['', '  ']) {
      const response = await t.gql(`mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`, { input: { threadId, resumeFromRunId } }, alice);
      expect(errorCode(response)).toBe('BAD_USER_INPUT');
    }
    expect((await t.gql(THREAD, { id: threadId }, alice)).data.thread.runs).toEqual([]);
  });

  it('an id over 256 characters is BAD_USER_INPUT', async () => {
    expect(errorCode(await t.gql(THREAD, { id: 'x'.repeat(257) }, admin))).toBe('BAD_USER_INPUT');
    expect(errorCode(await t.gql(RUN, { id: 'x'.repeat(3000) }, admin))).toBe('BAD_USER_INPUT');
  });

  it('history content must fit the JSON size limit, and nothing is written otherwise', async () => {
    const threadId = await createThread(t, alice);
    const huge = 'x'.repeat(t.config.maxJsonBytes);
    expect(errorCode(await t.gql(APPEND, { input: { threadId, role: 'USER', content: huge } }, alice))).toBe('BAD_USER_INPUT');
    expect((await t.gql(THREAD, { id: threadId }, alice)).data.thread.messageCount).toBe(0);
  });
});
