// DATABASE_URL=<admin URL> npx tsx bench/thread-count.ts [--reads 200] [--rounds 5]
//   DATABASE_URL for PostgreSQL (a scratch database, dropped afterwards), else in-memory PGlite
//
// What `threads { totalCount }` adds to the thread list's read (docs/debug-ui.md): one owner of
// 3,000 threads, one of 30,000, and another owner of 300,000 in the same table; each round reads a
// page of 20 (`threads(first: 20)`) and counts (`totalCount`) for each of them and for an admin
// (every thread), in turns. The count stops at 10,001 (MAX_THREADS_COUNTED + 1), so the 30,000
// owner's and the admin's cost what 10,001 threads cost, not what the table holds.
// Ratios: count / page, per round, in the same run.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { migrate } from '../src/db/migrate.js';
import type { Principal } from '../src/domain/principal.js';
import { readableThreadsPage } from '../src/domain/threads.js';
import { openScratchDatabase } from './lib/scratch.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { reads: { type: 'string' }, rounds: { type: 'string' } } });
const reads = Number(flags.reads ?? 200);
const rounds = Number(flags.rounds ?? 5);
const OWNERS = [
  ['small', 3_000],
  ['large', 30_000],
  ['fleet', 300_000],
] as const;

const { db, drop } = await openScratchDatabase('thread_count');
console.log(`${new Date().toISOString()} · ${db.kind} · load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
try {
  await migrate(db.driver, undefined, { log: () => {} });
  for (const [owner, count] of OWNERS) {
    await db.driver.query(
      `INSERT INTO thread (id, owner_id, title, created_at)
       SELECT gen_random_uuid(), $1, $1 || ' ' || k, now() - k * interval '1 second' FROM generate_series(1, $2::int) k`,
      [owner, count],
    );
  }
  await db.driver.query('ANALYZE thread');
  const readers: [string, Principal][] = [
    ['user of 3,000', { sub: 'small', role: 'user' }],
    ['user of 30,000', { sub: 'large', role: 'user' }],
    ['admin (333,000)', { sub: 'someone', role: 'admin' }],
  ];
  /** Milliseconds per read of `read`, over `reads` reads. */
  async function timed(read: () => Promise<unknown>): Promise<number> {
    const started = performance.now();
    for (let i = 0; i < reads; i++) await read();
    return (performance.now() - started) / reads;
  }
  const rows: (string | number | null)[][] = [];
  const ratios = new Map<string, number[]>(readers.map(([name]) => [name, []]));
  const countsMs = new Map<string, number[]>(readers.map(([name]) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, principal] of readers) {
      const page = await readableThreadsPage(db.sql, principal, { first: 20 });
      const counted = await page.count();
      const pageMs = await timed(() => readableThreadsPage(db.sql, principal, { first: 20 }));
      const countMs = await timed(() => page.count());
      ratios.get(name)!.push(countMs / pageMs);
      countsMs.get(name)!.push(countMs);
      rows.push([r + 1, name, counted, round(pageMs, 3), round(countMs, 3), round(countMs / pageMs)]);
    }
  }
  console.log(`${reads} reads each: ms per read of a page of 20 and of its totalCount`);
  console.log(table(['round', 'reader', 'totalCount', 'page ms', 'count ms', 'count / page'], rows));
  for (const [name, values] of ratios) console.log(`${name}: median count / page ${round(summarize(values).p50)}`);
  const median = (name: string) => summarize(countsMs.get(name)!).p50;
  for (const [name] of readers.slice(1)) console.log(`count of ${name} / count of ${readers[0]![0]}: ${round(median(name) / median(readers[0]![0]))}`);
} finally {
  await db.close();
  await drop();
}
