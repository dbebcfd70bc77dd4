import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/domain/principal.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { claim, createRun, createThread, must } from '../support/lifecycle.js';

let t: TestApp;
const tokens: Record<string, string | null> = {};
type Timeline = Awaited<ReturnType<typeof threadWithTimeline>>;
let userThread: Timeline;
let superThread: Timeline;

/** A thread of `owner` with one run: a model call declaring `call-1`, which ran and completed. */
async function threadWithTimeline(owner: string) {
  const threadId = await createThread(t, owner);
  const runId = await createRun(t, owner, threadId);
  const session = await claim(t, tokens.worker!, runId);
  must(await session.modelStarted('m1'));
  const finished = await t.gql(
    `mutation($input: ModelFinishedInput!) {
      result: recordModelFinished(input: $input) { id toolCalls { toolCallId declaredBy { id operationId } } }
    }`,
    {
      input: {
        lease: session.lease, operationId: 'm1', status: 'COMPLETED', sequence: '2', observedAt: new Date().toISOString(),
        toolCalls: [{ id: 'call-1', name: 'search', args: { q: 'x' } }],
      },
    },
    tokens.worker,
  );
  const model = must(finished);
  must(await session.toolStarted('call-1', 'search'));
  must(await session.toolFinished('call-1', { content: 'found', status: 'success', id: 'msg-1' }));
  return { threadId, runId, modelAuditId: model.id as string, finished };
}

beforeAll(async () => {
  t = await startTestApp();
  const principals: [string, Role][] = [
    ['userOwner', 'user'], ['otherUser', 'user'], ['admin', 'admin'], ['worker', 'worker'],
    ['superOwner', 'superadmin'], ['otherSuper', 'superadmin'],
  ];
  for (const [name, role] of principals) tokens[name] = await t.token(`${name}-sub`, role);
  tokens.none = null;
  tokens.forged = 'not.a.jwt';
  userThread = await threadWithTimeline(tokens.userOwner!);
  superThread = await threadWithTimeline(tokens.superOwner!);
});
afterAll(() => t.close());

const THREAD_AUDITS = `query($threadId: ID!) { threadAudits(threadId: $threadId) { threadId items { id operationId } } }`;

describe('threadAudits: super administrators on their own threads only', () => {
  it.each([
    ['none', 'super', 'UNAUTHENTICATED'],
    ['forged', 'super', 'UNAUTHENTICATED'],
    ['otherUser', 'super', 'FORBIDDEN'],
    ['userOwner', 'user', 'FORBIDDEN'],
    ['admin', 'super', 'FORBIDDEN'],
    ['admin', 'missing', 'FORBIDDEN'],
    ['worker', 'super', 'FORBIDDEN'],
    ['otherSuper', 'super', 'NOT_FOUND'],
    ['superOwner', 'user', 'NOT_FOUND'],
    ['superOwner', 'missing', 'NOT_FOUND'],
    ['superOwner', 'not-a-uuid', 'NOT_FOUND'],
  ])('%s on the %s thread: %s', async (who, which, code) => {
    const threadId = { super: superThread.threadId, user: userThread.threadId, missing: randomUUID(), 'not-a-uuid': 'not-a-uuid' }[which];
    const response = await t.gql(THREAD_AUDITS, { threadId }, tokens[who]);
    expect(errorCode(response)).toBe(code);
    expect(response.data ?? null).toBeNull();
  });

  it('the owning superadmin reads the timeline', async () => {
    const response = await t.gql(THREAD_AUDITS, { threadId: superThread.threadId }, tokens.superOwner);
    expect(response.errors).toBeUndefined();
    expect(response.data.threadAudits).toEqual({
      threadId: superThread.threadId,
      items: [
        { id: superThread.modelAuditId, operationId: 'm1' },
        { id: expect.any(String), operationId: 'call-1' },
      ],
    });
  });
});

const SINGLE_READS = {
  thread: `query($id: ID!) { thread(id: $id) { id } }`,
  run: `query($id: ID!) { run(id: $id) { id } }`,
  toolCallStats: `query($id: ID!) { toolCallStats(threadId: $id) { name } }`,
};

