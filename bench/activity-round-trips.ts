// DATABASE_URL=<admin URL> npx tsx bench/activity-round-trips.ts [--owners 100] [--views 1000] [--batch 25] [--rounds 2]
//
// What a small dashboard view costs the server process and PostgreSQL, read one a round trip
// (readOwnerToolActivity, as a feed read alone) and --batch a round trip (readOwnersToolActivity,
// as the feeds due together are read: src/realtime/activity-feeds.ts), through the server's own
// driver, alternating. The views are --owners empty owners' (the fixed part of a view: what 100
// small dashboards a second cost). CPU a view: this process's (process.cpuUsage) and the scratch
// database's backends' (/proc/<pid>/schedstat, so PostgreSQL on this host). PostgreSQL only.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPostgres } from '../src/db/postgres.js';
import { readOwnersToolActivity, readOwnerToolActivity, type OwnerActivityRead } from '../src/domain/tool-activity.js';
import { openPostgresBackend } from './lib/backend.js';
import { round, table } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: {
    owners: { type: 'string', default: '100' },
    views: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '25' },
    rounds: { type: 'string', default: '2' },
  },
});
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error('Set DATABASE_URL to a PostgreSQL admin URL (a fresh database is created and dropped)');
const views = Number(flags.views);
const batch = Number(flags.batch);
const reads: OwnerActivityRead[] = Array.from({ length: Number(flags.owners) }, (_, i) => ({
  ownerId: `round-trips-${randomBytes(3).toString('hex')}-${i}`,
  args: { windowSeconds: 3600, name: null },
}));

const loadAtStart = os.loadavg().map((value) => round(value, 2));
const backend = await openPostgresBackend(adminUrl);
const db = await openPostgres(backend.serverEnv.DATABASE_URL!, 10, 30_000);
const admin = new pg.Client(backend.serverEnv.DATABASE_URL);
await admin.connect();
/** The CPU milliseconds of the database's backends but this one. */
const postgresCpuMs = async () => {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  return rows.reduce((total, { pid }) => total + Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6, 0);
};

let next = 0;
const modes: [string, () => Promise<unknown>, number][] = [
  ['one a round trip', () => readOwnerToolActivity(db.sql, reads[next % reads.length]!.ownerId, reads[next++ % reads.length]!.args), 1],
  [`${batch} a round trip`, () => readOwnersToolActivity(db.sql, Array.from({ length: batch }, () => reads[next++ % reads.length]!)), batch],
];
const results: string[][] = [];
try {
  for (let r = 0; r < Number(flags.rounds); r++) {
    for (const [mode, read, perCall] of modes) {
      for (let i = 0; i < 200 / perCall; i++) await read(); // warm-up: every connection prepared
      const postgresBefore = await postgresCpuMs();
      const before = process.cpuUsage();
      for (let i = 0; i < views / perCall; i++) await read();
      const used = process.cpuUsage(before);
      const postgres = (await postgresCpuMs()) - postgresBefore;
      results.push([`${r + 1}`, mode, `${round((used.user + used.system) / 1000 / views, 3)}`, `${round(postgres / views, 3)}`]);
    }
  }
} finally {
  await admin.end();
  await db.close();
  await backend.close();
}
console.log(`${views} empty views a mode and round, load ${loadAtStart.join(' ')} → ${os.loadavg().map((value) => round(value, 2)).join(' ')}`);
console.log(table(['round', 'reads', 'this process, ms CPU a view', 'PostgreSQL, ms CPU a view'], results));
