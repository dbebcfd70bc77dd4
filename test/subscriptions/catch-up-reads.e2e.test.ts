import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { THREAD_AUDITS, THREAD_CHANGES, THREAD_RUNS } from '../../web/src/queries.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { payloads, subscribeWs } from '../support/streams.js';

// A threadChanges resume reads the thread's changes from the database a page at a time
// (docs/subscriptions.md); the nested fields a timeline selects for each change (the page's own
// document, web/src/queries.ts: a run's audit summary, a model call's declared tool calls, a tool
// audit's call and declaring model call) are read for the whole page at once, not change by change.
// Pages of 20 here, so that a short thread fills several.
const PAGE = 20;
const TOOL_CALLS = 40;

let t: TestApp;
let url: string;
/** Every SQL statement the app sent. */
const statements: string[] = [];
beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' }, { onQuery: (sql) => statements.push(sql), maxPendingEvents: PAGE });
  url = await t.app.start(0);
});
afterAll(() => t?.close());

const byId = <T extends { id: string }>(items: T[]) => [...items].sort((a, b) => a.id.localeCompare(b.id));

describe(`a threadChanges catch-up with the page's own document (${backendName})`, () => {
  it('reads each page\'s nested fields together, a few statements a page, each change as a fresh read shows it', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const cursorOf = async () => (await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, owner)).data.thread.changeCursor as string;
    const after = await cursorOf();
    for (let i = 0; i < TOOL_CALLS; i++) {
      await session.declare(`m${i}`, [{ id: `c${i}`, name: 'search' }]);
      must(await session.toolStarted(`c${i}`, 'search'));
      must(await session.toolFinished(`c${i}`, { content: `result ${i}` }));
    }
    must(await session.finish('COMPLETED'));
    const last = await cursorOf();

    statements.length = 0;
    const stream = subscribeWs(url, String(THREAD_CHANGES), { threadId, after }, owner);
    onTestFinished(() => stream.close());
    const results = await stream.until((all) => all.at(-1)?.data?.threadChanges.cursor === last, 'the last change');
    const caused = statements.splice(0);

    // Each entity once, in its latest state (catch-up folds): the run and its 80 audits.
    const changes = payloads(results, 'threadChanges');
    const entities = 1 + 2 * TOOL_CALLS;
    expect(changes).toHaveLength(entities);
    const fresh = await t.gql(String(THREAD_AUDITS), { threadId }, owner);
    expect(byId(changes.filter((change) => change.audit).map((change) => change.audit))).toEqual(byId(fresh.data.threadAudits.items));
    const runs = await t.gql(String(THREAD_RUNS), { id: threadId }, owner);
    expect(changes.filter((change) => change.run).map((change) => change.run)).toEqual(runs.data.thread.runs);
    expect(changes.find((change) => change.run).run.auditSummary).toMatchObject({ audits: entities - 1, toolCalls: TOOL_CALLS, running: 0 });

    // 16 here; read change by change, the nested fields took one to three statements each (123 here).
    const pages = Math.ceil(entities / PAGE);
    expect(caused.length, caused.join('\n')).toBeLessThanOrEqual(6 * pages);
  });
});
