// DATABASE_URL=<a database of yours> npx tsx bench/search-large-payloads.ts [--audits 600] [--kb 1024] [--others 200000] [--iterations 5]
//
// A text search across threads that no audit holds, when the newest audits carry large payloads
// (an owner whose tools return 1 MB each): searchAudits walks the newest audits before it asks the
// index, and each audit it walks is read whole. Prints the wall time and the PostgreSQL backends'
// CPU (user + system, from /proc: the server must run on this machine) per search, and how many
// audits and payload bytes lie in the newest SEARCH_WALK_BUDGET. Seeds the database once (kept
// between runs), by SQL: one owner, one thread, `--audits` tool audits whose
// output is `--kb` kB of hex digits (barely compressible); beside them `--others` small audits of
// 50 other owners (`--others 0`: a database holding little besides the large audits, where the
// planner would read them in sequence, payloads and all, were sequential scans not off).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { searchAudits } from '../src/domain/audit-search.js';
import { newId } from '../src/domain/ids.js';

const { values: flags } = parseArgs({ options: { audits: { type: 'string' }, kb: { type: 'string' }, others: { type: 'string' }, iterations: { type: 'string' } } });
const others = Number(flags.others ?? 200_000);
const audits = Number(flags.audits ?? 600);
const kb = Number(flags.kb ?? 1024);
const iterations = Number(flags.iterations ?? 5);
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL must name a PostgreSQL database of yours (it is seeded and kept)');

const OWNER = 'bench-large-payloads';
const db = await openDatabase({ url, poolSize: 1, statementTimeoutMs: 600_000 });
try {
  await migrate(db.driver);
  const [{ n }] = (await db.driver.query<{ n: number }>(`SELECT count(*)::int AS n FROM message WHERE owner_id = $1`, [OWNER])) as [{ n: number }];
  if (n !== audits) {
    console.log(`seeding ${audits} audits of ${kb} kB…`);
    await db.driver.exec(`
      DELETE FROM thread WHERE owner_id = '${OWNER}';
      INSERT INTO thread (id, owner_id, title) VALUES (md5('${OWNER}')::uuid, '${OWNER}', 'large payloads');
      INSERT INTO run (id, thread_id, status, lease_epoch) VALUES (md5('${OWNER} run')::uuid, md5('${OWNER}')::uuid, 'COMPLETED', 1);`);
    for (let k = 1; k <= audits; k++) {
      await db.driver.query(
        `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, name, output)
         SELECT $3::uuid, md5('${OWNER}')::uuid, md5('${OWNER} run')::uuid, 'TOOL', 'tool_audit', 'op-' || $1, $1::int, 'COMPLETED', 'fetch',
           jsonb_build_object('body', (SELECT string_agg(md5($1::text || '.' || i), '') FROM generate_series(1, $2::int * 1024 / 32) i))`,
        [k, kb, newId()],
      );
    }
    await db.driver.exec('ANALYZE');
  }
  const [{ o }] = (await db.driver.query<{ o: number }>(`SELECT count(*)::int AS o FROM message WHERE owner_id LIKE 'other-%'`)) as [{ o: number }];
  if (o !== others) {
    console.log(`seeding ${others} small audits of other owners…`);
    await db.driver.exec(`
      DELETE FROM thread WHERE owner_id LIKE 'other-%';
      INSERT INTO thread (id, owner_id, title) SELECT md5('other' || t)::uuid, 'other-' || t % 50, 'other ' || t FROM generate_series(1, 500) t;
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT md5('other run' || t)::uuid, md5('other' || t)::uuid, 'COMPLETED', 1 FROM generate_series(1, 500) t;
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, sequence, status, name, input, output)
        SELECT gen_random_uuid(), md5('other' || t)::uuid, md5('other run' || t)::uuid, 'TOOL', 'tool_audit', 'op-' || k, k, 'COMPLETED', 'calc',
          jsonb_build_object('expr', k || ' + ' || t), jsonb_build_object('result', k + t, 'note', 'question ' || k || '-' || t)
        FROM generate_series(1, 500) t, generate_series(1, ${others / 500}) k;
      ANALYZE;`);
  }
  const [stats] = (await db.driver.query<{ walked: number; bytes: string }>(
    `SELECT count(*)::int AS walked, sum(coalesce(input_bytes, 0) + coalesce(output_bytes, 0) + coalesce(error_bytes, 0))::text AS bytes
     FROM (SELECT * FROM message WHERE owner_id = $1 ORDER BY id DESC LIMIT 500) m`,
    [OWNER],
  )) as [{ walked: number; bytes: string }];
  console.log(`newest ${stats.walked} audits: ${(Number(stats.bytes) / 1048576).toFixed(0)} MiB of payloads`);

  const cpuMs = async () => {
    const pids = await db.driver.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
    let ticks = 0;
    for (const { pid } of pids) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        ticks += Number(fields[11]) + Number(fields[12]);
      } catch {
        // A backend that ended meanwhile.
      }
    }
    return ticks * 10; // USER_HZ = 100
  };
  const principal = { sub: OWNER, role: 'superadmin' as const };
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < iterations + 1; i++) {
    const cpuBefore = await cpuMs();
    const start = performance.now();
    const found = await searchAudits(db.sql, principal, { text: 'zebra needle', first: 50 });
    const wall = performance.now() - start;
    const cpu = (await cpuMs()) - cpuBefore;
    if (found.items.length !== 0) throw new Error('the text was found');
    if (i > 0) {
      walls.push(wall);
      cpus.push(cpu);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`search without hits: wall p50 ${median(walls).toFixed(0)} ms (${walls.map((v) => v.toFixed(0)).join(', ')}), PostgreSQL CPU p50 ${median(cpus)} ms (${cpus.join(', ')})`);
} finally {
  await db.close();
}
