// Backs up the embedded database (docs/operations.md, "Backup and restore"): copies DATA_DIR's
// database and generated secret into a new directory, while no server runs on DATA_DIR.
//
//   DATA_DIR=<data directory> npx tsx scripts/backup-data-dir.ts <backup directory>
//
// A running server writes PGlite's files at any moment, so a copy taken then is files of different
// moments; this holds DATA_DIR's mark (server.pid) for the copy, so it refuses while a server runs
// there and no server starts there meanwhile. The backup is marked as a copy: a server started on
// it (restored: `cp -R <backup directory> <new data directory>`, then DATA_DIR=<new data directory>)
// chooses a new database id, so the change cursors handed out after the backup are refused and
// the leases the backup holds are fenced (src/domain/database-identity.ts).
import { cpSync, existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { lockDataDir } from '../src/db/data-dir-lock.js';
import { pgliteOptions, serverStartParams } from '../src/db/pglite-settings.js';

const dataDir = process.env.DATA_DIR || '.data';
const backupDir = process.argv[2];
if (!backupDir || dataDir === ':memory:') {
  console.error('usage: DATA_DIR=<data directory> npx tsx scripts/backup-data-dir.ts <backup directory>');
  process.exit(2);
}

function fail(message: string): never {
  console.error(`cannot back up ${dataDir}: ${message}`);
  process.exit(1);
}

if (existsSync(backupDir)) fail(`${backupDir} exists already: name a new directory`);
if (!existsSync(join(dataDir, 'pglite', 'PG_VERSION'))) fail('it holds no embedded database');
let release: () => void;
try {
  release = lockDataDir(dataDir);
} catch (error) {
  fail((error as Error).message);
}
const partial = `${backupDir}.partial`;
try {
  rmSync(partial, { recursive: true, force: true });
  cpSync(join(dataDir, 'pglite'), join(partial, 'pglite'), { recursive: true });
  if (existsSync(join(dataDir, 'jwt-secret'))) cpSync(join(dataDir, 'jwt-secret'), join(partial, 'jwt-secret'));
  const copy = new PGlite({ ...pgliteOptions, startParams: serverStartParams, dataDir: join(partial, 'pglite') });
  await copy.query('UPDATE database_identity SET database_oid = 0');
  await copy.close();
  renameSync(partial, backupDir);
} finally {
  release();
}
console.log(`backed up ${dataDir} to ${backupDir}`);
