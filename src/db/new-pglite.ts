import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasPgliteTemplate } from './pglite-template.mjs';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = fileURLToPath(new URL('./create-embedded-database.ts', import.meta.url));

/** Whether `dataDir` holds no embedded database yet. */
export const isNewPgliteDataDir = (dataDir: string) => !existsSync(join(dataDir, 'pglite', 'PG_VERSION'));

/** The process runToEnd waits for, while there is one: a stop during the start ends it (endCreation). */
let creating: ChildProcess | undefined;

/** Runs `command` from the project's root to its end; its output is the server's. Ended by endCreation: never settles. */
async function runToEnd(what: string, command: string, args: string[]): Promise<void> {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  creating = child;
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve)).finally(() => (creating = undefined));
  if (child.killed) return new Promise(() => {});
  if (code !== 0) throw new Error(`${what} failed (exit ${code}; its output is above)`);
}

/**
 * Ends the creation under way, if any, and waits until its process is gone: a server stopped
 * while it starts (main.ts) leaves no process writing its DATA_DIR or its output after it exits.
 * A database whose migrations were cut short is migrated by the next start.
 */
export async function endCreation(): Promise<void> {
  const child = creating;
  if (!child) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/**
 * Creates and migrates a new embedded database in `dataDir`, in a process of its own (README,
 * "Memory"): PGlite keeps what a new database's creation and migrations touched (its WebAssembly
 * memory never shrinks, and the allocator keeps the rest), ~85 MB more than a later start holds.
 * Without the install's template (install scripts skipped) the install's template step runs first,
 * in a process of its own too: PGlite's initdb runs a second instance beside its own.
 * `templateDir`: the install's by default; another is copied as it is, or initdb runs without it.
 */
export async function createPgliteInChildProcess(dataDir: string, templateDir?: string): Promise<void> {
  if (templateDir === undefined && !hasPgliteTemplate()) await runToEnd("creating the embedded database's template", 'sh', ['scripts/pglite-template.sh']);
  await runToEnd(`creating the embedded database in ${dataDir}`, process.execPath, ['--import', 'tsx', ENTRY, dataDir, ...(templateDir ? [templateDir] : [])]);
}
