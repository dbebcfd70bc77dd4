import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { SEARCH_WALK_BUDGET, SEARCH_WALK_BYTES, searchAudits } from '../../src/domain/audit-search.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, type PlanNode } from '../support/plans.js';

// A text search over newest audits that carry large payloads (a tool returning 1 MB each): the
// walk reads every audit it passes whole, so it must stop at a budget of payload bytes as well as
// of audits, and leave the rest to the search index, still exact. With 1 MB payloads, walking
// SEARCH_WALK_BUDGET audits took 3.7–11 s of PostgreSQL CPU per search. Counted from the plan's
// row counts, not from time.

const THREAD = '00000000-0000-4000-8000-0000000000b1';
const AUDITS = 120; // fewer than SEARCH_WALK_BUDGET: the audit count alone would walk them all
const AUDIT_KB = 100; // 12 MB of payloads in all, barely compressible (hex digits)
const AUDIT_BYTES = AUDIT_KB * 1024;

/** The rows the plan's walk (its recursive CTE) produced: the audits it read. */
const walkedRows = (node: PlanNode): number =>
  (node['Node Type'] === 'Recursive Union' ? node['Actual Rows'] * node['Actual Loops'] : 0) + (node.Plans ?? []).reduce((sum, child) => sum + walkedRows(child), 0);

/** The tables the plan reads in sequence. */
const sequentialScans = (node: PlanNode): string[] => [
  ...(node['Node Type'] === 'Seq Scan' ? [node['Relation Name']!] : []),
  ...(node.Plans ?? []).flatMap(sequentialScans),
];

describe(`a text search over audits with large payloads (${backendName})`, () => {
  let db: Database;
  let close = async () => {};
  let needle: string;
  const caller = { sub: 'owner', role: 'superadmin' as const };

  beforeAll(async () => {
    ({ db, close } = await planTestDatabase());
    await db.driver.exec(`
      INSERT INTO thread (id, owner_id, title) VALUES ('${THREAD}', 'owner', 'large payloads');
      INSERT INTO run (id, thread_id, status, lease_epoch) VALUES (md5('large run')::uuid, '${THREAD}', 'COMPLETED', 1);
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, name, output)
        SELECT md5('large audit ' || k)::uuid, '${THREAD}', md5('large run')::uuid, 'TOOL', 'tool_audit', 'op-' || k, k, 'COMPLETED', 'fetch',
          jsonb_build_object('body', (SELECT string_agg(md5(k || '.' || i), '') FROM generate_series(1, ${AUDIT_BYTES / 32}) i))
        FROM generate_series(1, ${AUDITS}) k;`);
    // The oldest audit says what no other does: below any walk the byte budget allows.
    const [oldest] = await db.driver.query<{ id: string }>(`SELECT id FROM message WHERE thread_id = $1 ORDER BY id LIMIT 1`, [THREAD]);
    needle = oldest!.id;
    await db.driver.query(`UPDATE message SET input = '{"note": "a zebra needle"}' WHERE id = $1`, [needle]);
  }, 120_000);

  afterAll(() => close());

  it('walks at most SEARCH_WALK_BYTES of payloads (and one audit past them), then finds the rest below the walk', async () => {
    expect(SEARCH_WALK_BYTES).toBeLessThan(AUDITS * AUDIT_BYTES);
    expect(AUDITS).toBeLessThan(SEARCH_WALK_BUDGET);
    for (const threadId of [THREAD, null]) {
      let walked = 0;
      const sql = explainingSql(db, (plan) => (walked = walkedRows(plan)));
      const found = await searchAudits(sql, caller, { threadId, text: 'Zebra Needle', first: 50 });
      expect(found.items.map((hit) => hit.id)).toEqual([needle]);
      expect(found.hasMore).toBe(false);
      expect(walked).toBeGreaterThan(0);
      expect(walked).toBeLessThanOrEqual(Math.ceil(SEARCH_WALK_BYTES / AUDIT_BYTES) + 1);
    }
  });

  it('below the walk the search index answers, however small the table looks: no audit is read in sequence', async () => {
    // The planner costs a sequential scan by the table's own pages, not the payloads it would
    // read out of line: on a table of a few hundred rows it read every 1 MB payload to test the
    // text (~10 s of PostgreSQL CPU for 500 of them) instead of probing the index.
    for (const threadId of [THREAD, null]) {
      let scanned: string[] = [];
      const sql = explainingSql(db, (plan) => (scanned = sequentialScans(plan)));
      const found = await searchAudits(sql, caller, { threadId, text: 'Zebra Needle', first: 50 });
      expect(found.items.map((hit) => hit.id)).toEqual([needle]);
      expect(scanned).not.toContain('message');
    }
  });

  it('a text every audit holds still fills its page from the walk, and pages on exactly', async () => {
    const all = await db.driver.query<{ id: string }>(`SELECT id FROM message WHERE thread_id = $1 ORDER BY id DESC`, [THREAD]);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await searchAudits(db.sql, caller, { text: 'fetch', first: 45, after });
      seen.push(...page.items.map((hit) => hit.id));
      if (!page.hasMore) break;
      after = page.items.at(-1)!.id;
    }
    expect(seen).toEqual(all.map((row) => row.id));
  });
});
