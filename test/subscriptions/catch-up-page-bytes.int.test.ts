import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATCH_UP_PAGE_PAYLOAD_BYTES, changesAfter } from '../../src/domain/change-cursors.js';
import type { CommittedChange } from '../../src/domain/events.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { payloads, subscribeSse } from '../support/streams.js';

// A threadChanges catch-up reads a page of up to 256 changes from the database, each audit with its
// payloads. A warehouse copying a thread of large tool outputs from its startCursor (every audit
// at once) made the server hold a whole page of them: 120 outputs of 1 MB took its memory up by
// 170 MB for one stream, and up to 256 audits of 6 MB (input, output, error, usage at
// MAX_JSON_BYTES as stored) each could come to 1.5 GB per stream, past any budget the answers
// keep (MAX_ANSWER_PAYLOAD_BYTES). A page now ends before the audit whose payloads would take it
// past CATCH_UP_PAGE_PAYLOAD_BYTES (never before its first change), and pages still cover every
// change once, in cursor order.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const OUTPUT_BYTES = 900_000;
const CALLS = Math.ceil((CATCH_UP_PAGE_PAYLOAD_BYTES * 1.5) / OUTPUT_BYTES);

const payloadBytes = (change: CommittedChange) =>
  change.kind === 'audit' ? (change.row.inputBytes ?? 0) + (change.row.outputBytes ?? 0) + (change.row.errorBytes ?? 0) : 0;

/** A finished run whose tools each returned OUTPUT_BYTES, enough for more than one page. */
async function largeThread() {
  const { session, threadId, owner } = await runningRun(t);
  await session.declare('m1', Array.from({ length: CALLS }, (_, i) => ({ id: `c${i}`, name: 'dump' })));
  const large = 'x'.repeat(OUTPUT_BYTES);
  for (let i = 0; i < CALLS; i++) {
    must(await session.toolStarted(`c${i}`, 'dump'));
    must(await session.toolFinished(`c${i}`, { content: large }));
  }
  must(await session.finish('COMPLETED'));
  return { threadId, owner };
}

describe(`a catch-up page is bounded by its audits' payload bytes (${backendName})`, () => {
  it.each([false, true])('pages of large audits stay within the bound and cover every change once (recent changes: %s)', async (recent) => {
    const { threadId } = await largeThread();

    const pages: CommittedChange[][] = [];
    for (let after = 0n; ; ) {
      const page = await changesAfter(t.app.deps.db, threadId, after, 256, recent);
      if (page.length === 0) break;
      pages.push(page);
      after = page.at(-1)!.cursor;
    }
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) {
      const beforeLast = page.slice(0, -1).reduce((sum, change) => sum + payloadBytes(change), 0);
      expect(beforeLast).toBeLessThan(CATCH_UP_PAGE_PAYLOAD_BYTES);
    }
    const all = pages.flat();
    const cursors = all.map((change) => change.cursor);
    for (let i = 1; i < cursors.length; i++) expect(cursors[i]! > cursors[i - 1]!).toBe(true);
    // Applied by id: the run, its model call and every tool call, in their latest state.
    const view = new Map(all.map((change) => [change.row.id, change.row.status]));
    expect(view.size).toBe(1 + 1 + CALLS);
    expect(new Set(view.values())).toEqual(new Set(['COMPLETED']));
  }, 120_000);

  it('a stream after startCursor goes on past a page the bound ended, with no write to wake it', async () => {
    const { threadId, owner } = await largeThread();
    const { data } = await t.gql(`query($id: ID!) { thread(id: $id) { startCursor changeCursor } }`, { id: threadId }, owner);
    const stream = await subscribeSse(t.app, `subscription($id: ID!, $after: String) { threadChanges(threadId: $id, after: $after) { cursor audit { id } run { id } } }`, { id: threadId, after: data.thread.startCursor }, owner);
    try {
      const results = await stream.until((all) => all.some((result) => result.data?.threadChanges.cursor === data.thread.changeCursor), 'the last change');
      // Folded, or as committed where the database still keeps the changes (PostgreSQL without Redis): every entity either way.
      const entities = payloads(results, 'threadChanges').map((change: { audit: { id: string } | null; run: { id: string } | null }) => (change.audit ?? change.run)!.id);
      expect(new Set(entities).size).toBe(1 + 1 + CALLS);
    } finally {
      stream.close();
    }
  }, 120_000);
});
