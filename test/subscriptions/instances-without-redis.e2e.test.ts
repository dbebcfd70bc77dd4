import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { counterOf, delivered, payloads, subscribeLive, type ThreadChange } from '../support/streams.js';
import { RunEvents, sendBatch } from '../batches/support.js';
import { pruneRecentChanges } from '../../src/domain/change-cursors.js';

// SEMANTICS.md, "Subscriptions": several instances on one database without REDIS_URL still
// deliver every change committed on any instance, read from the database (issue 43: an instance
// with a mistyped REDIS_URL delivered none of another instance's changes). Only PostgreSQL is
// shared between instances; with REQUIRE_SERVICES=1 a missing one is a failure, never a skip.

const title = 'two instances on one PostgreSQL database without Redis';
const meaningful = postgresSuiteRuns(`"${title}"`, 'only PostgreSQL is shared between instances');

const AUDITS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id operationId status } }`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;
const CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id status } run { id status } } }`;
const TOOL_STATUS = `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { toolCallId status } }`;
const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;

describe.runIf(meaningful)(title, () => {
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;

  beforeAll(async () => {
    requirePostgresUrl();
    a = await startTestApp({ REDIS_URL: '' });
    b = await startTestApp({ REDIS_URL: '' }, { databaseUrl: a.config.databaseUrl });
    urlB = await b.app.start(0);
    urlA = await a.app.start(0);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  // "Within 5 seconds" (SEMANTICS.md) is this interval: a poll delivers what it finds at once
  // (test/subscriptions/pubsub.unit, fake timers); below, only that B's poll delivers everything.
  it('says in its start banner that it polls the database, at least every 5 s', () => {
    const [, interval] = /^database poll every (\d+) ms/.exec(b.app.mode.liveUpdates) ?? [];
    expect(Number(interval)).toBeGreaterThan(0);
    expect(Number(interval)).toBeLessThanOrEqual(5000);
  });

  it('a subscriber on B receives, in order, the changes written through A', async () => {
    const { session, owner, threadId } = await runningRun(a);
    const audits = await subscribeLive(b.app, urlB, 'audit', AUDITS, { threadId }, owner);
    const runs = await subscribeLive(b.app, urlB, 'run', RUNS, { threadId }, owner);

    // One change at a time: changes caught up from the database together fold into their latest state.
    must(await session.modelStarted('m1')); // served by A
    await delivered(audits, 1, 'auditChanged');
    must(await session.modelFinished('m1'));
    await delivered(audits, 2, 'auditChanged');
    must(await session.finish('COMPLETED'));
    for (const events of await delivered(audits, 2, 'auditChanged')) {
      expect(events.map((e) => `${e.operationId}:${e.status}`)).toEqual(['m1:RUNNING', 'm1:COMPLETED']);
    }
    for (const events of await delivered(runs, 1, 'runChanged')) {
      expect(events.map((e) => e.status)).toEqual(['COMPLETED']);
    }
  });

  it('threadChanges and toolStatusChanged subscribers on B (graphql-ws and SSE) get every change written through A: in order, no duplicate, ending at the cursor the database holds', async () => {
    const { session, owner, threadId } = await runningRun(a);
    const changes = await subscribeLive(b.app, urlB, 'changes', CHANGES, { threadId }, owner);
    const tools = await subscribeLive(b.app, urlB, 'audit', TOOL_STATUS, { threadId }, owner);

    await session.declare('m1', [{ id: 'call-1', name: 'search' }]); // each served by A
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'found' }));
    must(await session.finish('COMPLETED'));
    const final = (await a.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor as string;

    await Promise.all(changes.map((stream) => stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', 30_000)));
    const toolStatuses = await Promise.all(
      tools.map((stream) => stream.until((all) => payloads(all, 'toolStatusChanged').some((change) => change.status === 'COMPLETED'), 'the tool completed', 30_000)),
    );
    for (const stream of changes) {
      const counters = (payloads(stream.results, 'threadChanges') as ThreadChange[]).map((change) => counterOf(change.cursor));
      // Strictly increasing (no duplicate) and ending at the database's cursor (none missing at the end).
      expect(counters.every((counter, i) => i === 0 || counter > counters[i - 1]!)).toBe(true);
      expect(counters.at(-1)).toBe(counterOf(final));
      expect(stream.ending).toBeNull();
    }
    for (const results of toolStatuses) {
      expect(payloads(results, 'toolStatusChanged').at(-1)).toEqual({ toolCallId: 'call-1', status: 'COMPLETED' });
    }
  }, 90_000); // bounds of 30 s: only a hang fails, not a slow machine

  it('changes committed together, or faster than the poll, reach B one event per change, each as committed: the same events as A delivers in process', async () => {
    const { session, owner, worker, threadId } = await runningRun(a);
    const DETAILED = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) {
      cursor audit { id status ... on ToolAudit { toolCallId output } ... on ModelAudit { output } } run { id status } } }`;
    const RUN_STATUS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status leaseExpiresAt } }`;
    const streams = {
      changes: { a: await subscribeLive(a.app, urlA, 'changes', DETAILED, { threadId }, owner), b: await subscribeLive(b.app, urlB, 'changes', DETAILED, { threadId }, owner) },
      tools: { a: await subscribeLive(a.app, urlA, 'audit', TOOL_STATUS, { threadId }, owner), b: await subscribeLive(b.app, urlB, 'audit', TOOL_STATUS, { threadId }, owner) },
      runs: { a: await subscribeLive(a.app, urlA, 'run', RUN_STATUS, { threadId }, owner), b: await subscribeLive(b.app, urlB, 'run', RUN_STATUS, { threadId }, owner) },
    };
    const events = new RunEvents(session.lease);
    // One batch: a model call declaring two tools, one tool started and finished, a renewal.
    const batch = await sendBatch(a, worker, [
      events.modelStarted('m1'),
      events.modelFinished('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'search' }]),
      events.toolStarted('c1'),
      events.toolFinished('c1'),
      events.renew(),
    ]);
    expect(batch.data?.result.map((result) => result.error)).toEqual([null, null, null, null, null]);
    // Then single mutations faster than the poll, and the run's end closing the open call.
    must(await session.toolStarted('c2', 'search', { sequence: '20' }));
    must(await session.finish('COMPLETED'));
    const final = (await a.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor as string;

    const until = (stream: (typeof streams.changes.a)[number]) =>
      stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', 10_000);
    await Promise.all([...streams.changes.a, ...streams.changes.b].map(until));
    const inProcess = payloads(streams.changes.a[0]!.results, 'threadChanges');
    expect(counterOf(inProcess.at(-1).cursor) - counterOf(inProcess[0].cursor) + 1n).toBe(BigInt(inProcess.length)); // every change, one event each
    expect(inProcess.filter((change: ThreadChange & { audit: { toolCallId?: string } | null }) => change.audit?.toolCallId === 'c1').map((change: { audit: { status: string } }) => change.audit.status)).toEqual(['RUNNING', 'COMPLETED']);
    for (const stream of [...streams.changes.a, ...streams.changes.b]) expect(payloads(stream.results, 'threadChanges')).toEqual(inProcess);

    const toolsInProcess = await Promise.all(streams.tools.a.map((stream) => stream.take(4)));
    const toolsRead = await Promise.all(streams.tools.b.map((stream) => stream.take(4)));
    for (const results of [...toolsInProcess, ...toolsRead]) expect(payloads(results, 'toolStatusChanged')).toEqual(payloads(toolsInProcess[0]!, 'toolStatusChanged'));
    expect(payloads(toolsInProcess[0]!, 'toolStatusChanged').map((change: { toolCallId: string; status: string }) => `${change.toolCallId}:${change.status}`)).toEqual([
      'c1:RUNNING',
      'c1:COMPLETED',
      'c2:RUNNING',
      'c2:ABANDONED',
    ]);
    // The renewal is left out of runChanged on both: only the run's end is a run change here.
    for (const stream of [...streams.runs.a, ...streams.runs.b]) {
      const runs = payloads(await stream.take(1), 'runChanged');
      expect(runs.map((run: { status: string }) => run.status)).toEqual(['COMPLETED']);
    }
  });

  it('a burst of many catch-up pages written through A (one batch of 500 events) reaches the subscribers of another instance within a couple of polls, every change one event', async () => {
    // Pages of 50 (the default is 256): one page per poll, the defect, would bring 50 changes a
    // second, ten seconds for this burst, whatever the machine's speed.
    const page = 50;
    const c = await startTestApp({ REDIS_URL: '' }, { databaseUrl: a.config.databaseUrl, maxPendingEvents: page });
    onTestFinished(() => c.close());
    const urlC = await c.app.start(0);
    const { session, owner, worker, threadId } = await runningRun(a);
    const streams = await subscribeLive(c.app, urlC, 'changes', CHANGES, { threadId }, owner);
    const start = (await a.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor as string;
    const events = new RunEvents(session.lease);
    // Model calls declaring 48 tools each, each tool started and finished: 98 events a call.
    const burst = Array.from({ length: 6 }, (_, m) => {
      const tools = Array.from({ length: 48 }, (_, i) => ({ id: `m${m}-c${i}`, name: 'search' }));
      return [events.modelStarted(`m${m}`), events.modelFinished(`m${m}`, tools), ...tools.flatMap((tool) => [events.toolStarted(tool.id), events.toolFinished(tool.id)])];
    }).flat();
    const batch = await sendBatch(a, worker, burst.slice(0, 500));
    expect(batch.data?.result.filter((result) => result.error)).toEqual([]);
    const final = (await a.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor as string;
    const written = counterOf(final) - counterOf(start);
    expect(written).toBe(500n);

    const bound = 2 * c.config.changePollIntervalMs + 2000;
    await Promise.all(streams.map((stream) => stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', bound)));
    for (const stream of streams) {
      const counters = (payloads(stream.results, 'threadChanges') as ThreadChange[]).map((change) => counterOf(change.cursor));
      expect(counters).toEqual(Array.from({ length: 500 }, (_, i) => counterOf(start) + BigInt(i) + 1n));
      expect(stream.ending).toBeNull();
    }
  }, 60_000);

  // An older version (before 20261209000000_recent_changes) keeps none of its changes as committed,
  // and neither does an instance given a REDIS_URL (here one nobody answers): during a rolling
  // upgrade, B reads them as before, each entity in its latest state (docs/operations.md "Upgrades").
  it('changes written by an instance that keeps none as committed (an older version) still reach B, up to the last, in their latest state', async () => {
    const older = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1' }, { databaseUrl: a.config.databaseUrl });
    onTestFinished(() => older.close());
    const { session, owner, threadId } = await runningRun(older);
    const streams = await subscribeLive(b.app, urlB, 'changes', CHANGES, { threadId }, owner);
    await session.declare('m1', [{ id: 'c1', name: 'search' }]);
    must(await session.toolStarted('c1', 'search'));
    must(await session.toolFinished('c1', { content: 'found' }));
    must(await session.finish('COMPLETED'));
    const final = (await b.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor as string;
    const kept = await b.app.db.sql.query<{ count: string }>('SELECT count(*)::text AS count FROM recent_change WHERE thread_id = $1::uuid', [threadId]);
    expect(kept[0]!.count).toBe('0');
    for (const stream of streams) {
      const changes = payloads(await stream.until((all) => all.at(-1)?.data?.threadChanges?.cursor === final, 'the final cursor', 10_000), 'threadChanges') as ThreadChange[];
      const counters = changes.map((change) => counterOf(change.cursor));
      expect(counters).toEqual([...counters].sort((x, y) => (x < y ? -1 : 1)));
      const latest = new Map(changes.map((change) => [(change.audit ?? change.run)!.id, (change.audit ?? change.run)!.status]));
      expect([...latest.values()].sort()).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    }
  });

  it('the changes kept as committed go after 5 minutes, and with their thread', async () => {
    const { session, owner, threadId } = await runningRun(a);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const kept = async () => Number((await a.app.db.sql.query<{ count: string }>('SELECT count(*)::text AS count FROM recent_change WHERE thread_id = $1::uuid', [threadId]))[0]!.count);
    const before = await kept();
    expect(before).toBe(4); // the run's creation and claim, the model call's start and finish
    await a.app.db.sql.query(`UPDATE recent_change SET logged_at = now() - interval '6 minutes' WHERE thread_id = $1::uuid AND change_cursor = (SELECT min(change_cursor) FROM recent_change WHERE thread_id = $1::uuid)`, [threadId]);
    await pruneRecentChanges(a.app.db.sql);
    expect(await kept()).toBe(before - 1);
    const receipt = await a.gql(`mutation($id: ID!) { deleteThread(id: $id) { verifiedAt } }`, { id: threadId }, owner);
    expect(receipt.errors).toBeUndefined();
    expect(await kept()).toBe(0);
  });
});
