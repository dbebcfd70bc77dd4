// Releases the OpenTelemetry export a restored database holds (docs/operations.md, "Backup and
// restore"): run it once the threads deleted since the backup are deleted again
// (examples/operations/redo-deletions.ts). On PostgreSQL while the instances serve (each exporter
// finds the hold gone at its next poll); on the embedded database while its server is stopped
// (its files are one process's).
//
//   DATABASE_URL=<the restored database> npx tsx scripts/release-export.ts
//   DATA_DIR=<data directory> npx tsx scripts/release-export.ts
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_DATA_DIR } from '../src/config.js';
import { DataDirInUse } from '../src/db/data-dir-lock.js';
import { openDatabase } from '../src/db/database.js';
import { releaseExportHold } from '../src/domain/database-identity.js';

const url = process.env.DATABASE_URL || undefined;
const dataDir = process.env.DATA_DIR || DEFAULT_DATA_DIR;
function fail(message: string): never {
  console.error(`cannot release the export: ${message}`);
  process.exit(1);
}

if (!url && !existsSync(join(dataDir, 'pglite', 'PG_VERSION'))) fail(`${dataDir} holds no embedded database`);
const db = await openDatabase({ url, dataDir, poolSize: 1 }).catch((error: Error) =>
  fail(error instanceof DataDirInUse ? `a server runs on ${dataDir} (process ${error.holder}): stop it, release, then start it again` : error.message),
);
try {
  const heldSince = await releaseExportHold(db.sql);
  console.log(heldSince ? `the export was held since ${heldSince.toISOString()} (a start on a restored database): released` : 'the export is not held: nothing to release');
} catch (error) {
  // e.g. a database no server of this version has started on yet (no hold to release).
  console.error(`cannot release the export: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await db.close();
}
