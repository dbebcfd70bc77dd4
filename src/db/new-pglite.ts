import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = fileURLToPath(new URL('./create-embedded-database.ts', import.meta.url));

/** Whether `dataDir` holds no embedded database yet. */
export const isNewPgliteDataDir = (dataDir: string) => !existsSync(join(dataDir, 'pglite', 'PG_VERSION'));

/**
 * Creates and migrates a new embedded database in `dataDir`, in a process of its own (README,
 * "Memory"): PGlite keeps what a new database's creation and migrations touched (its WebAssembly
 * memory never shrinks, and the allocator keeps the rest), ~85 MB more than a later start holds,
 * and without the install's template (pglite-template.mjs) its initdb runs a second instance.
 * The child's output (the migrations' log) is the server's. `templateDir`: the install's by default.
 */
export async function createPgliteInChildProcess(dataDir: string, templateDir?: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, dataDir, ...(templateDir ? [templateDir] : [])], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  if (code !== 0) throw new Error(`creating the embedded database in ${dataDir} failed (exit ${code}; its output is above)`);
}
