// A new embedded database (src/db/new-pglite.ts): created in a process of its own, from the
// install's template when there is one (src/db/pglite-template.mjs), else by PGlite's initdb, then
// migrated; the server then opens it as any later start does.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/db/migrate.js';
import { createPgliteInChildProcess, isNewPgliteDataDir } from '../../src/db/new-pglite.js';
import { openPglite } from '../../src/db/pglite.js';
import { serverStartParams } from '../../src/db/pglite-settings.js';
import { createPgliteTemplate } from '../../src/db/pglite-template.mjs';
import { onPostgres } from '../support/database.js';
import { killServers, startServer, tokenFor } from '../e2e/support/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'audit-new-pglite-'));
afterAll(async () => {
  await killServers();
  rmSync(scratch, { recursive: true, force: true });
});

/** What a user's data and queries depend on: the database's encoding and collation, and the migrations applied. */
async function describeDatabase(dataDir: string) {
  const db = await openPglite(dataDir);
  try {
    const [settings] = await db.driver.query<Record<string, unknown>>(
      `SELECT pg_encoding_to_char(encoding) AS encoding, datcollate, datctype, datlocprovider
       FROM pg_database WHERE datname = current_database()`,
    );
    const migrations = await db.driver.query<{ migration_name: string }>('SELECT migration_name FROM _prisma_migrations ORDER BY migration_name');
    return { settings, migrations: migrations.map((row) => row.migration_name) };
  } finally {
    await db.close();
  }
}

/** Every file and directory under `dir`, with each file's size. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .sort()
    .map((name) => {
      const stat = statSync(join(dir, name));
      return stat.isDirectory() ? `${name}/` : `${name} ${stat.size}`;
    });
}

describe.skipIf(onPostgres)('a new embedded database', () => {
  it("from the install's template holds the files PGlite writes for a new data directory on disk, with the same settings", { timeout: 120_000 }, async () => {
    const template = await createPgliteTemplate(serverStartParams, join(scratch, 'template-files'));
    const onDisk = join(scratch, 'pglite-on-disk');
    await (await PGlite.create({ dataDir: onDisk, startParams: serverStartParams })).close();

    expect(listing(template)).toEqual(listing(onDisk));
    for (const file of ['PG_VERSION', 'postgresql.conf', 'postgresql.auto.conf', 'pg_hba.conf', 'pg_ident.conf']) {
      expect(readFileSync(join(template, file), 'utf8'), file).toBe(readFileSync(join(onDisk, file), 'utf8'));
    }
  });

  it("from the install's template is the database PGlite's initdb creates, migrated, and kept across starts", { timeout: 180_000 }, async () => {
    const template = await createPgliteTemplate(serverStartParams, join(scratch, 'template'));
    const fromTemplate = join(scratch, 'from-template');
    const byInitdb = join(scratch, 'by-initdb');
    await createPgliteInChildProcess(fromTemplate, template);
    await createPgliteInChildProcess(byInitdb, join(scratch, 'no-template-installed'));
    expect(isNewPgliteDataDir(fromTemplate)).toBe(false);

    const expected = await describeDatabase(byInitdb);
    expect(expected.settings).toEqual({ encoding: 'UTF8', datcollate: 'C', datctype: 'C.UTF-8', datlocprovider: 'c' });
    expect(expected.migrations).toEqual(readMigrations().map((migration) => migration.name));
    expect(await describeDatabase(fromTemplate)).toEqual(expected);

    // A later start opens what the first one wrote, not a new copy of the template.
    const first = await openPglite(fromTemplate);
    await first.driver.exec(`INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), 'owner', 'kept')`);
    await first.close();
    const later = await openPglite(fromTemplate);
    try {
      expect(await later.driver.query('SELECT title FROM thread')).toEqual([{ title: 'kept' }]);
    } finally {
      await later.close();
    }
  });

  it("is made by a server started without the install's template: the template first (in AUDIT_SERVER_TEMPLATE_DIR), then the database; the server answers", { timeout: 300_000 }, async () => {
    const templates = join(scratch, 'templates');
    const storage = { env: { DATABASE_URL: '', DATA_DIR: join(scratch, 'started-without-template') }, describe: 'PGlite', remove: async () => {} };
    // PGlite's initdb, then the migrations, before the server is ready.
    const server = await startServer(storage, { AUDIT_SERVER_TEMPLATE_DIR: templates }, { readyWithinMs: 240_000 });
    try {
      expect(server.output()).toMatch(/embedded database template: /);
      const [made] = readdirSync(templates);
      expect(made).toMatch(/^pglite-/);
      expect(existsSync(join(templates, made!, 'PG_VERSION'))).toBe(true);

      const answer = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenFor('no-template-owner', 'superadmin')}` },
        body: JSON.stringify({ query: 'mutation { createThread(input: { title: "first" }) { id title } }' }),
      }).then((response) => response.json());
      expect(answer).toMatchObject({ data: { createThread: { title: 'first' } } });
    } finally {
      await server.stop();
    }
  });

  it('that cannot be created stops the start with the reason', { timeout: 60_000 }, async () => {
    const notADatabase = join(scratch, 'not-a-database');
    mkdirSync(notADatabase);
    writeFileSync(join(notADatabase, 'PG_VERSION'), 'not a database\n');
    await expect(createPgliteInChildProcess(join(scratch, 'bad-template'), notADatabase)).rejects.toThrow(
      /^creating the embedded database in .*bad-template failed \(exit 1; its output is above\)$/,
    );
  });
});
