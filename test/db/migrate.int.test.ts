import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { createScratchDatabase, onPostgres } from '../support/database.js';

const migrationNames = readMigrations().map((migration) => migration.name);

describe('migrations at start-up', () => {
  it('apply once on the embedded database, then are a no-op', async () => {
    const db = await openDatabase({});
    try {
      expect(await migrate(db.driver)).toEqual(migrationNames);
      expect(await migrate(db.driver)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('refuse to run when an applied migration was edited', async () => {
    const db = await openDatabase({});
    try {
      await migrate(db.driver);
      const edited = readMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'edited' } : m));
      await expect(migrate(db.driver, edited)).rejects.toThrow(/edited after it was applied/);
    } finally {
      await db.close();
    }
  });

  it.runIf(onPostgres)('serialise several instances starting at once on PostgreSQL: each migration applies exactly once', async () => {
    const scratch = await createScratchDatabase();
    const instances = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ url: scratch.url, poolSize: 2 })));
    try {
      const applied = await Promise.all(instances.map((db) => migrate(db.driver)));
      expect(applied.flat().sort()).toEqual([...migrationNames].sort());
      const history = await instances[0]!.driver.query<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations"`);
      expect(history.map((row) => row.migration_name).sort()).toEqual([...migrationNames].sort());
    } finally {
      await Promise.all(instances.map((db) => db.close()));
      await scratch.drop();
    }
  });
});
