import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changesAfter } from '../../src/domain/change-cursors.js';
import { markDeleted } from '../../src/domain/deletion.js';
import { exportConfigFromEnv } from '../../src/export/config.js';
import { startExporter } from '../../src/export/exporter.js';
import { backlog } from '../../src/export/queue.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { THREAD_AUDITS, must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { eventually } from '../support/streams.js';
import { rowsLeft } from './support.js';

// Issue 42, item 4: from the commit of a thread's deletion mark, every read treats the thread as
// gone, while its rows are still being removed (a long deletion, or one a crash cut short).

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const AUDIT = 'query($id: ID!) { audit(id: $id) { id } }';
const SEARCH =
  'query($text: String, $name: String, $status: AuditStatus, $threadId: ID) { searchAudits(text: $text, name: $name, status: $status, threadId: $threadId, first: 10) { items { audit { id } threadTitle } } }';
const LEDGER = 'query($threadId: ID) { toolCallLedger(threadId: $threadId, first: 10) { edges { node { id } } } }';

describe(`reads of a thread whose deletion mark committed, its rows still there (${backendName})`, () => {
  it('audit(id), searchAudits, toolCallLedger, threadAudits and thread never return it', async () => {
    const ctx = await runningRun(t);
    await ctx.session.declare('m1', [{ id: 'c1', name: 'lookup_zebrafish' }]);
    const tool = must(await ctx.session.toolStarted('c1', 'lookup_zebrafish', { effectiveInput: { q: 'zebrafish' } }));
    must(await ctx.session.toolFinished('c1', { found: 'zebrafish' }));
    const visible = async () => ({
      audit: await t.gql(AUDIT, { id: tool.id }, ctx.owner),
      search: await t.gql(SEARCH, { text: 'zebrafish' }, ctx.owner),
      searchInThread: await t.gql(SEARCH, { text: 'zebrafish', threadId: ctx.threadId }, ctx.owner),
      // Without text, across threads: read on the owner's indexes of names and statuses.
      byName: await t.gql(SEARCH, { name: 'lookup_zebrafish' }, ctx.owner),
      byStatus: await t.gql(SEARCH, { status: 'COMPLETED' }, ctx.owner),
      ledger: await t.gql(LEDGER, {}, ctx.owner),
      ledgerInThread: await t.gql(LEDGER, { threadId: ctx.threadId }, ctx.owner),
      timeline: await t.gql(THREAD_AUDITS, { threadId: ctx.threadId }, ctx.owner),
    });
    const before = await visible();
    expect(before.audit.data.audit.id).toBe(tool.id);
    expect(before.search.data.searchAudits.items).toHaveLength(1);
    expect(before.byName.data.searchAudits.items.map((hit: { audit: { id: string } }) => hit.audit.id)).toEqual([tool.id]);
    expect(before.byStatus.data.searchAudits.items.map((hit: { audit: { id: string } }) => hit.audit.id)).toContain(tool.id);
    expect(before.ledger.data.toolCallLedger.edges).toHaveLength(1);

    // The mark alone, as a deletion between its mark and its batches leaves it.
    expect(await markDeleted(t.app.deps, ctx.threadId, () => true)).toBe(true);
    expect(await rowsLeft(t, ctx.threadId, [ctx.runId])).toMatchObject({ 'message.thread_id': 2, 'tool_call.thread_id': 1 });

    const after = await visible();
    expect(errorCode(after.audit)).toBe('NOT_FOUND');
    expect(after.search.errors).toBeUndefined();
    expect(after.search.data.searchAudits.items).toEqual([]);
    expect(after.byName.data.searchAudits.items).toEqual([]);
    expect(after.byStatus.data.searchAudits.items).toEqual([]);
    expect(errorCode(after.searchInThread)).toBe('NOT_FOUND');
    expect(after.ledger.data.toolCallLedger.edges).toEqual([]);
    expect(errorCode(after.ledgerInThread)).toBe('NOT_FOUND');
    expect(errorCode(after.timeline)).toBe('NOT_FOUND');
  });

  it('a stream catching up reads none of it: the changes a lagging subscriber reads from the database', async () => {
    // Another instance's stream may catch up before the deletion's signal reaches it (Redis down: up to its poll).
    const ctx = await runningRun(t);
    await ctx.session.declare('m1', [{ id: 'c1', name: 'lookup' }]);
    must(await ctx.session.toolStarted('c1', 'lookup', { effectiveInput: { q: 'secret' } }));
    for (const recent of [false, true]) expect((await changesAfter(t.app.deps.db, ctx.threadId, 0n, 100, recent)).length).toBeGreaterThan(0);
    expect(await markDeleted(t.app.deps, ctx.threadId, () => true)).toBe(true);
    for (const recent of [false, true]) expect(await changesAfter(t.app.deps.db, ctx.threadId, 0n, 100, recent)).toEqual([]);
  });

  it('the export sends none of it: spans waiting for export when the mark committed never leave', async () => {
    const endedRun = async () => {
      const ctx = await runningRun(t);
      await ctx.session.declare('m1', [{ id: 'c1', name: 'lookup' }]);
      must(await ctx.session.toolStarted('c1', 'lookup', { effectiveInput: { q: 'secret' } }));
      must(await ctx.session.toolFinished('c1', { found: 'secret' }));
      must(await ctx.session.finish('COMPLETED'));
      return ctx;
    };
    // Both wait for export (this app exports nothing); one is marked, as a long deletion leaves it.
    const deleted = await endedRun();
    const kept = await endedRun();
    expect(await markDeleted(t.app.deps, deleted.threadId, () => true)).toBe(true);

    const receiver = await startOtlpReceiver();
    const exporter = startExporter(t.app.db, exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' })!);
    try {
      const ofThread = (threadId: string) => receiver.spans.filter((span) => span.attributes['gen_ai.conversation.id'] === threadId);
      // The marked thread was pending first (claims go oldest first): once the kept one's spans are in, it had its turn.
      await receiver.waitFor(() => ofThread(kept.threadId).length === 3); // its run, model call and tool call
      expect(ofThread(deleted.threadId)).toEqual([]);
      // Nor is it a backlog (GET /metrics): nothing of it will leave, and its age would only grow until its removal ends.
      await eventually(() => backlog(t.app.db.sql), (waiting) => waiting.threads === 0, { what: 'an empty export backlog' });
    } finally {
      await exporter.stop();
      await receiver.close();
    }
  });
});
