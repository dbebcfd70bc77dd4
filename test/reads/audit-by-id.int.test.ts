import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, createThread } from '../support/lifecycle.js';
import { insertAudits, insertRun } from './support.js';

// `audit(id)`: the payloads a debug UI loads when a row is opened, under the audit access rule.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const AUDIT = `query($id: ID!) {
  audit(id: $id) {
    __typename id runId status
    ... on ModelAudit { model input output error usage }
    ... on ToolAudit { name effectiveInput output error toolCall { declaredInput } }
  }
}`;

describe('audit(id)', () => {
  it('gives the thread owner (a superadmin) the whole audit, payloads included', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const runId = await insertRun(t.app.db.prisma, threadId);
    const [modelId, toolId] = await insertAudits(t.app.db.prisma, { threadId, runId, count: 2, firstSequence: 7 });
    const model = await t.gql(AUDIT, { id: modelId }, owner);
    expect(model.errors).toBeUndefined();
    expect(model.data.audit).toEqual({
      __typename: 'ModelAudit', id: modelId, runId, status: 'COMPLETED', model: 'test-model', input: { turn: 7 }, output: null, error: null, usage: null,
    });
    const tool = await t.gql(AUDIT, { id: toolId }, owner);
    expect(tool.data.audit).toEqual({
      __typename: 'ToolAudit', id: toolId, runId, status: 'COMPLETED', name: 'search', effectiveInput: { q: 7 },
      output: { content: 'found 7', status: 'success', id: 'msg-7', artifact: { raw: 7 } }, error: null, toolCall: { declaredInput: { q: 7 } },
    });
  });

  it('is NOT_FOUND to anyone but the owning superadmin, as an unknown id is (schema.graphql: "anything else is NOT_FOUND")', async () => {
    const { owner, ownerSub, worker } = await actors(t);
    const threadId = await createThread(t, owner);
    const [modelId] = await insertAudits(t.app.db.prisma, { threadId, runId: await insertRun(t.app.db.prisma, threadId), count: 1 });
    const stranger = (await actors(t)).owner;
    expect(errorCode(await t.gql(AUDIT, { id: randomUUID() }, owner))).toBe('NOT_FOUND');
    expect(errorCode(await t.gql(AUDIT, { id: 'nope' }, owner))).toBe('NOT_FOUND');
    expect(errorCode(await t.gql(AUDIT, { id: '' }, owner))).toBe('BAD_USER_INPUT');
    // Another superadmin, every other role, and the thread's owner under another role: the answer
    // an unknown id gets, so it tells nobody that the audit exists.
    const others = [stranger, worker, await t.token('a-user', 'user'), await t.token('an-admin', 'admin'), await t.token(ownerSub, 'admin'), await t.token(ownerSub, 'user')];
    for (const token of others) {
      const response = await t.gql(AUDIT, { id: modelId }, token);
      expect(response.errors).toEqual([expect.objectContaining({ message: `Audit ${modelId} not found`, extensions: { code: 'NOT_FOUND' } })]);
      expect(response.data?.audit ?? null).toBeNull();
    }
  });
});
