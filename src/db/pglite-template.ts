import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

/**
 * A new PGlite database, as PGlite's initdb creates it, kept once per install (README, "Memory").
 * PGlite creates a database with a second instance beside its own, and a copy of that instance's
 * memory to reset it between initdb's steps: ~750 MB for the seconds it runs. A first start that
 * copies this data directory instead runs one instance, as every later start does. The install
 * step makes it (scripts/create-pglite-template.ts), in a process of its own that then exits.
 * A data directory closed cleanly, not a `dumpDataDir` tarball: a server's first run on a database
 * loaded from a dump of a running instance wrote at a third of the rate (bench run BM2).
 */

/** The project's node_modules, where npm installs PGlite: a data directory is in its version's format. */
const nodeModules = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/** node_modules/.cache/agent-audit-server/pglite-<version>: goes with the install it was made by. */
export function pgliteTemplateDir(): string {
  const { version } = JSON.parse(readFileSync(join(nodeModules, '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string };
  return join(nodeModules, '.cache', 'agent-audit-server', `pglite-${version}`);
}

/** Copies the install's new database to `pgData`; false when the install step made none (then PGlite runs initdb). */
export function copyPgliteTemplate(pgData: string, templateDir = pgliteTemplateDir()): boolean {
  if (!existsSync(join(templateDir, 'PG_VERSION'))) return false;
  cpSync(templateDir, pgData, { recursive: true });
  return true;
}

/**
 * Creates `templateDir` unless it exists: PGlite's initdb, closed cleanly. Whole or not at all.
 * `startParams`: the server's (initdb's instance runs with them too, and its memory is the peak).
 */
export async function createPgliteTemplate(startParams: string[], templateDir = pgliteTemplateDir()): Promise<string> {
  if (existsSync(join(templateDir, 'PG_VERSION'))) return templateDir;
  const partial = `${templateDir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(dirname(partial), { recursive: true });
  const pglite = await PGlite.create({ dataDir: partial, startParams });
  await pglite.close();
  renameSync(partial, templateDir);
  return templateDir;
}
