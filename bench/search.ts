// npx tsx bench/search.ts [--parts search,write] [--sizes 50000,500000] [--others 0] [--compare <module>]
//   [--iterations 15] [--workers 1,8] [--rounds 4] [--seconds 24] [--without index,sizes,owner];
//   DATABASE_URL=<admin URL> for PostgreSQL, else PGlite
//
// search: searchAudits (src/domain/audit-search.ts) as the server runs it, on 50 k and 500 k audits
// (bench/lib/bulk-seed.ts: 4 audits a run, 1,000 threads of one owner), one row per kind of search;
// with --others N, N other owners hold as many audits each, of the same texts, for each size
// (a search must not grow with them). --compare: another module's searchAudits measured beside,
// on the same database (e.g. an earlier commit's src/domain/audit-search.ts copied next to it).
// Floor, measured in the same run: reading the search's answer (its first + 1 hits, found
// beforehand) by primary key with their thread titles, the least any search must do. EXPLAIN=1
// prints each search's plan.
// write: the worker's write path with the trigram index against without it, or (--without sizes)
// with the generated payload-size columns against plain ones, or (--without owner) with the owner on
// every audit against on tool audits alone (search-write.ts).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/database.js';
import { observedSql } from '../test/support/plans.js';
import { auditSummaryColumns } from '../src/domain/audit-reads.js';
import { searchAudits, type AuditSearch } from '../src/domain/audit-search.js';
import { openPgliteBackend, openPostgresBackend, type Backend } from './lib/backend.js';
import { bulkSeed } from './lib/bulk-seed.js';
import { round, summarize, table } from './lib/stats.js';
import { measureIndexWriteCost, WITHOUT } from './search-write.js';

const { values: flags } = parseArgs({
  options: {
    parts: { type: 'string' },
    sizes: { type: 'string' },
    iterations: { type: 'string' },
    workers: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    without: { type: 'string' },
    others: { type: 'string' },
    compare: { type: 'string' },
  },
});
const parts = (flags.parts ?? 'search,write').split(',');
const sizes = (flags.sizes ?? '50000,500000').split(',').map(Number);
const iterations = Number(flags.iterations ?? 15);
const othersList = (flags.others ?? '0').split(',').map(Number);
const compared: typeof searchAudits | null = flags.compare
  ? ((await import(new URL(flags.compare, `file://${process.cwd()}/`).href)) as { searchAudits: typeof searchAudits }).searchAudits
  : null;
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

async function p50(run: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) times.push(await timeIt(run));
  return summarize(times).p50;
}

async function openBackend(): Promise<Backend> {
  return process.env.DATABASE_URL ? openPostgresBackend(process.env.DATABASE_URL) : openPgliteBackend();
}

