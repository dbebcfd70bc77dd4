import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { createThread } from '../support/lifecycle.js';
import { insertAudits, insertRun } from './support.js';

let t: TestApp;
/** Every SQL statement Prisma sent (through the driver adapter, so after Prisma's own batching). */
const statements: string[] = [];
let owner: string;
let threadId: string;
const chat: string[] = [];
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id } }`;

// Five resumed runs of 100 audits each: limit 10 reads one run, limit 500 reads all five.
beforeAll(async () => {
  // The sweeper must not add its own statements to a measured request.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' }, { onQuery: (sql) => statements.push(sql) });
  owner = await t.token('query-count-owner', 'superadmin');
  threadId = await createThread(t, owner);
  for (const text of ['first', 'second']) {
    const appended = await t.gql(APPEND, { input: { threadId, role: 'USER', content: text } }, owner);
    chat.push(appended.data.appendMessage.id);
  }
  let previous: string | null = null;
  for (let run = 0; run < 5; run++) {
    const runId: string = await insertRun(t.app.db.prisma, threadId, previous);
    await insertAudits(t.app.db.prisma, { threadId, runId, count: 100 });
    previous = runId;
  }
});
afterAll(() => t.close());

/** The `limit` items `query` reads from the thread, checked to be there, and the SQL statements it caused. */
async function measure(query: string, limit: number) {
  statements.length = 0;
  const response = await t.gql(query, { threadId, limit }, owner);
  const caused = statements.splice(0);
  expect(response.errors).toBeUndefined();
  const items: any[] = response.data.threadAudits.items;
  expect(items).toHaveLength(limit);
  return { items, statements: caused };
}

const EVERY_NESTED_FIELD = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    threadId truncated
    items {
      __typename id runId role operationId sequence status
      run {
        id status
        thread { id ownerId messageCount }
        resumedFrom { id status }
        toolCalls { id status output declaredBy { id operationId } }
      }
      ... on ToolAudit {
        toolCallId output
        toolCall { id status output declaredBy { id toolCalls { id status } } }
        declaredBy { id operationId toolCalls { id toolCallId } }
      }
      ... on ModelAudit { model toolCalls { id toolCallId declaredBy { id operationId } } }
    }
  }
}`;

// The same relation twice with different arguments cannot share one query: the second is loaded
// by the plugin's fallback, which Prisma must still batch across items.
const CONFLICTING_ALIASES = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    items {
      id
      run { thread { oldest: messages(first: 1) { id } page: messages(first: 5) { id } } }
      ... on ToolAudit { toolCall { id } }
    }
  }
}`;

/** A query with every item checked, so a bound on an incomplete response proves nothing. */
function checkFull(items: any[]) {
  for (const item of items) {
    expect(item.run.thread).toEqual({ id: threadId, ownerId: 'query-count-owner', messageCount: 2 });
    expect(item.run.toolCalls).toHaveLength(50);
    expect(item.run.toolCalls.every((call: any) => call.declaredBy.id)).toBe(true);
    if (item.__typename === 'ToolAudit') {
      expect(item.toolCall.declaredBy.toolCalls).toEqual([{ id: item.toolCall.id, status: 'COMPLETED' }]);
      expect(item.declaredBy).toEqual({ id: item.toolCall.declaredBy.id, operationId: expect.stringMatching(/^model-/), toolCalls: [{ id: item.toolCall.id, toolCallId: item.toolCallId }] });
    } else {
      expect(item.toolCalls).toEqual([{ id: expect.any(String), toolCallId: expect.any(String), declaredBy: { id: item.id, operationId: item.operationId } }]);
    }
  }
  expect(items.filter((item) => item.run.resumedFrom !== null).length).toBeGreaterThan(0);
}

describe('one threadAudits call issues a bounded number of SQL statements', () => {
  it('with every nested field selected: the same bound for 10 items as for 500', async () => {
    const small = await measure(EVERY_NESTED_FIELD, 10);
    const large = await measure(EVERY_NESTED_FIELD, 500);
    checkFull(small.items);
    checkFull(large.items);

    // At most one statement per relation and nesting level: the thread with its audits, then each
    // link batched. A small page may need one more at a level whose rows a large page had already
    // loaded at an earlier level (the loaders cache per request), never one more per item. The
    // links read their rows without payloads: a level whose fields ask for a payload (`output`)
    // adds one statement for all of that level's audits' payloads (their sizes are on their rows,
    // charged to the answer's budget before the payloads are read), and two for its tool calls'
    // (their sizes, then the payloads).
    for (const { statements } of [small, large]) expect(statements.length).toBeLessThanOrEqual(13);
  });

  it('with a relation selected twice under different arguments: still the same count', async () => {
    const small = await measure(CONFLICTING_ALIASES, 10);
    const large = await measure(CONFLICTING_ALIASES, 500);
    for (const item of [...small.items, ...large.items]) {
      expect(item.run.thread).toEqual({ oldest: [{ id: chat[0] }], page: chat.map((id) => ({ id })) });
    }
    expect(large.statements.length).toBe(small.statements.length);
    expect(large.statements.length).toBeLessThanOrEqual(10);
  });
});
