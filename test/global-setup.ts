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
  // The bundle is built while the template migrates (esbuild works in a process of its own).
  const [server, template] = await Promise.allSettled([bundleServer(), provideTemplate(project)]);
  const removeAll = async () => {
    if (template.status === 'fulfilled') await template.value();
    if (server.status === 'fulfilled') await server.value.remove();
  };
  const failed = [server, template].find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed || server.status === 'rejected') {
    await removeAll();
    throw failed?.reason;
  }
  project.provide('serverBundle', server.value.file);
  return removeAll;
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
