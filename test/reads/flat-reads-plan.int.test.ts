import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Db } from '../../src/db/database.js';
import { searchAudits } from '../../src/domain/audit-search.js';
import type { Principal } from '../../src/domain/principal.js';
import { readableThreadsPage } from '../../src/domain/threads.js';
import { toolCallLedger } from '../../src/domain/tool-call-ledger.js';
import { toolCallStats } from '../../src/domain/tool-call-stats.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, type PlanNode } from '../support/plans.js';

// Issue 44, flat at a million: each read the page and the dashboards make walks a composite index
// newest first and stops after its page, so it costs the same however large the history. Counted
// from each plan's own row counts (EXPLAIN ANALYZE of the statement the domain runs), not from
// time, first with the statistics as they stand after the tables grew 20-fold since the last
// ANALYZE (as autovacuum leaves a growing table), then analysed.
//
// 50 owners of 40 threads each (and 400 older threads each without runs; 30 audits a thread: one in four `calc`, one in ten FAILED), and one
// thread of 20,000 audits of another owner: 80,000 audits, as many tool calls. The fillers' audits
// are one in five `filler-tool`, the owner's one per thread: a name of which the owner holds too
// few for a walk to fill a page, so the read asks each of the owner's threads instead.

const OWNER = 'owner';
const BIG_THREAD = '00000000-0000-4000-8000-0000000000b1';
const THREAD_AUDITS = 30;
const BIG_AUDITS = 20_000;
const owner: Principal = { sub: OWNER, role: 'superadmin' };
const bigOwner: Principal = { sub: 'big-owner', role: 'superadmin' };
const admin: Principal = { sub: 'someone', role: 'admin' };
/** The owner as a user: staff read every thread. */
const user: Principal = { sub: OWNER, role: 'user' };


interface Touched {
  /** Rows each table's scans produced or filtered away, over all their loops. */
  tables: Map<string, number>;
  /** The same per index, for the scans that ran. */
  indexes: Map<string, number>;
  /** The most rows a sort took in: a read that keeps its index's order sorts at most its page. */
  sortedRows: number;
}

function touched(node: PlanNode, into: Touched = { tables: new Map(), indexes: new Map(), sortedRows: 0 }): Touched {
  if (node['Node Type'].endsWith('Sort') && node['Actual Loops'] > 0) {
    const input = node.Plans?.[0];
    into.sortedRows = Math.max(into.sortedRows, input ? input['Actual Rows'] * input['Actual Loops'] : 0);
  }
  if (node['Relation Name'] && node['Actual Loops'] > 0) {
    const rows = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'];
    into.tables.set(node['Relation Name'], (into.tables.get(node['Relation Name']) ?? 0) + rows);
    if (node['Index Name']) into.indexes.set(node['Index Name'], (into.indexes.get(node['Index Name']) ?? 0) + rows);
  }
  // A bitmap index scan names its index, not its table (the heap scan above it counts the table).
  if (node['Index Name'] && !node['Relation Name'] && node['Actual Loops'] > 0) {
    into.indexes.set(node['Index Name'], (into.indexes.get(node['Index Name']) ?? 0) + node['Actual Rows'] * node['Actual Loops']);
  }
  for (const child of node.Plans ?? []) touched(child, into);
  return into;
}

/** The message's statement (the last the domain function ran): its answer and what its plan touched. */
async function explained<T>(db: Database, read: (sql: Db) => Promise<T>): Promise<{ result: T; last: Touched }> {
  let last: Touched | undefined;
  const result = await read(explainingSql(db, (plan) => (last = touched(plan))));
  return { result, last: last! };
}

