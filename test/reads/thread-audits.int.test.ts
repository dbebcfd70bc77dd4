import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { insertAudits, insertRun } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const AUDITS = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    threadId truncated
    items {
      __typename id runId role operationId sequence finishedSequence status
      run { id resumedFrom { id } }
      ... on ToolAudit { toolCallId name effectiveInput output awaitingRunTerminal toolCall { id toolCallId status output } declaredBy { id operationId } }
      ... on ModelAudit { model input toolCalls { id toolCallId name status declaredInput } }
    }
  }
}`;

const SEQUENCES = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) { truncated items { id runId sequence } }
}`;

async function threadAudits(token: string, threadId: string, limit?: number) {
  const response = await t.gql(AUDITS, { threadId, limit }, token);
  expect(response.errors).toBeUndefined();
  return response.data.threadAudits as { threadId: string; truncated: boolean; items: any[] };
}

describe('threadAudits built through the lifecycle mutations', () => {
  it('returns every model and tool audit with its relations, oldest run first even when its sequences are higher', async () => {
    const { session, owner, worker, threadId, runId: first } = await runningRun(t);
    const m1 = must(await session.modelStarted('m1', { sequence: '100', model: 'gpt', input: { prompt: 'hi' } }));
    must(await session.modelFinished('m1', [{ id: 'call-1', name: 'search', args: { q: 'x' } }, { id: 'call-2', name: 'fetch' }], { sequence: '101' }));
    const tool1 = must(await session.toolStarted('call-1', 'search', { sequence: '102', effectiveInput: { q: 'y' } }));
    must(await session.toolFinished('call-1', { content: 'found', status: 'success', id: 'msg-1', artifact: { raw: 1 } }, { sequence: '103' }));
    must(await session.finish('INTERRUPTED'));

    // The resumed run restarts its runtime's sequence at 1: run creation orders, not sequence.
    const second = await createRun(t, owner, threadId, first);
    const resumed = await claim(t, worker, second);
    const tool2 = must(await resumed.toolStarted('call-2', 'fetch', { sequence: '1' }));

    const audits = await threadAudits(owner, threadId);
    expect(audits).toMatchObject({ threadId, truncated: false });
    expect(audits.items).toEqual([
      {
        __typename: 'ModelAudit', id: m1.id, runId: first, role: 'ASSISTANT', operationId: 'm1', sequence: '100',
        finishedSequence: '101', status: 'COMPLETED', run: { id: first, resumedFrom: null }, model: 'gpt', input: { prompt: 'hi' },
        toolCalls: [
          { id: expect.any(String), toolCallId: 'call-1', name: 'search', status: 'COMPLETED', declaredInput: { q: 'x' } },
          { id: expect.any(String), toolCallId: 'call-2', name: 'fetch', status: 'RUNNING', declaredInput: null },
        ],
      },
      {
        __typename: 'ToolAudit', id: tool1.id, runId: first, role: 'TOOL', operationId: 'call-1', sequence: '102',
        finishedSequence: '103', status: 'COMPLETED', run: { id: first, resumedFrom: null }, toolCallId: 'call-1', name: 'search',
        effectiveInput: { q: 'y' }, output: { content: 'found', status: 'success', id: 'msg-1', artifact: { raw: 1 } },
        awaitingRunTerminal: false,
        toolCall: { id: expect.any(String), toolCallId: 'call-1', status: 'COMPLETED', output: 'found' },
        declaredBy: { id: m1.id, operationId: 'm1' },
      },
      {
        __typename: 'ToolAudit', id: tool2.id, runId: second, role: 'TOOL', operationId: 'call-2', sequence: '1',
        finishedSequence: null, status: 'RUNNING', run: { id: second, resumedFrom: { id: first } }, toolCallId: 'call-2',
        name: 'fetch', effectiveInput: {}, output: null, awaitingRunTerminal: false,
        toolCall: { id: expect.any(String), toolCallId: 'call-2', status: 'RUNNING', output: null },
        // Bound across the resume to the model call of the first run.
        declaredBy: { id: m1.id, operationId: 'm1' },
      },
    ]);
    const [model, finished, running] = audits.items;
    expect(finished.toolCall.id).toBe(model.toolCalls[0].id);
    expect(running.toolCall.id).toBe(model.toolCalls[1].id);
  });

  it('keeps each audit id stable across reads and its (runId, role, operationId) unique', async () => {
    const { session, owner, threadId } = await runningRun(t);
    // A model call and a tool call may share an operation id: the role tells them apart.
    await session.declare('same-id', [{ id: 'same-id', name: 'search' }]);
    const before = await threadAudits(owner, threadId);
    must(await session.toolStarted('same-id', 'search'));
    must(await session.toolFinished('same-id', { content: 'ok' }));
    const after = await threadAudits(owner, threadId);

    expect(after.items.map((item) => item.operationId)).toEqual(['same-id', 'same-id']);
    // The model audit is the same entry; only the ToolCall projection nested in it moved on.
    const [model] = before.items;
    expect(after.items[0]).toEqual({ ...model, toolCalls: [{ ...model.toolCalls[0], status: 'COMPLETED' }] });
    const keys = after.items.map((item) => `${item.runId}/${item.role}/${item.operationId}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(after.items.map((item) => item.id)).size).toBe(after.items.length);
  });
});

describe('threadAudits limit and truncation', () => {
  async function threadWith(...runs: { count: number; firstSequence?: number }[]) {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const ids: string[] = [];
    for (const run of runs) {
      const runId = await insertRun(t.app.db.prisma, threadId);
      ids.push(...(await insertAudits(t.app.db.prisma, { threadId, runId, ...run })));
    }
    return { owner, threadId, ids };
  }

  it('501 audits: the newest 500, oldest first, the oldest one dropped, truncated', async () => {
    // The oldest audit is in the first run, though its sequence is the highest of the thread.
    const { owner, threadId, ids } = await threadWith({ count: 1, firstSequence: 9_999 }, { count: 500 });
    const audits = await t.gql(SEQUENCES, { threadId }, owner);
    expect(audits.errors).toBeUndefined();
    const { items, truncated } = audits.data.threadAudits;
    expect(truncated).toBe(true);
    expect(items).toHaveLength(500);
    expect(items.map((item: any) => item.id)).toEqual(ids.slice(1));
    expect(items.map((item: any) => Number(item.sequence))).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
  });

  it('501 audits in one run: the lowest sequence is dropped', async () => {
    const { owner, threadId, ids } = await threadWith({ count: 501 });
    const { items, truncated } = (await t.gql(SEQUENCES, { threadId, limit: 500 }, owner)).data.threadAudits;
    expect(truncated).toBe(true);
    expect(items.map((item: any) => item.id)).toEqual(ids.slice(1));
    expect(items[0].sequence).toBe('2');
  });

  it('exactly 500 audits: all of them, not truncated', async () => {
    const { owner, threadId, ids } = await threadWith({ count: 250 }, { count: 250 });
    const { items, truncated } = (await t.gql(SEQUENCES, { threadId }, owner)).data.threadAudits;
    expect(truncated).toBe(false);
    expect(items.map((item: any) => item.id)).toEqual(ids);
  });

  it('a thread without audits: no items, not truncated', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    await createRun(t, owner, threadId);
    expect(await threadAudits(owner, threadId)).toEqual({ threadId, truncated: false, items: [] });
  });

  it('limit 1: only the newest, truncated when there are more', async () => {
    const { owner, threadId, ids } = await threadWith({ count: 3 }, { count: 2 });
    const { items, truncated } = (await t.gql(SEQUENCES, { threadId, limit: 1 }, owner)).data.threadAudits;
    expect(truncated).toBe(true);
    expect(items.map((item: any) => item.id)).toEqual([ids[4]]);

    const single = await threadWith({ count: 1 });
    const one = (await t.gql(SEQUENCES, { threadId: single.threadId, limit: 1 }, single.owner)).data.threadAudits;
    expect(one).toEqual({ truncated: false, items: [{ id: single.ids[0], runId: expect.any(String), sequence: '1' }] });
  });

  it('a limit below the total returns the newest ones in ascending order', async () => {
    const { owner, threadId, ids } = await threadWith({ count: 4 }, { count: 4 });
    const { items, truncated } = (await t.gql(SEQUENCES, { threadId, limit: 5 }, owner)).data.threadAudits;
    expect(truncated).toBe(true);
    expect(items.map((item: any) => item.id)).toEqual(ids.slice(3));
  });

  it.each([0, -1, 501])('limit %i is BAD_USER_INPUT', async (limit) => {
    const { owner, threadId } = await threadWith({ count: 2 });
    const response = await t.gql(SEQUENCES, { threadId, limit }, owner);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.data).toBeNull();
  });

  it('an explicit null limit is BAD_USER_INPUT, not the default', async () => {
    const { owner, threadId } = await threadWith({ count: 2 });
    expect(errorCode(await t.gql(SEQUENCES, { threadId, limit: null }, owner))).toBe('BAD_USER_INPUT');
  });
});
