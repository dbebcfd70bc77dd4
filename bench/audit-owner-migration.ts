// DATABASE_URL=<admin URL> npx tsx bench/audit-owner-migration.ts [--audits 100000]
//
// The upgrade across 20261204000000_audit_owner and the two after it on PostgreSQL, at a given
// history (bench/lib/bulk-seed.ts, 1,000 threads of one owner): the database is migrated to the
// migration before, seeded, its model audits' owner cleared (as that version left them), vacuumed
// and analysed, then migrated on; each migration's time as its `migration applied` line gives it.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { migrate, readMigrations, type MigrationProgress } from '../src/db/migrate.js';
import { bulkSeed } from './lib/bulk-seed.js';
import { openScratchDatabase } from './lib/scratch.js';
import { sqlOverDriver } from './lib/sql.js';

const { values: flags } = parseArgs({ options: { audits: { type: 'string' } } });
const audits = Number(flags.audits ?? 100_000);
if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL (an admin URL of PostgreSQL) is required');

console.log(`${new Date().toISOString()} · load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const { db, drop } = await openScratchDatabase('audit_owner_bench', { statementTimeoutMs: 3_600_000 });
const sql = sqlOverDriver(db.driver);
try {
  const migrations = readMigrations();
  const upgrade = migrations.findIndex((migration) => migration.name === '20261204000000_audit_owner');
  await migrate(sql.driver, migrations.slice(0, upgrade), { log: () => {} });
  await bulkSeed(sql, { ownerSub: 'bench-owner', threads: 1000, auditsPerThread: Math.ceil(audits / 1000), title: 'upgrade' });
  await sql.query(`UPDATE message SET owner_id = NULL WHERE message_type = 'model_audit'`);
  await sql.query('VACUUM ANALYZE message');
  const [count] = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM message`);
  const applied: MigrationProgress[] = [];
  await migrate(sql.driver, migrations, { log: (entry) => applied.push(entry) });
  console.log(`${count!.n} audits`);
  for (const entry of applied) if (entry.event === 'migration_applied') console.log(`${entry.migration}: ${(entry.ms / 1000).toFixed(1)} s`);
  console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  await db.close();
  await drop();
}