/** Audits `from`..`to` of every run (one per thread), and a tool call for each. */
const seedAudits = (from: number, to: number, bigFrom: number, bigTo: number) => `
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, input)
    SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', 'op-' || i,
      CASE WHEN i % 5 = 1 AND (t.owner_id <> '${OWNER}' OR i = 1) THEN 'filler-tool' WHEN i % 4 = 0 THEN 'calc' ELSE 'tool-' || (i % 7) END,
      i, (CASE WHEN i % 10 = 0 THEN 'FAILED' ELSE 'COMPLETED' END)::"AuditStatus", jsonb_build_object('q', 'question ' || i)
    FROM run r JOIN thread t ON t.id = r.thread_id,
      generate_series(CASE WHEN t.id = '${BIG_THREAD}' THEN ${bigFrom} ELSE ${from} END, CASE WHEN t.id = '${BIG_THREAD}' THEN ${bigTo} ELSE ${to} END) i;
  INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, status)
    SELECT gen_random_uuid(), m.thread_id, m.run_id, d.id, m.sequence::int, m.operation_id, m.name,
      (CASE m.status WHEN 'FAILED' THEN 'FAILED' ELSE 'COMPLETED' END)::"ToolCallStatus"
    FROM message m JOIN message d ON d.run_id = m.run_id AND d.operation_id = 'declaring'
    WHERE m.message_type = 'tool_audit' AND CASE WHEN m.thread_id = '${BIG_THREAD}' THEN m.sequence BETWEEN ${bigFrom} AND ${bigTo} ELSE m.sequence BETWEEN ${from} AND ${to} END;`;

