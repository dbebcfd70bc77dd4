import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { SEARCH_WALK_BUDGET, searchAudits } from '../../src/domain/audit-search.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, rowsTouched } from '../support/plans.js';

// A text search across threads by a caller who owns few of the text's matches (issue 44): the
// newest audits hold too few of the caller's to fill the page, so the search goes to the index;
// it must read (recheck, payloads and all) the caller's matches there, not every owner's, however
// many other owners hold the text. Counted from the plan's own row counts, not from time.

const OWN_THREADS = 4;
const OWN_MATCHES_PER_THREAD = 5;
const OWN_OTHERS_PER_THREAD = 250; // the caller's audits without the text: more than the walk reads
const OTHER_THREADS = 200;
const OTHER_MATCHES_PER_THREAD = 50; // 10,000 matches of other owners
const TEXT = '{"note": "a common needle"}';



describe(`a text search across threads when the caller owns few of its matches (${backendName})`, () => {
  let db: Database;
  let close = async () => {};

  beforeAll(async () => {
    ({ db, close } = await planTestDatabase());
    // Ids are random: the caller's matches lie among the others' in time, a few in the newest 500.
    await db.driver.exec(`
      INSERT INTO thread (id, owner_id, title)
        SELECT md5('own' || t)::uuid, 'caller', 'own ' || t FROM generate_series(1, ${OWN_THREADS}) t
        UNION ALL SELECT md5('other' || t)::uuid, 'other-' || t % 20, 'other ' || t FROM generate_series(1, ${OTHER_THREADS}) t;
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread;
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, input)
        SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'op-' || k, k, 'COMPLETED', '${TEXT}'
        FROM run r JOIN thread t ON t.id = r.thread_id,
          generate_series(1, CASE WHEN t.owner_id = 'caller' THEN ${OWN_MATCHES_PER_THREAD} ELSE ${OTHER_MATCHES_PER_THREAD} END) k;
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, input)
        SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'other-op-' || k, 1000 + k, 'COMPLETED', '{"note": "unrelated"}'
        FROM run r JOIN thread t ON t.id = r.thread_id AND t.owner_id = 'caller', generate_series(1, ${OWN_OTHERS_PER_THREAD}) k;`);
    // Inserts go to the GIN index's pending list first; with a hundred pending pages the planner
    // read every audit instead. Autovacuum would merge them: merged here, since it is disabled.
    await db.driver.query(`SELECT gin_clean_pending_list('message_audit_search_owner_idx')`);
    for (const table of ['thread', 'run', 'message']) await db.driver.exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  }, 120_000);

  afterAll(() => close());

  const plans = () => {
    it("reads the caller's matches in the search index, not the other owners'", async () => {
      let touched = new Map<string, number>();
      const sql = explainingSql(db, (plan) => (touched = rowsTouched(plan)));
      const found = await searchAudits(sql, { sub: 'caller', role: 'superadmin' }, { text: 'Common Needle', first: 50 });
      const own = await db.driver.query<{ id: string }>(
        `SELECT m.id FROM message m JOIN thread t ON t.id = m.thread_id WHERE t.owner_id = 'caller' AND m.operation_id LIKE 'op-%' ORDER BY m.id DESC`,
      );
      expect(own).toHaveLength(OWN_THREADS * OWN_MATCHES_PER_THREAD);
      expect(found.items.map((hit) => hit.id)).toEqual(own.map((row) => row.id));
      expect(found.hasMore).toBe(false);
      // The walk's SEARCH_WALK_BUDGET of the caller's audits, one probe each; then the caller's 20
      // matches in the index. The other owners' 10,000 matches are not read (their payloads
      // rechecked), nor the caller's audits below the walk.
      expect(touched.get('message')).toBeLessThan(SEARCH_WALK_BUDGET + 100);
    });
  };

  it("pages through the caller's matches, each once, newest first", async () => {
    const own = await db.driver.query<{ id: string }>(
      `SELECT m.id FROM message m JOIN thread t ON t.id = m.thread_id WHERE t.owner_id = 'caller' AND m.operation_id LIKE 'op-%' ORDER BY m.id DESC`,
    );
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await searchAudits(db.sql, { sub: 'caller', role: 'superadmin' }, { text: 'common needle', first: 7, after });
      seen.push(...page.items.map((hit) => hit.id));
      if (!page.hasMore) break;
      after = page.items.at(-1)!.id;
    }
    expect(seen).toEqual(own.map((row) => row.id));
  });

  describe('never analysed', plans);
  describe('analysed', () => {
    beforeAll(() => db.driver.exec('ANALYZE'), 120_000);
    plans();
  });
});
