import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createScratchDatabase, postgresAdminUrl } from './support/database.js';
import { dumpMigratedPglite, migratePostgres, writePgliteDataDir } from './support/database-templates.js';
import { bundleServer } from './support/server-bundle.js';

/**
 * Made once per run, before the first test file starts, and removed after the last: the migrated
 * database every test database of this run is copied from (test/support/database-templates.ts),
 * and the bundled server the e2e files start (test/support/server-bundle.ts).
 */
export default async function setup(project: TestProject) {
  const server = await bundleServer();
  project.provide('serverBundle', server.file);
  try {
    const removeTemplate = await provideTemplate(project);
    return async () => {
      await removeTemplate();
      await server.remove();
    };
  } catch (error) {
    await server.remove();
    throw error;
  }
}

async function provideTemplate(project: TestProject): Promise<() => Promise<void>> {
  if (postgresAdminUrl) {
    const template = await createScratchDatabase(postgresAdminUrl);
    try {
      await migratePostgres(template.url);
    } catch (error) {
      await template.drop();
      throw error;
    }
    project.provide('postgresTemplateDatabase', template.name);
    return () => template.drop();
  }
  const dir = mkdtempSync(join(tmpdir(), 'audit-test-pglite-'));
  try {
    const dump = await dumpMigratedPglite();
    const file = join(dir, 'migrated.tar.gz');
    writeFileSync(file, new Uint8Array(await dump.arrayBuffer()));
    await writePgliteDataDir(dump, join(dir, 'data-dir'));
    project.provide('pgliteTemplateFile', file);
    project.provide('pgliteTemplateDataDir', join(dir, 'data-dir'));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return async () => rmSync(dir, { recursive: true, force: true });
}
