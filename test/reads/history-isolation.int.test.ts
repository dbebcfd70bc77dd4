import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { claim, createRun, createThread, must, type Actors, actors } from '../support/lifecycle.js';

let t: TestApp;
let who: Actors;
let threadId: string;
const chat: { role: string; content: unknown }[] = [
  { role: 'USER', content: 'find x' },
  { role: 'ASSISTANT', content: { text: 'looking' } },
  { role: 'SYSTEM', content: ['a', 1] },
  { role: 'USER', content: 'thanks' },
];

async function append(message: { role: string; content: unknown }) {
  const response = await t.gql(
    `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id role content } }`,
    { input: { threadId, ...message } },
    who.owner,
  );
  expect(response.errors).toBeUndefined();
}

/**
 * One thread holding chat messages and, in between, a run with model and tool audits: a completed
 * call (with a full output envelope), a call that never started, and a bare tool error left by an
 * interrupt (its audit INTERRUPTED, its ToolCall back to PENDING).
 */
beforeAll(async () => {
  t = await startTestApp();
  who = await actors(t);
  threadId = await createThread(t, who.owner);
  for (const message of chat.slice(0, 2)) await append(message);
  const runId = await createRun(t, who.owner, threadId);
  const session = await claim(t, who.worker, runId);
  await session.declare('m1', [
    { id: 'call-1', name: 'search', args: { q: 'x' } },
    { id: 'call-2', name: 'fetch', args: { url: 'u' } },
  ]);
  must(await session.toolStarted('call-1', 'search', { effectiveInput: { q: 'x!' } }));
  must(await session.toolFinished('call-1', { content: 'found', status: 'success', id: 'msg-1', name: 'search', artifact: { rows: [1] } }));
  await session.declare('m2', [{ id: 'call-3', name: 'search' }]);
  must(await session.toolStarted('call-3', 'search'));
  must(await session.toolError('call-3', { message: 'interrupted' }));
  must(await session.finish('INTERRUPTED'));
  for (const message of chat.slice(2)) await append(message);
});
afterAll(() => t.close());

describe('ordinary history never shows audit rows', () => {
  it('messages and messageCount see only the chat messages, oldest first', async () => {
    const response = await t.gql(
      `query($id: ID!) { thread(id: $id) { messageCount messages { role content } first: messages(first: 2) { content } } }`,
      { id: threadId },
      who.owner,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.thread).toEqual({
      messageCount: 4,
      messages: chat,
      first: chat.slice(0, 2).map(({ content }) => ({ content })),
    });
  });

  it('messages page on with `after` (one of the thread\'s messages), each message once; contentBytes gives each content\'s size as stored', async () => {
    const page = async (after: string | null, id = threadId) => {
      const response = await t.gql(
        `query($id: ID!, $after: ID) { thread(id: $id) { messages(first: 3, after: $after) { id contentBytes content } } }`,
        { id, after },
        who.owner,
      );
      expect(response.errors).toBeUndefined();
      return response.data.thread.messages as { id: string; contentBytes: number; content: unknown }[];
    };
    const first = await page(null);
    const rest = await page(first.at(-1)!.id);
    expect([...first, ...rest].map(({ content }) => content)).toEqual(chat.map(({ content }) => content));
    expect(await page(rest.at(-1)!.id)).toEqual([]);
    // The bytes of the JSON text as stored (jsonb writes `": "` between a key and its value).
    expect([...first, ...rest].map(({ contentBytes }) => contentBytes)).toEqual([8, 19, 8, 8]);

    // An audit of this thread or another thread's message is no place in this thread's history.
    const audits = await t.gql(`query($id: ID!) { threadAudits(threadId: $id) { items { id } } }`, { id: threadId }, who.owner);
    expect(await page(audits.data.threadAudits.items[0].id)).toEqual([]);
    const otherThread = await createThread(t, who.owner);
    expect(await page(first[0]!.id, otherThread)).toEqual([]);
    const refused = await t.gql(`query($id: ID!) { thread(id: $id) { messages(after: "nope") { id } } }`, { id: threadId }, who.owner);
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('the audit timeline holds the audits and none of the chat', async () => {
    const response = await t.gql(
      `query($id: ID!) { threadAudits(threadId: $id) { items { __typename operationId status } } }`,
      { id: threadId },
      who.owner,
    );
    expect(response.data.threadAudits.items).toEqual([
      { __typename: 'ModelAudit', operationId: 'm1', status: 'COMPLETED' },
      { __typename: 'ToolAudit', operationId: 'call-1', status: 'COMPLETED' },
      { __typename: 'ModelAudit', operationId: 'm2', status: 'COMPLETED' },
      { __typename: 'ToolAudit', operationId: 'call-3', status: 'INTERRUPTED' },
    ]);
  });
});

describe('the ToolCall projection', () => {
  it('Run.toolCalls carries the output content only, never the envelope', async () => {
    const response = await t.gql(
      `query($id: ID!) { thread(id: $id) { runs { toolCalls { toolCallId name status declaredInput effectiveInput output } } } }`,
      { id: threadId },
      who.owner,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.thread.runs).toEqual([
      {
        toolCalls: [
          { toolCallId: 'call-1', name: 'search', status: 'COMPLETED', declaredInput: { q: 'x' }, effectiveInput: { q: 'x!' }, output: 'found' },
          { toolCallId: 'call-2', name: 'fetch', status: 'PENDING', declaredInput: { url: 'u' }, effectiveInput: null, output: null },
          { toolCallId: 'call-3', name: 'search', status: 'PENDING', declaredInput: null, effectiveInput: null, output: null },
        ],
      },
    ]);
  });

  it('toolCallStats counts ToolCalls, not audits: the interrupted call counts as PENDING', async () => {
    const response = await t.gql(`query($id: ID!) { toolCallStats(threadId: $id) { name status count } }`, { id: threadId }, who.owner);
    expect(response.errors).toBeUndefined();
    expect(response.data.toolCallStats).toEqual([
      { name: 'fetch', status: 'PENDING', count: 1 },
      { name: 'search', status: 'PENDING', count: 1 },
      { name: 'search', status: 'COMPLETED', count: 1 },
    ]);
  });
});
