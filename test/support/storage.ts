import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, onPostgres } from './database.js';
import { pgliteTemplateDataDir, postgresTemplateDatabase } from './database-templates.js';

/**
 * A database that outlives one server: a fresh PostgreSQL database when TEST_DATABASE_URL is set,
 * else an embedded PGlite directory. Several servers (processes, or test apps: `env`) may use it
 * one after another, and a restart reads what the previous one wrote.
 */
export interface TestStorage {
  env: Record<string, string>;
  describe: string;
  remove(): Promise<void>;
}

export async function createTestStorage(backend: 'postgres' | 'embedded' = onPostgres ? 'postgres' : 'embedded'): Promise<TestStorage> {
  // Migrated already (test/support/database-templates.ts): the servers' own migrate finds nothing to do.
  if (backend === 'postgres') {
    const scratch = await createScratchDatabase(undefined, postgresTemplateDatabase());
    return { env: { DATABASE_URL: scratch.url, DATA_DIR: '' }, describe: 'PostgreSQL', remove: scratch.drop };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'audit-storage-'));
  const template = pgliteTemplateDataDir();
  if (template) cpSync(template, join(dataDir, 'pglite'), { recursive: true });
  return {
    env: { DATABASE_URL: '', DATA_DIR: dataDir },
    describe: `embedded PGlite in ${dataDir}`,
    remove: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
}
