import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { insertAudits, insertRun } from './support.js';

// Issue 44: a timeline page that shows sizes only never reads the payloads (stored out of line,
// up to MAX_JSON_BYTES each); a document that selects a payload, however it selects it, gets the
// same values as `audit(id)` gives.

let t: TestApp;
const statements: string[] = [];
let owner: string;
let threadId: string;
let runId: string;

beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' }, { onQuery: (sql) => statements.push(sql) });
  owner = await t.token('payload-selection-owner', 'superadmin');
  threadId = await createThread(t, owner);
  runId = await insertRun(t.app.db.prisma, threadId);
  await insertAudits(t.app.db.prisma, { threadId, runId, count: 6 });
});
afterAll(() => t.close());

/** The response of `query` and the payload columns of `message` and `tool_call` its statements named. */
async function read(query: string, variables: Record<string, unknown> = { threadId }) {
  statements.length = 0;
  const response = await t.gql(query, variables, owner);
  expect(response.errors).toBeUndefined();
  const columns = new Set(statements.join(' ').match(/\b(input|output|error|declared_input|effective_input)\b/g));
  return { data: response.data, columns };
}

const FULL = `query($id: ID!) { audit(id: $id) {
  ... on ModelAudit { input output error }
  ... on ToolAudit { effectiveInput output error toolCall { declaredInput effectiveInput output error } }
} }`;

/** What audit(id) gives for each audit of the thread, by id. */
async function expectedPayloads(ids: string[]) {
  const entries = await Promise.all(ids.map(async (id) => [id, (await read(FULL, { id })).data.audit] as const));
  return new Map(entries);
}

describe(`payloads only when selected (${backendName})`, () => {
  it('a page of sizes names no payload column in any statement', async () => {
    const { data, columns } = await read(`query($threadId: ID!) { threadAudits(threadId: $threadId) { items {
      __typename id status inputBytes outputBytes errorBytes
      ... on ToolAudit { toolCall { id status } declaredBy { id } }
      ... on ModelAudit { toolCalls { id status } }
    } } }`);
    expect(data.threadAudits.items).toHaveLength(6);
    expect(data.threadAudits.items.filter((item: any) => item.__typename === 'ToolAudit').every((item: any) => item.toolCall.status === 'COMPLETED')).toBe(true);
    expect([...columns]).toEqual([]);
  });

  it('the timeline reads only the payloads its items select (output: not input or error), and none that is absent', async () => {
    const outputs = await read(`query($threadId: ID!) { threadAudits(threadId: $threadId) { items {
      id ... on ToolAudit { output }
    } } }`);
    expect(outputs.data.threadAudits.items.filter((item: any) => item.output)).toHaveLength(3);
    expect([...outputs.columns]).toEqual(['output']);
    // Its size (null) tells an absent payload: nothing to read.
    const errors = await read(`query($threadId: ID!) { threadAudits(threadId: $threadId) { items {
      id ... on ModelAudit { error } ... on ToolAudit { error }
    } } }`);
    expect(errors.data.threadAudits.items.map((item: any) => item.error)).toEqual(Array(6).fill(null));
    expect([...errors.columns]).toEqual([]);
  });

  it('payloads selected through a fragment, an alias, a run page and nested links equal audit(id)', async () => {
    const query = `fragment Payloads on ModelAudit { input output }
      query($threadId: ID!, $runId: ID) { threadAudits(threadId: $threadId, runId: $runId) { items {
        id
        ...Payloads
        ... on ToolAudit {
          given: effectiveInput output error
          toolCall { declaredInput effectiveInput output error }
          declaredBy { id input output }
        }
      } } }`;
    for (const variables of [{ threadId }, { threadId, runId }]) {
      const { data } = await read(query, variables);
      const items: any[] = data.threadAudits.items;
      expect(items).toHaveLength(6);
      const expected = await expectedPayloads(items.map((item) => item.id));
      for (const item of items) {
        const full = expected.get(item.id);
        if (item.declaredBy) {
          expect(item).toEqual({ id: item.id, given: full.effectiveInput, output: full.output, error: full.error, toolCall: full.toolCall, declaredBy: item.declaredBy });
          expect(item.given).toEqual(expect.objectContaining({ q: expect.any(Number) }));
          const declaring = expected.get(item.declaredBy.id) ?? (await read(FULL, { id: item.declaredBy.id })).data.audit;
          expect(item.declaredBy).toEqual({ id: item.declaredBy.id, input: declaring.input, output: declaring.output });
          expect(item.declaredBy.input).toEqual({ turn: expect.any(Number) });
        } else {
          expect(item).toEqual({ id: item.id, input: full.input, output: full.output });
          expect(item.input).toEqual({ turn: expect.any(Number) });
        }
      }
    }
  });

  it('a ToolCall keeps no copy of the payloads of its audit: its fields read them from its latest execution', async () => {
    const who = await actors(t);
    const thread = await createThread(t, who.owner, 'no copies');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, thread));
    await worker.declare('plan', [{ id: 'ok', name: 'fetch', args: { url: 'u' } }, { id: 'bad', name: 'fetch' }]);
    must(await worker.toolStarted('ok', 'fetch', { effectiveInput: { url: 'u!' } }));
    must(await worker.toolFinished('ok', { content: 'page', status: 'success', id: 'msg-1' }));
    must(await worker.toolStarted('bad', 'fetch', { effectiveInput: { url: 'v' } }));
    must(await worker.toolFinished('bad', { content: 'refused', status: 'error' }));
    const response = await t.gql(
      `query($id: ID!) { thread(id: $id) { runs { toolCalls { toolCallId status declaredInput effectiveInput output error } } } }`,
      { id: thread },
      who.owner,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.thread.runs[0].toolCalls).toEqual([
      { toolCallId: 'ok', status: 'COMPLETED', declaredInput: { url: 'u' }, effectiveInput: { url: 'u!' }, output: 'page', error: null },
      { toolCallId: 'bad', status: 'FAILED', declaredInput: null, effectiveInput: { url: 'v' }, output: 'refused', error: { message: 'refused' } },
    ]);
    const stored = await t.app.db.driver.query(
      `SELECT effective_input, output, error FROM tool_call WHERE thread_id = $1::uuid`,
      [thread],
    );
    expect(stored).toEqual([
      { effective_input: null, output: null, error: null },
      { effective_input: null, output: null, error: null },
    ]);
  });
});
