// Issue 42, item 3 ("bound anything else a principal writes that others list"): each JSON value
// a principal writes is bounded (MAX_JSON_BYTES), but a list of them was not, so one read of a
// thread's audits could answer hundreds of megabytes. The JSON payloads of one query's answer are
// bounded (MAX_ANSWER_PAYLOAD_BYTES): over it, the answer is refused whole, saying which limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onLogLine } from '../../src/log.js';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { must, runningRun } from '../support/lifecycle.js';

const MAX_JSON_BYTES = 2048;
const MAX_ANSWER_PAYLOAD_BYTES = 6 * MAX_JSON_BYTES;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ MAX_JSON_BYTES: String(MAX_JSON_BYTES), MAX_ANSWER_PAYLOAD_BYTES: String(MAX_ANSWER_PAYLOAD_BYTES) });
});
afterAll(() => t?.close());

const OUTPUTS = `query($threadId: ID!, $limit: Int) { threadAudits(threadId: $threadId, limit: $limit) {
  items { id ... on ToolAudit { output } } } }`;
const IDS = 'query($threadId: ID!) { threadAudits(threadId: $threadId) { items { id outputBytes } } }';

describe(`the JSON payloads of one answer (${backendName})`, () => {
  it('a read whose payloads exceed MAX_ANSWER_PAYLOAD_BYTES is refused whole (BAD_USER_INPUT, the limit named); fewer items, or no payloads, are answered', async () => {
    const ctx = await runningRun(t);
    const output = { text: 'x'.repeat(MAX_JSON_BYTES - 100) }; // each within MAX_JSON_BYTES
    const tools = Array.from({ length: 12 }, (_, i) => ({ id: `c${i}`, name: 'fetch' }));
    await ctx.session.declare('m1', tools);
    for (const tool of tools) {
      must(await ctx.session.toolStarted(tool.id, 'fetch'));
      must(await ctx.session.toolFinished(tool.id, output));
    }

    const logged: string[] = [];
    const stopReading = onLogLine((line) => void logged.push(line));
    const all = await t.gql(OUTPUTS, { threadId: ctx.threadId }, ctx.owner).finally(stopReading);
    expect(logged.filter((line) => /unexpected error/.test(line))).toEqual([]); // a client's answer, not an incident
    expect(errorCode(all), JSON.stringify(all).slice(0, 500)).toBe('BAD_USER_INPUT');
    expect(all.data ?? null).toBeNull();
    expect(all.errors).toHaveLength(1);
    expect(all.errors![0]!.extensions).toMatchObject({ limit: 'ANSWER_PAYLOAD_BYTES', max: MAX_ANSWER_PAYLOAD_BYTES });
    expect(all.errors![0]!.message).toMatch(/MAX_ANSWER_PAYLOAD_BYTES|fewer/);
    // The same on graphql-js (a document of two operations does not run compiled).
    const twoOperations = await t.app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ctx.owner}` },
      body: JSON.stringify({
        query: `${OUTPUTS.replace('query(', 'query Outputs(')} query Other { __typename }`,
        operationName: 'Outputs',
        variables: { threadId: ctx.threadId },
      }),
    });
    const twoAnswer = (await twoOperations.json()) as { errors?: { extensions?: unknown }[] };
    expect(twoAnswer.errors?.[0]?.extensions).toMatchObject({ limit: 'ANSWER_PAYLOAD_BYTES' });

    // Three outputs fit; the sizes alone always do.
    const few = await t.gql(OUTPUTS, { threadId: ctx.threadId, limit: 3 }, ctx.owner);
    expect(few.errors).toBeUndefined();
    expect(few.data.threadAudits.items.filter((item: { output?: { text: string } }) => item.output?.text === output.text)).toHaveLength(3);
    const sizes = await t.gql(IDS, { threadId: ctx.threadId }, ctx.owner);
    expect(sizes.errors).toBeUndefined();
    expect(sizes.data.threadAudits.items).toHaveLength(13);
  });
});