describe('thread, run and toolCallStats: the owner, admin or superadmin', () => {
  const READS = `query($threadId: ID!, $runId: ID!) {
    thread(id: $threadId) { id ownerId }
    run(id: $runId) { id toolCalls { toolCallId status output } }
    toolCallStats(threadId: $threadId) { name status count }
  }`;

  it.each(['userOwner', 'admin', 'superOwner', 'otherSuper'])('%s reads them', async (who) => {
    const response = await t.gql(READS, { threadId: userThread.threadId, runId: userThread.runId }, tokens[who]);
    expect(response.errors).toBeUndefined();
    expect(response.data).toEqual({
      thread: { id: userThread.threadId, ownerId: 'userOwner-sub' },
      run: { id: userThread.runId, toolCalls: [{ toolCallId: 'call-1', status: 'COMPLETED', output: 'found' }] },
      toolCallStats: [{ name: 'search', status: 'COMPLETED', count: 1 }],
    });
  });

  it.each([
    ['otherUser', 'FORBIDDEN'],
    ['worker', 'FORBIDDEN'],
    ['none', 'UNAUTHENTICATED'],
  ])('%s: each field is %s', async (who, code) => {
    for (const [field, query] of Object.entries(SINGLE_READS)) {
      const response = await t.gql(query, { id: field === 'run' ? userThread.runId : userThread.threadId }, tokens[who]);
      expect(errorCode(response), field).toBe(code);
      expect(response.data?.[field] ?? null, field).toBeNull();
    }
  });

  it.each([randomUUID(), 'not-a-uuid'])('a missing thread or run (%s) is NOT_FOUND', async (id) => {
    for (const [field, query] of Object.entries(SINGLE_READS)) {
      expect(errorCode(await t.gql(query, { id }, tokens.admin)), field).toBe('NOT_FOUND');
    }
  });
});

describe('ToolCall.declaredBy is audit data', () => {
  const THROUGH_RUN = `query($threadId: ID!, $runId: ID!) {
    thread(id: $threadId) { id messageCount }
    run(id: $runId) { id toolCalls { toolCallId status declaredBy { id operationId } } }
  }`;

  it.each(['userOwner', 'admin', 'superOwner'])(
    'reached through run.toolCalls of the user-owned thread by %s: FORBIDDEN on that field only',
    async (who) => {
      const response = await t.gql(THROUGH_RUN, { threadId: userThread.threadId, runId: userThread.runId }, tokens[who]);
      expect(response.errors).toHaveLength(1);
      expect(response.errors![0]).toMatchObject({
        path: ['run', 'toolCalls', 0, 'declaredBy'],
        message: expect.stringMatching(/^ToolCall\.declaredBy is audit data, for super administrators on their own threads only/),
        extensions: { code: 'FORBIDDEN' },
      });
      // declaredBy is non-null in the contract, so the error nulls the nearest nullable parent, `run`;
      // the rest of the response is there.
      expect(response.data).toEqual({ thread: { id: userThread.threadId, messageCount: 0 }, run: null });
    },
  );

  it('reached through thread.runs by the ordinary owner: FORBIDDEN at that path', async () => {
    const response = await t.gql(
      `query($id: ID!) { thread(id: $id) { runs { toolCalls { declaredBy { id } } } } }`,
      { id: userThread.threadId },
      tokens.userOwner,
    );
    expect(response.errors?.map((error) => [error.path, error.extensions?.code])).toEqual([
      [['thread', 'runs', 0, 'toolCalls', 0, 'declaredBy'], 'FORBIDDEN'],
    ]);
  });

  it('the owning superadmin reads it', async () => {
    const response = await t.gql(THROUGH_RUN, { threadId: superThread.threadId, runId: superThread.runId }, tokens.superOwner);
    expect(response.errors).toBeUndefined();
    expect(response.data.run.toolCalls).toEqual([
      { toolCallId: 'call-1', status: 'COMPLETED', declaredBy: { id: superThread.modelAuditId, operationId: 'm1' } },
    ]);
  });

  it("the worker reads it in its own lifecycle mutation's result", () => {
    expect(superThread.finished.errors).toBeUndefined();
    expect(superThread.finished.data.result.toolCalls).toEqual([
      { toolCallId: 'call-1', declaredBy: { id: superThread.modelAuditId, operationId: 'm1' } },
    ]);
  });

  it('a worker that owns a thread does not read audits through a mutation outside the run lifecycle', async () => {
    const threadId = await createThread(t, tokens.worker!);
    const first = await createRun(t, tokens.worker!, threadId);
    const session = await claim(t, tokens.worker!, first);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const response = await t.gql(
      `mutation($threadId: ID!) { createRun(input: { threadId: $threadId }) { id thread { runs { toolCalls { declaredBy { id } } } } } }`,
      { threadId },
      tokens.worker,
    );
    expect(response.errors?.map((error) => [error.path, error.extensions?.code])).toEqual([
      [['createRun', 'thread', 'runs', 0, 'toolCalls', 0, 'declaredBy'], 'FORBIDDEN'],
    ]);
  });
});
