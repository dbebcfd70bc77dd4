// npx tsx bench/ledger.ts [--sizes 50000,500000] [--iterations 15]
//
// toolCallLedger (src/domain/tool-call-ledger.ts) on 50 k and 500 k audits (bench/lib/bulk-seed.ts:
// 4 audits and 2 tool calls a run, 1,000 threads of one owner, then as many threads of other
// owners), one call in 1,000 left never run and one in 1,000 running, on PGlite by default or on
// PostgreSQL when DATABASE_URL is an admin URL. Each read's p50 (first = 50, what the page asks)
// against two references measured in the same run:
// - floor: the least work a page needs, the ids of its `first + 1` tool calls read straight
//   through the same index with the same owner check (no execution joined, no cases computed);
// - without: the same ledger read with the ledger's four indexes dropped (in a transaction that
//   is rolled back; only the reads are timed), what it would cost without them.
import { parseArgs } from 'node:util';
import { openDatabase, type Database } from '../src/db/database.js';
import type { Sql } from '../src/db/sql.js';
import { inLiveThreadOf } from '../src/domain/access.js';
import { toolCallLedger, type LedgerQuery } from '../src/domain/tool-call-ledger.js';
import { openPgliteBackend, openPostgresBackend, type Backend } from './lib/backend.js';
import { bulkSeed } from './lib/bulk-seed.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { sizes: { type: 'string' }, iterations: { type: 'string' } } });
const sizes = (flags.sizes ?? '50000,500000').split(',').map(Number);
const iterations = Number(flags.iterations ?? 15);
const OWNER = 'bench-ledger-owner';
const THREADS = 1000;
const principal = { sub: OWNER, role: 'superadmin' as const };
const FIRST = 50;
/** Thrown to roll back the transaction that dropped the indexes. */
class RolledBack extends Error {
  constructor(readonly p50: number) {
    super('rolled back');
  }
}
const LEDGER_INDEXES = ['tool_call_thread_id_id_idx', 'tool_call_owner_id_id_idx', 'tool_call_owner_id_name_id_idx', 'tool_call_owner_id_status_id_idx'];

async function p50(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return summarize(times).p50;
}

/** The floor: the page's ToolCall ids, the owner checked, through the narrowest condition on tool_call alone. */
const floor = (sql: Sql, condition: string, params: unknown[]) =>
  sql.query(
    `SELECT tc.id FROM tool_call tc
     WHERE tc.owner_id = $1 AND ${inLiveThreadOf('tc.thread_id', '$1')}
       ${condition ? `AND ${condition}` : ''} ORDER BY tc.id DESC LIMIT ${FIRST + 1}`,
    [OWNER, ...params],
  );

const openBackend = (): Promise<Backend> => (process.env.DATABASE_URL ? openPostgresBackend(process.env.DATABASE_URL) : openPgliteBackend());

const rows: (string | number | null)[][] = [];
for (const size of sizes) {
  const backend = await openBackend();
  try {
    const perThread = Math.ceil(size / 2 / THREADS);
    await backend.beforeServer(async (sql) => {
      await bulkSeed(sql, { ownerSub: OWNER, threads: THREADS, auditsPerThread: perThread, title: 'bench' });
      await bulkSeed(sql, { ownerSub: 'bench-other-owner', threads: THREADS, auditsPerThread: perThread, title: 'other' });
      // One call in 1,000 never ran (its audit gone), one in 1,000 still runs.
      await sql.query(`DELETE FROM message WHERE tool_call_row_id IN (SELECT id FROM tool_call WHERE ('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 1000 = 1)`);
      await sql.query(`UPDATE tool_call SET status = 'PENDING', effective_input = NULL, output = NULL WHERE ('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 1000 = 1`);
      await sql.query(`UPDATE message SET status = 'RUNNING', finished_at = NULL WHERE tool_call_row_id IN (SELECT id FROM tool_call WHERE ('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 1000 = 2)`);
      await sql.query(`UPDATE tool_call SET status = 'RUNNING' WHERE ('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 1000 = 2`);
      await sql.query('ANALYZE');
    });
    const db: Database = await openDatabase(backend.kind === 'postgres' ? { url: backend.serverEnv.DATABASE_URL } : { dataDir: backend.serverEnv.DATA_DIR });
    try {
      const [thread] = await db.driver.query<{ id: string }>('SELECT id FROM thread WHERE owner_id = $1 ORDER BY id LIMIT 1', [OWNER]);
      const [{ count }] = (await db.driver.query<{ count: number }>('SELECT count(*)::int AS count FROM tool_call')) as [{ count: number }];
      const reads: [string, LedgerQuery, string, unknown[]][] = [
        ['one thread', { threadId: thread!.id }, 'tc.thread_id = $2', [thread!.id]],
        ['all threads', {}, '', []],
        ['one tool, all threads', { name: 'fetch_page' }, 'tc.name = $2', ['fetch_page']],
        ['running, all threads', { case: 'RUNNING' }, `tc.status = 'RUNNING'`, []],
        ['never run, all threads', { case: 'NEVER_RUN' }, `tc.status = 'PENDING'`, []],
        ['failed, all threads (none)', { status: 'FAILED' }, `tc.status = 'FAILED'`, []],
        // No call is in this case: every call the narrowing leaves is tested on its execution.
        ['closed by a run\'s end, all threads (none)', { case: 'CLOSED_BY_RUN_END' }, `tc.status IN ('PENDING', 'FAILED', 'CANCELLED')`, []],
      ];
      for (const [label, query, condition, params] of reads) {
        const ledger = await p50(() => toolCallLedger(db.sql, principal, { ...query, first: FIRST }));
        const bare = await p50(() => floor(db.sql, condition, params));
        // Only the read is timed, in the one transaction that dropped the indexes (rolled back after).
        const without = await db.driver
          .transaction(async (sql) => {
            for (const index of LEDGER_INDEXES) await sql.query(`DROP INDEX ${index}`);
            throw new RolledBack(await p50(() => toolCallLedger(sql, principal, { ...query, first: FIRST })));
          })
          .catch((error: unknown) => {
            if (error instanceof RolledBack) return error.p50;
            throw error;
          });
        rows.push([size, count, label, round(ledger), round(bare), round(ledger / bare), round(without), round(ledger / without)]);
      }
    } finally {
      await db.close();
    }
  } finally {
    await backend.close();
  }
  console.log(table(['audits', 'tool calls', 'read', 'p50 ms', 'floor p50 ms', 'ratio', 'no-index p50 ms', 'ratio'], rows));
}

