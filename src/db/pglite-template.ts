import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

/**
 * A new PGlite database, as PGlite's initdb creates it, kept once per install (README, "Memory").
 * PGlite creates a database with a second instance beside its own, and a copy of that instance's
 * memory to reset it between initdb's steps: ~750 MB for the seconds it runs, and ~80 MB the
 * server never gave back. A first start that loads this copy instead (`loadDataDir`) runs one
 * instance, as every later start does. The install step makes it (scripts/create-pglite-template.ts),
 * in a process of its own that then exits.
 */

/** The project's node_modules, where npm installs PGlite: a data directory is in its version's format. */
const nodeModules = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/** node_modules/.cache/agent-audit-server/pglite-<version>.tar.gz: goes with the install it was made by. */
export function pgliteTemplateFile(): string {
  const { version } = JSON.parse(readFileSync(join(nodeModules, '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string };
  return join(nodeModules, '.cache', 'agent-audit-server', `pglite-${version}.tar.gz`);
}

/** The install's new database, or undefined when the install step did not make one (then PGlite runs initdb). */
export function installedPgliteTemplate(file = pgliteTemplateFile()): Blob | undefined {
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined;
}

/**
 * Creates `file` unless it exists: PGlite's initdb in memory, dumped. Written whole or not at all.
 * `startParams`: the server's (initdb's instance runs with them too, and its memory is the peak).
 */
export async function createPgliteTemplate(startParams: string[], file = pgliteTemplateFile()): Promise<string> {
  if (existsSync(file)) return file;
  const pglite = await PGlite.create({ startParams });
  let dump: Blob;
  try {
    // Written out to the data files, so a database loaded from it has no WAL to replay.
    await pglite.exec('CHECKPOINT');
    dump = await pglite.dumpDataDir('gzip');
  } finally {
    await pglite.close();
  }
  mkdirSync(dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, file);
  return file;
}