const log = (line: string) => console.log(line);
log(`${new Date().toISOString()} · ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'} · load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

for (const without of parts.includes('write') ? ((flags.without ?? 'index') as string).split(',') as (keyof typeof WITHOUT)[] : []) {
  const what = { index: 'trigram index', sizes: 'generated payload sizes', owner: 'owner on every audit' }[without];
  log(`The write path with the ${what} against without (lifecycle mutations over HTTP)…`);
  const costs = await measureIndexWriteCost(openBackend, {
    without,
    workers: (flags.workers ?? '1,8').split(',').map(Number),
    rounds: Number(flags.rounds ?? 4),
    seconds: Number(flags.seconds ?? 24),
    log,
  });
  log(table(
    ['W', 'events/s with', 'without', 'ratio (median of rounds)', 'rounds', 'event p50 ms with', 'without', 'p50 ratio', 'db CPU ms/event with', 'without', 'CPU ratio'],
    costs.map((c) => [c.workers, c.withIndex, c.withoutIndex, c.throughputRatio, c.roundRatios.join(' '), c.p50With, c.p50Without, c.p50Ratio, c.cpuMsWith, c.cpuMsWithout, c.cpuRatio]),
  ));
  log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}

const rows: (string | number | null)[][] = [];
for (const [size, others] of parts.includes('search') ? sizes.flatMap((size) => othersList.map((others) => [size, others] as const)) : []) {
  const backend = await openBackend();
  try {
    const seedStart = performance.now();
    await backend.beforeServer(async (sql) => {
      for (let other = 0; other < others; other++) {
        await bulkSeed(sql, { ownerSub: `bench-search-other-${other}`, threads: THREADS, auditsPerThread: Math.ceil(size / THREADS), title: 'other' });
      }
      await bulkSeed(sql, { ownerSub: OWNER, threads: THREADS, auditsPerThread: Math.ceil(size / THREADS), title: 'bench' });
    });
    log(`seeded ${size} audits (and ${others} other owners' as many) in ${Math.round((performance.now() - seedStart) / 1000)} s`);
    const db = await openDatabase(backend.kind === 'postgres' ? { url: backend.serverEnv.DATABASE_URL } : { dataDir: backend.serverEnv.DATA_DIR });
    try {
      const [thread] = await db.driver.query<{ id: string }>('SELECT id FROM thread WHERE owner_id = $1 ORDER BY id LIMIT 1', [OWNER]);
      const threadId = thread!.id;
      /** The search, after its first `pages` pages. */
      const deep = async (search: AuditSearch, pages: number) => {
        let after: string | null = null;
        for (let page = 0; page < pages; page++) after = (await searchAudits(db.sql, principal, { ...search, first: FIRST, after })).items.at(-1)?.id ?? after;
        return { ...search, after };
      };
      // The seeded texts: every tool output holds 'EMEA' (half the audits); a tool's input says
      // 'quarterly revenue by region <run>', so 'region 7' is in the inputs of runs 7 and 70–79
      // (about 4% of the audits at 500 k); no audit holds 'region 1234', nor 'APAC (+7.9%)' whose
      // every trigram is in every tool output. Every audit is COMPLETED.
      const searches: [string, AuditSearch][] = [
        ['common text', { text: 'EMEA' }],
        ['common text, page 11 (after the 500th hit)', await deep({ text: 'EMEA' }, 10)],
        ['medium text (~4%)', { text: 'region 7' }],
        ['medium text, page 2', await deep({ text: 'region 7' }, 1)],
        ['rare text (no hit)', { text: 'region 1234' }],
        ['common trigrams, rare whole (no hit)', { text: 'APAC (+7.9%)' }],
        ['common text + name', { text: 'EMEA', name: 'fetch_page' }],
        ['common text + status', { text: 'EMEA', status: 'COMPLETED' }],
        ['common name + absent status', { name: 'fetch_page', status: 'FAILED' }],
        ['name alone', { name: 'search' }],
        ['common text, one thread', { text: 'EMEA', threadId }],
        ['medium text, one thread', { text: 'region 1', threadId }],
        ['rare text, one thread', { text: 'region 1234', threadId }],
      ];
      if (process.env.EXPLAIN) {
        const explaining = observedSql(db, async (sql, text, params) => {
          if (!/^WITH/.test(text)) return;
          const plan = await sql.query<Record<string, string>>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
          log(plan.map((row) => Object.values(row)[0]).join('\n'));
        });
        for (const [label, search] of searches) {
          log(`-- ${label}`);
          await searchAudits(explaining, principal, { first: FIRST, ...search });
        }
      }
      const columns = auditSummaryColumns('m.');
      for (const [label, search] of searches) {
        const answer = await searchAudits(db.sql, principal, { first: FIRST + 1, ...search });
        const ids = answer.items.map((hit) => hit.id);
        const floor = () =>
          db.sql.query(`SELECT ${columns}, t.title FROM message m JOIN thread t ON t.id = m.thread_id WHERE m.id = ANY($1::uuid[]) ORDER BY m.id DESC`, [ids]);
        const searched = await p50(() => searchAudits(db.sql, principal, { first: FIRST, ...search }));
        const floored = await p50(floor);
        const other = compared === null ? null : await p50(() => compared(db.sql, principal, { first: FIRST, ...search }));
        rows.push([size, others, label, ids.length > FIRST ? `${FIRST}+` : ids.length, round(searched), round(floored), round(searched / floored, 1),
          ...(other === null ? [] : [round(other), round(searched / other, 2)])]);
        log(`  ${label}: ${round(searched)} ms (floor ${round(floored)} ms${other === null ? '' : `, compared ${round(other)} ms`})`);
      }
    } finally {
      await db.close();
    }
  } finally {
    await backend.close();
  }
  log(table(['audits', 'other owners ×', 'search (first = 50)', 'hits', 'p50 ms', 'floor p50 ms', 'ratio', ...(compared === null ? [] : ['compared p50 ms', 'ratio to compared'])], rows));
  log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}
