import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { createRun, createThread, must, runningRun } from '../support/lifecycle.js';

let t: TestApp;
let statements = 0;
let user: string;
let admin: string;
let threadId: string;
const RUNS = 30;

beforeAll(async () => {
  t = await startTestApp({}, { onQuery: () => void statements++ });
  user = await t.token('mallory', 'user');
  admin = await t.token('ada', 'superadmin');
  threadId = await createThread(t, user);
  for (let i = 0; i < RUNS; i++) await createRun(t, user, threadId);
});
afterAll(() => t.close());

/** `thread { runs { thread { runs … { id } } } }`, `levels` runs deep. */
function amplification(levels: number): string {
  let selection = 'id';
  for (let i = 0; i < levels; i++) selection = `runs { thread { ${selection} } }`;
  return `query($id: ID!) { thread(id: $id) { ${selection} } }`;
}

describe(`query cost counts list sizes (${backendName})`, () => {
  it('refuses the amplification query before anything executes, naming its cost', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    statements = 0;
    const response = await t.gql(amplification(4), { id: threadId }, user);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors?.[0]?.message).toMatch(/cost of \d+ exceeds the limit of \d+/);
    expect(response.errors?.[0]?.extensions).toMatchObject({ maxCost: 10_000_000 });
    expect(response.errors?.[0]?.extensions?.cost).toBeGreaterThan(10_000_000);
    expect(response.data ?? null).toBeNull();
    expect(statements).toBe(0);
    // 30 runs nested four times would build 30^4 ≈ 810,000 run objects.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(20 * 1024 * 1024);
  });

  it('refuses 15 aliased copies of a shallower amplification', async () => {
    let selection = 'id';
    for (let i = 0; i < 3; i++) selection = `runs { thread { ${selection} } }`;
    const aliases = Array.from({ length: 15 }, (_, i) => `a${i}: thread(id: $id) { ${selection} }`).join(' ');
    statements = 0;
    const response = await t.gql(`query($id: ID!) { ${aliases} }`, { id: threadId }, user);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors?.[0]?.message).toMatch(/cost/);
    expect(statements).toBe(0);
  });

  it('counts a list size given as a variable', async () => {
    const query = `query($id: ID!, $n: Int) { thread(id: $id) { runs(first: $n) { thread { runs(first: $n) { toolCalls { id } } } } } }`;
    expect(errorCode(await t.gql(query, { id: threadId, n: 500 }, user))).toBe('BAD_USER_INPUT');
    const small = await t.gql(query, { id: threadId, n: 2 }, user);
    expect(small.errors).toBeUndefined();
    expect(small.data.thread.runs).toHaveLength(2);
  });

  it('costs a document again for other list sizes, and after variables that did not coerce', async () => {
    const query = `query($id: ID!, $n: Int) { thread(id: $id) { runs(first: $n) { thread { runs(first: $n) { toolCalls { id } } } } } }`;
    expect((await t.gql(query, { id: threadId, n: 2 }, user)).errors).toBeUndefined();
    expect(errorCode(await t.gql(query, { id: threadId, n: 500 }, user))).toBe('BAD_USER_INPUT');
    // An input object is not part of what the cost is kept by: the same document and list size,
    // first with an input that does not coerce (no cost counted then), then valid.
    const create = `mutation($input: CreateThreadInput!, $n: Int) {
      createThread(input: $input) { runs(first: $n) { thread { runs(first: $n) { toolCalls { id } } } } }
    }`;
    const invalid = await t.gql(create, { input: { title: { not: 'a title' } }, n: 400 }, user);
    expect(errorCode(invalid)).not.toBeUndefined();
    expect(invalid.errors?.[0]?.message).not.toMatch(/cost/);
    const refused = await t.gql(create, { input: { title: 'expensive' }, n: 400 }, user);
    expect(errorCode(refused)).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0]?.message).toMatch(/cost of \d+ exceeds/);
    expect((await t.gql(query, { id: threadId, n: 2 }, user)).data.thread.runs).toHaveLength(2);
  });

  it('lets the debug UI heaviest real query through (threadAudits 500 with every nested field)', async () => {
    const owned = await createThread(t, admin);
    const toolCall = 'id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs';
    const audit = 'id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs';
    const response = await t.gql(
      `query Timeline($threadId: ID!) {
        threadAudits(threadId: $threadId, limit: 500) { threadId truncated items { ...Item } }
        thread(id: $threadId) { runs(first: 500) { id } }
      }
      fragment Item on Audit {
        __typename ${audit}
        run { id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error resumedFrom { id } }
        ... on ModelAudit { model input output error usage toolCalls { ${toolCall} } }
        ... on ToolAudit {
          toolCallId name effectiveInput output error awaitingRunTerminal
          toolCall { ${toolCall} }
          declaredBy { ${audit} model input output error usage }
        }
      }`,
      { threadId: owned },
      admin,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.threadAudits.items).toEqual([]);
  });

  it('lets the dashboard query through', async () => {
    const response = await t.gql(
      `query Dashboard($threadId: ID!) {
        thread(id: $threadId) {
          title messageCount
          messages(first: 1000) { id role content createdAt }
          runs(first: 500) { id status createdAt finishedAt error toolCalls { toolCallId name status output durationMs } }
        }
        toolCallStats(threadId: $threadId) { name status count }
      }`,
      { threadId },
      user,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.thread.runs).toHaveLength(RUNS);
  });

  it('a model response may declare at most 1,000 tool calls (what the cost counts on)', async () => {
    const { session } = await runningRun(t);
    must(await session.modelStarted('m1'));
    const declare = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `call-${i}`, name: 'tool' }));
    expect(errorCode(await session.modelFinished('m1', declare(1001)))).toBe('BAD_USER_INPUT');
    expect(must(await session.modelFinished('m1', declare(1000))).toolCalls).toHaveLength(1000);
  });

  it('bounds Thread.runs(first) to 1..500', async () => {
    const query = `query($id: ID!, $n: Int) { thread(id: $id) { runs(first: $n) { id } } }`;
    for (const n of [0, 501, null]) expect(errorCode(await t.gql(query, { id: threadId, n }, user))).toBe('BAD_USER_INPUT');
    const response = await t.gql(`query($id: ID!) { thread(id: $id) { runs { id } } }`, { id: threadId }, user);
    expect(response.data.thread.runs).toHaveLength(RUNS);
    const first = must({ data: { result: (await t.gql(query, { id: threadId, n: 3 }, user)).data?.thread } });
    expect(first.runs).toHaveLength(3);
  });
});
