// `node --import tsx src/db/create-embedded-database.ts <dataDir> [template directory]`: creates and
// migrates a new embedded database, in a process of its own that then exits (new-pglite.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { errorFields, log } from '../log.js';
import { migrate } from './migrate.js';
import { pgliteOptions, pgliteSession, serverStartParams } from './pglite-settings.js';
import { copyPgliteTemplate } from './pglite-template.mjs';

const [dataDir, templateDir] = process.argv.slice(2);
try {
  mkdirSync(dataDir!, { recursive: true });
  const pgData = join(dataDir!, 'pglite');
  copyPgliteTemplate(pgData, templateDir);
  const pglite = new PGlite({ ...pgliteOptions, startParams: serverStartParams, dataDir: pgData });
  try {
    const session = pgliteSession(pglite);
    await migrate({ ...session, withSession: (fn) => fn(session), close: () => pglite.close() });
  } finally {
    await pglite.close();
  }
} catch (error) {
  // One line saying why (never a stack), as the server's own start failures (main.ts).
  log.fatal({ error: { ...errorFields(error), stack: undefined } }, `cannot create the embedded database: ${errorFields(error).message}`);
  process.exitCode = 1;
}
