import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SqlDriver } from './database.js';

export const MIGRATIONS_DIR = new URL('../../prisma/migrations/', import.meta.url).pathname;

/**
 * How long one migration statement, or the wait for another instance's migrations, may take:
 * far above the 30 s request statement_timeout, still bounded so a stuck start-up fails visibly.
 */
export const MIGRATION_TIMEOUT_MS = 15 * 60_000;

/** Any fixed 64-bit key: instances starting at once queue on it instead of racing. */
export const MIGRATION_LOCK_KEY = 7_316_244_195_012;

interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Applies pending migrations once each, recorded in Prisma's own `_prisma_migrations` table so
 * that `prisma migrate deploy` (where its engines are available) sees the same history.
 * Serialised by a session advisory lock, so several instances may start at once.
 */
export async function migrate(driver: SqlDriver, migrations = readMigrations()): Promise<string[]> {
  return driver.withSession(async (session) => {
    // The session's request statement_timeout must cut neither a long migration nor the wait of
    // an instance queueing on the lock while another migrates: both get MIGRATION_TIMEOUT_MS.
    await session.exec(`SET statement_timeout = ${MIGRATION_TIMEOUT_MS}`);
    try {
      return await migrateLocked(session, migrations);
    } finally {
      // Back to the connection's own default (the request timeout) before it returns to the pool.
      await session.exec('RESET statement_timeout');
    }
  });
}

async function migrateLocked(session: Omit<SqlDriver, 'withSession' | 'close'>, migrations: Migration[]): Promise<string[]> {
  await session.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await session.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const applied = await session.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const appliedByName = new Map(applied.map((row) => [row.migration_name, row.checksum]));
    const newlyApplied: string[] = [];
    for (const migration of migrations) {
      const checksum = appliedByName.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was edited after it was applied`);
        }
        continue;
      }
      await session.exec('BEGIN');
      try {
        await session.exec(migration.sql);
        await session.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), migration.checksum, migration.name],
        );
        await session.exec('COMMIT');
      } catch (error) {
        await session.exec('ROLLBACK');
        throw error;
      }
      newlyApplied.push(migration.name);
    }
    return newlyApplied;
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}
