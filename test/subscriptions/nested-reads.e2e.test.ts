import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { THREAD_AUDITS, THREAD_CHANGES, THREAD_RUNS } from '../../web/src/queries.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { counterOf, eventually, payloads, subscribeWs } from '../support/streams.js';
import { keepsRecentChanges } from '../../src/realtime/pubsub.js';

// Changes delivered together, one after another (a threadChanges resume's catch-up page, the
// changes one command published), have the nested fields a timeline selects for each of them (the
// page's own document, web/src/queries.ts: a run's audit summary, a model call's declared tool
// calls, a tool audit's call and declaring model call) read at once, not change by change
// (docs/subscriptions.md). Catch-up pages of 20 here, so that a short thread fills several.
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

describe(`the nested fields of changes delivered together, with the page's own document (${backendName})`, () => {
  it('a catch-up reads each page\'s together, a few statements a page, each change as a fresh read shows it', async () => {
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

    // Every change, each as committed, where the database keeps recent changes (PostgreSQL
    // without Redis); else each entity once, in its latest state (catch-up folds): the run and its 80 audits.
    const changes = payloads(results, 'threadChanges');
    const entities = 1 + 2 * TOOL_CALLS;
    expect(changes).toHaveLength(keepsRecentChanges(t.config) ? Number(counterOf(last) - counterOf(after)) : entities);
    const latest = [...new Map(changes.map((change) => [(change.audit ?? change.run).id, change])).values()];
    expect(latest).toHaveLength(entities);
    const fresh = await t.gql(String(THREAD_AUDITS), { threadId }, owner);
    expect(byId(latest.filter((change) => change.audit).map((change) => change.audit))).toEqual(byId(fresh.data.threadAudits.items));
    const runs = await t.gql(String(THREAD_RUNS), { id: threadId, first: 500 }, owner);
    expect(latest.filter((change) => change.run).map((change) => change.run)).toEqual(runs.data.thread.runs);
    expect(latest.find((change) => change.run).run.auditSummary).toMatchObject({ audits: entities - 1, toolCalls: TOOL_CALLS, running: 0 });

    // 16 here folded; read change by change, the nested fields took one to three statements each (123 here).
    const pages = Math.ceil(changes.length / PAGE);
    expect(caused.length, caused.join('\n')).toBeLessThanOrEqual(6 * pages);
  });

  it('a run\'s end that closes 30 running tool calls delivers its 31 changes with their nested fields read together', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const calls = Array.from({ length: 30 }, (_, i) => ({ id: `open${i}`, name: 'search' }));
    await session.declare('plan', calls);
    for (const call of calls) must(await session.toolStarted(call.id, 'search'));
    const stream = subscribeWs(url, String(THREAD_CHANGES), { threadId }, owner);
    onTestFinished(() => stream.close());
    await eventually(() => t.app.pubsub.subscriberCount('changes', threadId), (count) => count === 1, { what: 'the subscription to start' });

    statements.length = 0;
    must(await session.finish('COMPLETED'));
    const results = await stream.until((all) => all.some((result) => result.data?.threadChanges.run?.finishedAt), 'the run\'s end');
    const caused = statements.splice(0);

    const changes = payloads(results, 'threadChanges');
    expect(changes).toHaveLength(31);
    const fresh = await t.gql(String(THREAD_AUDITS), { threadId }, owner);
    const closed = new Map(fresh.data.threadAudits.items.map((audit: { id: string }) => [audit.id, audit]));
    for (const change of changes.filter((change) => change.audit)) expect(change.audit).toEqual(closed.get(change.audit.id));
    expect(changes.at(-1).run.auditSummary).toMatchObject({ audits: 31, toolCalls: 30, running: 0 });
    // finishRun's own statement and five a burst for the changes' nested fields (11 here); read change by change, 48.
    expect(caused.length, caused.join('\n')).toBeLessThanOrEqual(20);
  });
});