describe(`the reads that must stay flat as history grows (${backendName})`, () => {
  let db: Database;
  let close = async () => {};

  beforeAll(async () => {
    ({ db, close } = await planTestDatabase());
    await db.driver.exec(`
      INSERT INTO thread (id, owner_id, title, created_at)
        SELECT gen_random_uuid(), CASE WHEN o = 0 THEN '${OWNER}' ELSE 'filler-' || o END, 'thread ' || o || '/' || k,
          now() - ((o * 40 + k) * interval '1 minute')
        FROM generate_series(0, 49) o, generate_series(1, 40) k;
      INSERT INTO thread (id, owner_id, title) VALUES ('${BIG_THREAD}', 'big-owner', 'big');
      -- Threads without runs, older than the rest: enough threads that walking an index beats reading them all.
      INSERT INTO thread (id, owner_id, title, created_at)
        SELECT gen_random_uuid(), CASE WHEN o = 0 THEN '${OWNER}' ELSE 'filler-' || o END, 'old ' || o || '/' || k,
          now() - interval '1 day' - ((o * 400 + k) * interval '1 minute')
        FROM generate_series(0, 49) o, generate_series(1, 400) k;
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'COMPLETED', 1 FROM thread WHERE title NOT LIKE 'old %';
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status)
        SELECT gen_random_uuid(), thread_id, id, 'ASSISTANT', 'model_audit', 'declaring', 'model', 0, 'COMPLETED' FROM run;
      ${seedAudits(1, 1, 1, 2000)}
      ANALYZE;
      ${seedAudits(2, THREAD_AUDITS, 2001, BIG_AUDITS)}`);
  }, 600_000);

  afterAll(() => close());

  const reads = () => {
    it('threads(first): an owner\'s and an admin\'s newest threads, on their index, a page of rows', async () => {
      for (const [who, index] of [[user, 'thread_owner_id_created_at_id_idx'], [admin, 'thread_created_at_id_idx']] as const) {
        const { result, last } = await explained(db, (sql) => readableThreadsPage(sql, who, { first: 20 }));
        expect(result.threads).toHaveLength(20);
        expect([...last.indexes.keys()], who.role).toContain(index);
        expect(last.tables.get('thread'), who.role).toBeLessThan(100);
      }
    });

    it('threads(title:): a rare word of a title among 22,000 threads, through the trigram index, not every thread', async () => {
      // Two old threads renamed (one the owner's), after the last ANALYZE as the rest.
      await db.driver.exec(`UPDATE thread SET title = 'Refund for Kettle Co. ' || title WHERE title IN ('old 0/123', 'old 7/123')`);
      // An owner's 440 threads may as well be read on the owner's index; every thread (an admin's) not.
      for (const [who, titles] of [[user, ['Refund for Kettle Co. old 0/123']], [admin, ['Refund for Kettle Co. old 0/123', 'Refund for Kettle Co. old 7/123']]] as const) {
        const { result, last } = await explained(db, (sql) => readableThreadsPage(sql, who, { first: 20, title: 'KETTLE co' }));
        expect(result.threads.map((thread) => thread.title), who.role).toEqual(titles);
        if (who === admin) expect([...last.indexes.keys()], who.role).toContain('thread_title_search_idx');
        expect(last.tables.get('thread'), who.role).toBeLessThan(500);
      }
    });

    it("threads.totalCount: an owner's 440 threads, read on its own; an admin's count stops at 10,001 of 22,001 threads", async () => {
      for (const [who, count] of [[user, 440], [admin, 10_001]] as const) {
        const { result, last } = await explained(db, async (sql) => (await readableThreadsPage(sql, who, { first: 20 })).count());
        expect(result, who.role).toBe(count);
        expect(last.tables.get('thread'), who.role).toBeLessThanOrEqual(count);
      }
    });

    it('searchAudits by name or status across threads: the owner\'s newest matches on (owner_id, name | status, id), a page of rows', async () => {
      for (const [criteria, index] of [[{ name: 'calc' }, 'message_audit_owner_id_name_id_idx'], [{ status: 'FAILED' as const }, 'message_audit_owner_id_status_id_idx']] as const) {
        const { result, last } = await explained(db, (sql) => searchAudits(sql, owner, { ...criteria, first: 50 }));
        expect(result.items, JSON.stringify(criteria)).toHaveLength(50);
        expect([...last.indexes.keys()], JSON.stringify(criteria)).toContain(index);
        // 51 on the index and 51 read back with their threads, of 25,000 `calc` or 10,000 FAILED audits (the owner's: ~1 in 80).
        expect(last.tables.get('message'), JSON.stringify(criteria)).toBeLessThan(150);
        expect(last.sortedRows, JSON.stringify(criteria)).toBeLessThanOrEqual(51);
      }
    });

    it('searchAudits of one kind across threads: tool executions, failed ones too, a page of rows on the same indexes', async () => {
      for (const [criteria, index] of [[{ kind: 'TOOL' as const }, 'message_owner_id_id_idx'], [{ kind: 'TOOL' as const, status: 'FAILED' as const }, 'message_audit_owner_id_status_id_idx']] as const) {
        const { result, last } = await explained(db, (sql) => searchAudits(sql, owner, { ...criteria, first: 50 }));
        expect(result.items, JSON.stringify(criteria)).toHaveLength(50);
        expect(result.items.every((hit) => hit.role === 'TOOL'), JSON.stringify(criteria)).toBe(true);
        expect([...last.indexes.keys()], JSON.stringify(criteria)).toContain(index);
        // The kind is tested on each audit the walk reads: tool executions are nearly all of them here.
        expect(last.tables.get('message'), JSON.stringify(criteria)).toBeLessThan(150);
        expect(last.sortedRows, JSON.stringify(criteria)).toBeLessThanOrEqual(51);
      }
    });

    it('searchAudits by a name the owner rarely holds: its 40 matches on the same index, none of the other owners\' ~12,000', async () => {
      const { result, last } = await explained(db, (sql) => searchAudits(sql, owner, { name: 'filler-tool', first: 50 }));
      const expected = await db.driver.query<{ id: string }>(
        `SELECT m.id FROM message m JOIN thread t ON t.id = m.thread_id WHERE t.owner_id = $1 AND m.name = 'filler-tool' ORDER BY m.id DESC`,
        [OWNER],
      );
      expect(expected).toHaveLength(40);
      expect(result.items.map((hit) => hit.id)).toEqual(expected.map((row) => row.id));
      expect([...last.indexes.keys()]).toContain('message_audit_owner_id_name_id_idx');
      expect(last.tables.get('message')).toBeLessThan(150);
    });

    it('searchAudits by text across threads: the owner\'s audits and threads only, never every thread of every owner', async () => {
      const { result, last } = await explained(db, (sql) => searchAudits(sql, owner, { text: 'calc', first: 50 }));
      expect(result.items).toHaveLength(50);
      // The 51 hits' threads by key, and the owner's threads being deleted (none), of 22,000 threads. Testing each
      // walked audit's thread for a deletion read 223-308 here, and every thread of every owner where planned as a hash.
      expect(last.tables.get('thread') ?? 0).toBeLessThan(100);
    });

    it('searchAudits in the long thread, by status and by a rare text, on the thread\'s own indexes', async () => {
      const failed = await explained(db, (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, status: 'FAILED', first: 50 }));
      expect(failed.result.items).toHaveLength(50);
      // On (thread_id, status, id), or on (status, id) filtered by the thread where the planner knows the
      // thread holds most audits: either way a walk that stops after the page.
      expect(failed.last.tables.get('message')).toBeLessThan(500);
      const rare = await explained(db, (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, text: 'question 19999', first: 50 }));
      expect(rare.result.items).toHaveLength(1);
      expect([...rare.last.indexes.keys()]).toContain('message_audit_thread_id_id_idx');
    });

    it('toolCallLedger by status or name across threads: the owner\'s newest calls on (owner_id, status | name, id), a page of rows', async () => {
      for (const [criteria, index] of [[{ status: 'FAILED' as const }, 'tool_call_owner_id_status_id_idx'], [{ name: 'calc' }, 'tool_call_owner_id_name_id_idx']] as const) {
        const { result, last } = await explained(db, (sql) => toolCallLedger(sql, owner, { ...criteria, first: 50 }));
        expect(result.entries, JSON.stringify(criteria)).toHaveLength(50);
        expect([...last.indexes.keys()], JSON.stringify(criteria)).toContain(index);
        // Some 100 on the index (a FAILED call whose execution reads ABANDONED is not a hit) and 51 read back, of the 80,000 calls.
        expect(last.tables.get('tool_call'), JSON.stringify(criteria)).toBeLessThan(300);
        // Walked in the index's order: a plan that read every match of the owner and sorted them was flat here, not at 1,000,000 (bench/README.md, OW1).
        expect(last.sortedRows, JSON.stringify(criteria)).toBeLessThanOrEqual(51);
      }
      const rare = await explained(db, (sql) => toolCallLedger(sql, owner, { name: 'filler-tool', first: 50 }));
      const expected = await db.driver.query<{ id: string }>(
        `SELECT tc.id FROM tool_call tc JOIN thread t ON t.id = tc.thread_id WHERE t.owner_id = $1 AND tc.name = 'filler-tool' ORDER BY tc.id DESC`,
        [OWNER],
      );
      expect(rare.result.entries.map((entry) => entry.id)).toEqual(expected.map((row) => row.id));
      expect([...rare.last.indexes.keys()]).toContain('tool_call_owner_id_name_id_idx');
      expect(rare.last.tables.get('tool_call')).toBeLessThan(150);
    });

    // An incident window (since, until): when the server recorded each row, the time part of its id, so a range of
    // the same indexes the reads walk newest first. The seeded ids are random (UUIDv4): this window is 1/32 of the id
    // space, deep in the history, with 30/32 of every owner's rows above it, as recorded after it.
    const WINDOW = { since: new Date(0x4000_0000_0000), until: new Date(0x4800_0000_0000) };
    const IN_WINDOW = `id >= '40000000-0000-0000-0000-000000000000' AND id < '48000000-0000-0000-0000-000000000000'`;

    it('searchAudits in a time window deep in the history: the window\'s range of its index, never the audits recorded after it', async () => {
      const reads = [
        [{}, 'message_owner_id_id_idx', 'true'],
        [{ name: 'calc' }, 'message_audit_owner_id_name_id_idx', `name = 'calc'`],
        [{ status: 'FAILED' as const }, 'message_audit_owner_id_status_id_idx', `status = 'FAILED'`],
      ] as const;
      for (const [criteria, index, matches] of reads) {
        const { result, last } = await explained(db, (sql) => searchAudits(sql, owner, { ...criteria, ...WINDOW, first: 50 }));
        const expected = await db.driver.query<{ id: string }>(
          `SELECT id FROM message WHERE owner_id = $1 AND message_type <> 'chat' AND ${IN_WINDOW} AND ${matches} ORDER BY id DESC LIMIT 50`,
          [OWNER],
        );
        expect(expected.length, JSON.stringify(criteria)).toBeGreaterThan(0);
        expect(result.items.map((hit) => hit.id), JSON.stringify(criteria)).toEqual(expected.map((row) => row.id));
        expect([...last.indexes.keys()], JSON.stringify(criteria)).toContain(index);
        // Of the owner's 1,240 audits, ~1,160 recorded after the window: none read.
        expect(last.tables.get('message'), JSON.stringify(criteria)).toBeLessThan(150);
        expect(last.sortedRows, JSON.stringify(criteria)).toBeLessThanOrEqual(51);
      }
      // A text search walks the window too, and stops at its start: fewer than a page of hits, no index probe after.
      const text = await explained(db, (sql) => searchAudits(sql, owner, { text: 'question 2', ...WINDOW, first: 50 }));
      const texts = await db.driver.query<{ id: string }>(
        `SELECT id FROM message WHERE owner_id = $1 AND message_type <> 'chat' AND ${IN_WINDOW} AND input::text LIKE '%question 2%' ORDER BY id DESC`,
        [OWNER],
      );
      expect(text.result.items.map((hit) => hit.id)).toEqual(texts.map((row) => row.id));
      expect(text.last.tables.get('message')).toBeLessThan(150);
      // In the long thread: its 20,000 audits, ~625 in the window, a page of them read.
      const long = await explained(db, (sql) => searchAudits(sql, bigOwner, { threadId: BIG_THREAD, status: 'FAILED', ...WINDOW, first: 50 }));
      const longExpected = await db.driver.query<{ id: string }>(
        `SELECT id FROM message WHERE thread_id = $1 AND message_type <> 'chat' AND ${IN_WINDOW} AND status = 'FAILED' ORDER BY id DESC LIMIT 50`,
        [BIG_THREAD],
      );
      expect(long.result.items.map((hit) => hit.id)).toEqual(longExpected.map((row) => row.id));
      expect(long.last.tables.get('message')).toBeLessThan(500);
    });

    it('toolCallLedger in a time window deep in the history: the window\'s range of (owner_id, status | name, id)', async () => {
      for (const [criteria, index, matches] of [[{ status: 'FAILED' as const }, 'tool_call_owner_id_status_id_idx', `status = 'FAILED'`], [{ name: 'calc' }, 'tool_call_owner_id_name_id_idx', `name = 'calc'`]] as const) {
        const { result, last } = await explained(db, (sql) => toolCallLedger(sql, owner, { ...criteria, ...WINDOW, first: 50 }));
        const expected = await db.driver.query<{ id: string }>(
          `SELECT id FROM tool_call WHERE owner_id = $1 AND ${IN_WINDOW} AND ${matches} ORDER BY id DESC LIMIT 50`,
          [OWNER],
        );
        expect(expected.length, JSON.stringify(criteria)).toBeGreaterThan(0);
        expect(result.entries.map((entry) => entry.id), JSON.stringify(criteria)).toEqual(expected.map((row) => row.id));
        expect([...last.indexes.keys()], JSON.stringify(criteria)).toContain(index);
        expect(last.tables.get('tool_call'), JSON.stringify(criteria)).toBeLessThan(150);
      }
    });

    it('toolCallStats of the long thread: its kept counts on their key, never its 20,000 calls', async () => {
      const { result, last } = await explained(db, (sql) => toolCallStats(sql, BIG_THREAD));
      const counted = await db.driver.query<{ name: string; status: string; count: number }>(
        `SELECT name, status, count(*)::int AS count FROM tool_call WHERE thread_id = $1 GROUP BY name, status ORDER BY name, status`,
        [BIG_THREAD],
      );
      expect(result).toEqual(counted);
      // On its key (an index or bitmap scan): the thread's own rows only, where a scan of the table would read every thread's.
      expect([...last.tables]).toEqual([['tool_call_count', counted.length]]);
    });
  };

  describe('with the statistics of a table 20 times smaller', reads);
  describe('analysed', () => {
    beforeAll(() => db.driver.exec('ANALYZE'), 120_000);
    reads();
  });
});
