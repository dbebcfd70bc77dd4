// npx tsx bench/search.ts [--sizes 50000,500000] [--iterations 15]
//
// searchAudits (src/domain/audit-search.ts) on 50 k and 500 k audits (bench/lib/bulk-seed.ts: 4
// audits a run, 1,000 threads of one owner), on PGlite by default or on PostgreSQL when
// DATABASE_URL is an admin URL. Each search's p50 with the trigram index, against the same search
// with bitmap scans switched off (what it costs without the index), in the same run. Also the
// write cost: seeding the same audits with the index in place against without it.
import { parseArgs } from 'node:util';
import { openDatabase, type Database } from '../src/db/database.js';
import { searchAudits, type AuditSearch } from '../src/domain/audit-search.js';
import { openPgliteBackend, openPostgresBackend, type Backend } from './lib/backend.js';
import { bulkSeed } from './lib/bulk-seed.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { sizes: { type: 'string' }, iterations: { type: 'string' } } });
const sizes = (flags.sizes ?? '50000,500000').split(',').map(Number);
const iterations = Number(flags.iterations ?? 15);
const OWNER = 'bench-search-owner';
const THREADS = 1000;
const principal = { sub: OWNER, role: 'superadmin' as const };
/** What the page asks for. */
const FIRST = 50;

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

async function p50(db: Database, search: AuditSearch, indexed: boolean): Promise<number> {
  const run = () =>
    indexed
      ? searchAudits(db.sql, principal, { first: FIRST, ...search })
      : db.driver.transaction(async (sql) => {
          await sql.query('SET LOCAL enable_bitmapscan = off');
          return searchAudits(sql, principal, { first: FIRST, ...search });
        });
  for (let i = 0; i < 2; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) times.push(await timeIt(run));
  return summarize(times).p50;
}

async function openBackend(): Promise<Backend> {
  return process.env.DATABASE_URL ? openPostgresBackend(process.env.DATABASE_URL) : openPgliteBackend();
}

const rows: (string | number | null)[][] = [];
for (const size of sizes) {
  const backend = await openBackend();
  try {
    const perThread = Math.ceil(size / THREADS);
    // The write cost: the same audits seeded into a database of their own without the index,
    // then into the searched one with it.
    const scratch = await openBackend();
    const withoutIndex = await scratch
      .beforeServer(async (sql) => {
        await sql.query('DROP INDEX message_audit_search_idx');
        return timeIt(() => bulkSeed(sql, { ownerSub: OWNER, threads: THREADS, auditsPerThread: perThread, title: 'bench' }));
      })
      .finally(() => scratch.close());
    const withIndex = await backend.beforeServer((sql) =>
      timeIt(() => bulkSeed(sql, { ownerSub: OWNER, threads: THREADS, auditsPerThread: perThread, title: 'bench' })),
    );
    rows.push([size, 'seed (write path) ms', round(withIndex, 0), round(withoutIndex, 0), round(withIndex / withoutIndex)]);
    const db = await openDatabase(backend.kind === 'postgres' ? { url: backend.serverEnv.DATABASE_URL } : { dataDir: backend.serverEnv.DATA_DIR });
    try {
      const [thread] = await db.driver.query<{ id: string }>('SELECT id FROM thread WHERE owner_id = $1 ORDER BY id LIMIT 1', [OWNER]);
      const searches: [string, AuditSearch][] = [
        ['rare text, all threads', { text: 'region 1234 ' }],
        ['rare text, one thread', { text: 'region 12', threadId: thread!.id }],
        ['common text, all threads', { text: 'EMEA' }],
        ['name + status, all threads', { name: 'fetch_page', status: 'FAILED' }],
      ];
      if (process.env.EXPLAIN) {
        // The plan of each search with the index: its last statement, explained and run.
        const explaining = {
          query: async <Row>(text: string, params?: unknown[]) => {
            if (!/^(WITH|SELECT m\.)/.test(text)) return db.sql.query<Row>(text, params);
            const plan = await db.sql.query<Record<string, string>>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
            console.log(plan.map((row) => Object.values(row)[0]).join('\n'));
            return [] as Row[];
          },
        };
        for (const [label, search] of searches) {
          console.log(`-- ${label}`);
          await searchAudits(explaining, principal, { first: FIRST, ...search });
        }
      }
      for (const [label, search] of searches) {
        const indexed = await p50(db, search, true);
        const scanned = await p50(db, search, false);
        rows.push([size, label, round(indexed), round(scanned), round(indexed / scanned)]);
      }
    } finally {
      await db.close();
    }
  } finally {
    await backend.close();
  }
  console.log(table(['audits', 'search', 'p50 ms (index)', 'p50 ms (no bitmap scans)', 'ratio'], rows));
}
