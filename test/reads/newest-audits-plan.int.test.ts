import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { TIMELINE } from '../../src/domain/audit-reads.js';
import { SEARCH_PROBE_AFTER, SEARCH_WALK_BUDGET, searchAudits } from '../../src/domain/audit-search.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, rowsTouched, type PlanNode } from '../support/plans.js';

// The timeline read must cost the same on a long thread as on a short one (issue 18's read curve):
// the plan may read only the newest runs it needs, whatever the thread's size and however many
// runs other threads created after it. Counted from the plan's own row counts, not from time.
// Two plans once broke it: sorting all of the thread's runs before the join, and walking a
// global created_order index back from the database's newest run, skipping other threads' runs.

const OLD_THREAD = '00000000-0000-4000-8000-000000000001';
const RUNS = 30_000; // four audits each: 120,000 audits in the thread read
const NEWER_THREADS = 1_000; // 100 runs each, all created after the thread read's
const NEEDLES_PER_NEWER_THREAD = 2;



/** The tables and indexes of which the plan read `bound` rows or more. */
const readAtLeast = (touched: Map<string, number>, bound: number) => [...touched].filter(([, rows]) => rows >= bound);

describe(`the newest audits of a thread (${backendName})`, () => {
  let db: Database;
  let close = async () => {};

  beforeAll(async () => {
    ({ db, close } = await planTestDatabase());
    await db.driver.exec(`
      INSERT INTO thread (id, owner_id, title) VALUES ('${OLD_THREAD}', 'owner', 'old');
      INSERT INTO run (id, thread_id, status, lease_epoch)
        SELECT gen_random_uuid(), '${OLD_THREAD}', 'COMPLETED', 1 FROM generate_series(1, ${RUNS});
      INSERT INTO thread (id, owner_id, title) SELECT md5('newer' || t)::uuid, 'owner', 'newer' FROM generate_series(1, ${NEWER_THREADS}) t;
      INSERT INTO run (id, thread_id, status, lease_epoch)
        SELECT gen_random_uuid(), md5('newer' || t)::uuid, 'COMPLETED', 1 FROM generate_series(1, ${NEWER_THREADS}) t, generate_series(1, 100);
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status)
        SELECT gen_random_uuid(), r.thread_id, r.id,
          (CASE WHEN k IN (1, 4) THEN 'ASSISTANT' ELSE 'TOOL' END)::"MessageRole",
          (CASE WHEN k IN (1, 4) THEN 'model_audit' ELSE 'tool_audit' END)::"MessageType",
          'op-' || k, k, 'COMPLETED'
        FROM run r, generate_series(1, 4) k WHERE r.thread_id = '${OLD_THREAD}';
      -- One audit deep in the thread says something no other of the thread does; the newer threads
      -- say it too, two audits each: a search within the thread must not read those.
      UPDATE message SET input = '{"note": "a rare needle 4711"}'
        WHERE id = (SELECT id FROM message WHERE thread_id = '${OLD_THREAD}' ORDER BY id LIMIT 1 OFFSET 1000);
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, input)
        SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'op-1', 1, 'COMPLETED', '{"note": "a rare needle 4711"}'
        FROM (SELECT r.*, row_number() OVER (PARTITION BY r.thread_id ORDER BY r.id) AS nth FROM run r WHERE r.thread_id <> '${OLD_THREAD}') r
        WHERE r.nth <= ${NEEDLES_PER_NEWER_THREAD};`);
    // Never analysed until the second half (autovacuum would analyse it in the meantime on PostgreSQL).
    for (const table of ['thread', 'run', 'message']) await db.driver.exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  }, 600_000); // 120,000 audits on PGlite took over 120 s at load 15: a hang guard, not a speed test

  afterAll(() => close());

  // First as a restored database, or a fast-growing table before autovacuum's first ANALYZE, stands
  // (no statistics at all), then analysed: the plan must not hinge on the estimates.
  const plans = () => {
    it('reads only the newest runs it needs, not the thread nor the runs created after it', async () => {
      const [row] = await db.driver.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${TIMELINE}`,
        [OLD_THREAD, 501, null],
      );
      const touched = rowsTouched(row!['QUERY PLAN'][0].Plan);
      // 501 audits live in the newest 126 runs: a few hundred rows of each table at most.
      expect(touched.get('run')).toBeLessThan(500);
      expect(touched.get('message')).toBeLessThan(1_000);
      expect(readAtLeast(touched, 1_000)).toEqual([]);
    });

    it('paging back from deep in the thread reads only the runs before the anchor it needs', async () => {
      const [anchor] = await db.driver.query<{ id: string }>(
        `SELECT m.id FROM message m JOIN run r ON r.id = m.run_id WHERE r.thread_id = $1
          ORDER BY r.created_order LIMIT 1 OFFSET 60000`,
        [OLD_THREAD],
      );
      const [row] = await db.driver.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${TIMELINE}`,
        [OLD_THREAD, 501, anchor!.id],
      );
      const touched = rowsTouched(row!['QUERY PLAN'][0].Plan);
      expect(touched.get('run')).toBeLessThan(500);
      expect(touched.get('message')).toBeLessThan(1_000);
      expect(readAtLeast(touched, 1_000)).toEqual([]);
    });

    it('a rare text\'s search in the thread: the search index narrowed to the thread, then only its matches; not the newest 500 audits, the whole thread nor the other threads\' matches', async () => {
      // The search index as the migrations left it: built on empty tables, grown insert by insert,
      // never vacuumed (PGlite runs no autovacuum), so it knows nothing of its own size.
      let touched = new Map<string, number>();
      const sql = explainingSql(db, (plan) => (touched = rowsTouched(plan)));
      const found = await searchAudits(sql, { sub: 'owner', role: 'superadmin' }, { threadId: OLD_THREAD, text: 'NEEDLE 4711', first: 50 });
      expect(found.items.map((hit) => hit.snippet)).toEqual([expect.stringContaining('a rare needle 4711')]);
      // The index's matches in the thread alone (the other threads' 2,000 matches stay in the
      // index), and as they fit a page, they are the answer: the walk stops at the thread's newest
      // SEARCH_PROBE_AFTER audits (SEARCH_WALK_BUDGET of them, each with its payloads, before).
      expect(touched.get('message_audit_search_owner_idx')).toBeLessThan(NEWER_THREADS);
      expect(touched.get('message')).toBeLessThan(SEARCH_PROBE_AFTER + 50);
      expect(readAtLeast(touched, SEARCH_WALK_BUDGET + 100)).toEqual([]);
    });
  };

  describe('never analysed', plans);
  describe('analysed', () => {
    beforeAll(() => db.driver.exec('ANALYZE'), 600_000);
    plans();
  });

  it('returns them newest first: the newest run first, within a run by sequence', async () => {
    const audits = await db.driver.query<{ run_id: string; sequence: string }>(TIMELINE, [OLD_THREAD, 9, null]);
    const runs = await db.driver.query<{ id: string }>(
      `SELECT id FROM run WHERE thread_id = $1 ORDER BY created_order DESC LIMIT 3`,
      [OLD_THREAD],
    );
    expect(audits.map((audit) => [audit.run_id, Number(audit.sequence)])).toEqual([
      ...[4, 3, 2, 1].map((sequence) => [runs[0]!.id, sequence]),
      ...[4, 3, 2, 1].map((sequence) => [runs[1]!.id, sequence]),
      [runs[2]!.id, 4],
    ]);
  });
});
