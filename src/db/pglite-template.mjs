// A new PGlite database, as PGlite's initdb creates it, kept once per install (README, "Memory").
// PGlite creates a database with a second instance beside its own, and a copy of that instance's
// memory to reset it between initdb's steps. A first start that copies this data directory instead
// runs one instance, as every later start does. The install step makes it
// (scripts/create-pglite-template.mjs), in a process of its own that then exits.
// A data directory closed cleanly, not a `dumpDataDir` tarball: a server's first run on a database
// loaded from a dump of a running instance wrote at a third of the rate (bench run BM2).
// Plain JavaScript (typed by pglite-template.d.mts) so that the install step runs in a bare `node`:
// the tsx loader cost that process 50-95 MB at its peak (bench/README.md, run EM2).
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryFS, PGlite } from '@electric-sql/pglite';

/** The project's node_modules, where npm installs PGlite: a data directory is in its version's format. */
const nodeModules = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/**
 * node_modules/.cache/agent-audit-server/pglite-<version>: goes with the install it was made by.
 * AUDIT_SERVER_TEMPLATE_DIR puts the `pglite-<version>` directories elsewhere (an install whose
 * node_modules is read-only); every process that makes or copies the template reads it.
 */
export function pgliteTemplateDir() {
  const { version } = JSON.parse(readFileSync(join(nodeModules, '@electric-sql', 'pglite', 'package.json'), 'utf8'));
  return join(process.env.AUDIT_SERVER_TEMPLATE_DIR || join(nodeModules, '.cache', 'agent-audit-server'), `pglite-${version}`);
}

/** Whether the install step made its new database in `templateDir`. */
export function hasPgliteTemplate(templateDir = pgliteTemplateDir()) {
  return existsSync(join(templateDir, 'PG_VERSION'));
}

/**
 * Copies the install's new database to `pgData`; false when the install step made none (then
 * PGlite runs initdb). Whole or not at all: a copy cut short (a server stopped while it starts
 * ends the copying process, main.ts) leaves no `pgData` that the next start would open.
 */
export function copyPgliteTemplate(pgData, templateDir = pgliteTemplateDir()) {
  if (!hasPgliteTemplate(templateDir)) return false;
  const partial = `${pgData}.partial`;
  rmSync(partial, { recursive: true, force: true });
  cpSync(templateDir, partial, { recursive: true });
  renameSync(partial, pgData);
  return true;
}

/**
 * PGlite's in-memory file system holding the install's new database from its start, so that a
 * database in memory (DATA_DIR=:memory:) opens it, as one on disk opens its copy, instead of
 * running initdb with a second instance: seconds of a start, and 650-735 MB resident at its peak
 * against about 330 (test/docs/test-suite.e2e.test.ts). Undefined when the install made none.
 */
export function pgliteTemplateInMemory(templateDir = pgliteTemplateDir()) {
  return hasPgliteTemplate(templateDir) ? new ReadOnStart(templateDir) : undefined;
}

class ReadOnStart extends MemoryFS {
  #source;

  constructor(source) {
    super();
    this.#source = source;
  }

  // Called once PGlite's module is up and before it looks for a database in PGDATA.
  async initialSyncFs() {
    await super.initialSyncFs();
    readTree(this.pg.Module.FS, this.#source, PGlite.paths.PGDATA);
  }
}

/** Writes the directory `from` into the Emscripten file system at `to`, with its modes. */
function readTree(FS, from, to) {
  const stat = statSync(from);
  if (stat.isDirectory()) {
    FS.mkdirTree(to);
    for (const name of readdirSync(from)) readTree(FS, join(from, name), `${to}/${name}`);
  } else {
    FS.writeFile(to, readFileSync(from));
  }
  FS.chmod(to, stat.mode & 0o777);
}

/**
 * PGlite's in-memory file system, written to `target` once PGlite has shut down. On it, PGlite's
 * initdb instance writes the new database straight into this instance's files; on a data
 * directory on disk, initdb writes its own files and PGlite then copies them over through a
 * tarball, which held ~120 MB more at the install step's peak (run EM2).
 */
class WrittenOnClose extends MemoryFS {
  #target;

  constructor(target) {
    super();
    this.#target = target;
  }

  async closeFs() {
    writeTree(this.pg.Module.FS, PGlite.paths.PGDATA, this.#target);
    await super.closeFs();
  }
}

/** Writes the Emscripten file system's tree at `from` to the directory `to`, with initdb's modes. */
function writeTree(FS, from, to) {
  const { mode } = FS.stat(from);
  if (FS.isDir(mode)) {
    mkdirSync(to);
    for (const name of FS.readdir(from)) if (name !== '.' && name !== '..') writeTree(FS, `${from}/${name}`, join(to, name));
  } else {
    writeFileSync(to, FS.readFile(from));
  }
  chmodSync(to, mode & 0o777);
}

/**
 * Creates `templateDir` unless it exists: PGlite's initdb, closed cleanly. Whole or not at all.
 * `startParams`: the server's. They live in memory, not in the data directory, but the instance
 * that closes it holds its shared buffers, and its start writes the catalogs' cache files.
 */
export async function createPgliteTemplate(startParams, templateDir = pgliteTemplateDir()) {
  if (hasPgliteTemplate(templateDir)) return templateDir;
  const partial = `${templateDir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(dirname(partial), { recursive: true });
  const pglite = await PGlite.create({ fs: new WrittenOnClose(partial), startParams });
  await pglite.close();
  renameSync(partial, templateDir);
  return templateDir;
}
