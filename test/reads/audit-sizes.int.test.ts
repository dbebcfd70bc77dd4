import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';

// inputBytes, outputBytes, errorBytes: what each payload weighs, on every read of an audit, so a
// timeline of summaries can show which payload is large before `audit(id)` loads it.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const SIZES = 'id status inputBytes outputBytes errorBytes';

describe(`audit payload sizes (${backendName})`, () => {
  it('are the bytes of each payload as JSON text, null when absent, alike in the timeline, search and audit(id)', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner, 'sizes');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    await worker.declare('plan', [
      { id: 'big', name: 'fetch_big' },
      { id: 'fails', name: 'fetch_big' },
      { id: 'runs', name: 'fetch_big' },
    ]);
    // The JSON text as the database keeps it: `{"note": "…"}` is the string and 12 bytes more.
    const big = must(await worker.toolStarted('big', 'fetch_big', { effectiveInput: { note: 'x'.repeat(100_000) } }));
    must(await worker.toolFinished('big', { note: 'é'.repeat(1000) }));
    const fails = must(await worker.toolStarted('fails', 'fetch_big', { effectiveInput: { note: '' } }));
    must(await worker.toolError('fails', { message: 'boom' }));
    const runs = must(await worker.toolStarted('runs', 'fetch_big', { effectiveInput: { note: 'ab' } }));
    const expected = [
      { id: big.id, status: 'COMPLETED', inputBytes: 100_012, outputBytes: 2012, errorBytes: null },
      { id: fails.id, inputBytes: 12, outputBytes: null, errorBytes: 19 },
      { id: runs.id, status: 'RUNNING', inputBytes: 14, outputBytes: null, errorBytes: null },
    ];

    const timeline = await t.gql(`query($id: ID!) { threadAudits(threadId: $id) { items { __typename ${SIZES} } } }`, { id: threadId }, who.owner);
    expect(timeline.errors).toBeUndefined();
    const tools = timeline.data.threadAudits.items.filter((audit: any) => audit.__typename === 'ToolAudit');
    expect(tools).toMatchObject(expected);
    const model = timeline.data.threadAudits.items.find((audit: any) => audit.__typename === 'ModelAudit');
    expect(model.errorBytes).toBeNull();

    const search = await t.gql(`query($id: ID) { searchAudits(name: "fetch_big", threadId: $id) { items { audit { ${SIZES} } } } }`, { id: threadId }, who.owner);
    expect(search.errors).toBeUndefined();
    expect(search.data.searchAudits.items.map((hit: any) => hit.audit).reverse()).toMatchObject(expected);

    for (const want of expected) {
      const one = await t.gql(`query($id: ID!) { audit(id: $id) { ${SIZES} } }`, { id: want.id }, who.owner);
      expect(one.data.audit).toMatchObject(want);
    }
  });
});
