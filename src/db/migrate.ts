import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '../log.js';
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

/**
 * The first line that marks a migration online: it runs outside a transaction, statement by
 * statement, so it may `CREATE INDEX CONCURRENTLY` (writes go on while the index builds). Each of
 * its statements must be safe to run again (IF NOT EXISTS, IF EXISTS): a crash half-way retries
 * the whole migration at the next start. Statements are separated by a `;` that ends a line.
 */
export const ONLINE_MARK = '-- migrate: no-transaction';

export const isOnline = (migration: Pick<Migration, 'sql'>) => migration.sql.split('\n', 1)[0]!.trim() === ONLINE_MARK;

/**
 * An online migration's statements: comment lines dropped, split at each `;` that ends a line
 * outside a `$$ … $$` body (a function's or a DO block's statements end lines with `;` too).
 */
export function onlineStatements(sql: string): string[] {
  const statements: string[] = [];
  let statement: string[] = [];
  let inBody = false;
  for (const line of sql.split('\n')) {
    if (!inBody && line.trimStart().startsWith('--')) continue;
    statement.push(line);
    if ((line.split('$$').length - 1) % 2 === 1) inBody = !inBody;
    if (!inBody && /;[ \t]*$/.test(line)) {
      statements.push(statement.join('\n').replace(/;[ \t]*$/, ''));
      statement = [];
    }
  }
  statements.push(statement.join('\n'));
  return statements.map((text) => text.trim()).filter((text) => text !== '');
}

/** The index a `CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] "name"` statement builds. */
const CONCURRENT_INDEX = /^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z0-9_]+)"?/i;

/** How often an instance asks again for the migration lock while another instance migrates. */
const LOCK_POLL_MS = 250;

/**
 * How long a migration's statement waits for a table's lock before it gives way and tries again
 * a second later. A statement waiting for a lock (an ALTER TABLE behind a `pg_dump`'s or a long
 * report's transaction) queues every later request on that table behind it: the old instances
 * would stop for as long as that transaction lasts. Statements `CONCURRENTLY` wait as long as it
 * takes: their waits hold up nobody, and a build given up at its end would start over.
 */
const TABLE_LOCK_WAIT_MS = 2_000;
const TABLE_LOCK_RETRY_MS = 1_000;

/** The progress of a start-up's migrations, as the log says it (docs/operations.md "Upgrades"). */
export type MigrationProgress =
  | { event: 'migration_lock_wait' }
  | { event: 'migrations_unknown'; migrations: string[] }
  | { event: 'migration_started'; migration: string; online: boolean }
  | { event: 'migration_table_busy'; migration: string }
  | { event: 'index_build_started'; migration: string; index: string }
  | { event: 'migration_applied'; migration: string; online: boolean; ms: number };

export interface MigrateOptions {
  /** Each step's line: waiting for another instance, each migration started and applied with its time (default: a JSON line on stdout). */
  log?: (entry: MigrationProgress) => void;
}

const MESSAGES: Record<MigrationProgress['event'], string> = {
  migration_lock_wait: "waiting for another instance's migrations",
  migrations_unknown:
    'the database holds migrations this version does not have (a newer version applied them, and none is undone): this instance serves on them, as an older instance does during a rolling upgrade (docs/operations.md "Upgrades")',
  migration_started: 'migration started',
  migration_table_busy: 'a transaction open on a table the migration changes (a backup, a long report) holds it; giving way to requests and trying again every second',
  index_build_started: 'index build started (online: writes go on)',
  migration_applied: 'migration applied',
};

const WARNINGS = new Set<MigrationProgress['event']>(['migration_table_busy', 'migrations_unknown']);

const logJson: NonNullable<MigrateOptions['log']> = (entry) =>
  WARNINGS.has(entry.event) ? log.warn(entry, MESSAGES[entry.event]) : log.info(entry, MESSAGES[entry.event]);

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
export async function migrate(driver: SqlDriver, migrations = readMigrations(), options: MigrateOptions = {}): Promise<string[]> {
  return driver.withSession(async (session) => {
    // The session's request statement_timeout must cut neither a long migration nor the wait of
    // an instance queueing on the lock while another migrates: both get MIGRATION_TIMEOUT_MS.
    const [own] = await session.query<{ statement_timeout: string; lock_timeout: string }>(
      `SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout`,
    );
    await session.exec(`SET statement_timeout = ${MIGRATION_TIMEOUT_MS}`);
    await session.exec(`SET lock_timeout = ${TABLE_LOCK_WAIT_MS}`);
    try {
      return await migrateLocked(session, migrations, options.log ?? logJson);
    } finally {
      // Back to the connection's own settings (the request timeout, which the connection set
      // itself: RESET would go back to the role's) before it returns to the pool.
      await session.query(`SELECT set_config('statement_timeout', $1, false), set_config('lock_timeout', $2, false)`, [own!.statement_timeout, own!.lock_timeout]);
    }
  }, { statementTimeoutMs: MIGRATION_TIMEOUT_MS });
}

type Session = Omit<SqlDriver, 'withSession' | 'close'>;

/**
 * Takes the migration lock by asking again every LOCK_POLL_MS, never by waiting in
 * `pg_advisory_lock`: a statement waiting there holds a snapshot, and `CREATE INDEX CONCURRENTLY`
 * in the instance that holds the lock waits for every older snapshot to end: a deadlock.
 */
async function lockMigrations(session: Session, log: NonNullable<MigrateOptions['log']>) {
  const deadline = Date.now() + MIGRATION_TIMEOUT_MS;
  for (let attempt = 0; ; attempt++) {
    const [row] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [MIGRATION_LOCK_KEY]);
    if (row!.locked) return;
    if (attempt === 0) log({ event: 'migration_lock_wait' });
    if (Date.now() > deadline) throw new Error(`Another instance held the migration lock for over ${MIGRATION_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/** `apply`, again a second later each time it gave up waiting for a table's lock (55P03), until MIGRATION_TIMEOUT_MS. */
async function givingWay(migration: Migration, log: NonNullable<MigrateOptions['log']>, apply: () => Promise<void>) {
  const deadline = Date.now() + MIGRATION_TIMEOUT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await apply();
    } catch (error) {
      if ((error as { code?: unknown }).code !== '55P03' || Date.now() > deadline) throw error;
      if (attempt === 0) log({ event: 'migration_table_busy', migration: migration.name });
      await new Promise((resolve) => setTimeout(resolve, TABLE_LOCK_RETRY_MS));
    }
  }
}

/** A statement whose waits for locks hold up no request: it waits as long as it takes. */
async function execWaiting(session: Session, statement: string) {
  await session.exec('SET lock_timeout = 0');
  try {
    await session.exec(statement);
  } finally {
    await session.exec(`SET lock_timeout = ${TABLE_LOCK_WAIT_MS}`);
  }
}

/**
 * Runs an online migration statement by statement in autocommit. An index a crashed build left
 * INVALID is dropped first: `IF NOT EXISTS` alone would keep it, unused and maintained forever.
 */
async function applyOnline(session: Session, migration: Migration, log: NonNullable<MigrateOptions['log']>) {
  for (const statement of onlineStatements(migration.sql)) {
    const index = CONCURRENT_INDEX.exec(statement)?.[1];
    if (index !== undefined) {
      log({ event: 'index_build_started', migration: migration.name, index });
      const [invalid] = await session.query(
        `SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid`,
        [index],
      );
      if (invalid) await execWaiting(session, `DROP INDEX CONCURRENTLY IF EXISTS "${index}"`);
    }
    if (/\bCONCURRENTLY\b/i.test(statement)) await execWaiting(session, statement);
    else await givingWay(migration, log, () => session.exec(statement));
  }
}

async function applyInTransaction(session: Session, sql: string, record: () => Promise<unknown>) {
  await session.exec('BEGIN');
  try {
    await session.exec(sql);
    await record();
    await session.exec('COMMIT');
  } catch (error) {
    await session.exec('ROLLBACK');
    throw error;
  }
}

async function migrateLocked(session: Session, migrations: Migration[], log: NonNullable<MigrateOptions['log']>): Promise<string[]> {
  await lockMigrations(session, log);
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
    // A rollback (or an old instance restarting during a rolling upgrade): said, not refused.
    const known = new Set(migrations.map((migration) => migration.name));
    const unknown = applied.map((row) => row.migration_name).filter((name) => !known.has(name)).sort();
    if (unknown.length > 0) log({ event: 'migrations_unknown', migrations: unknown });
    const newlyApplied: string[] = [];
    for (const migration of migrations) {
      const checksum = appliedByName.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was edited after it was applied`);
        }
        continue;
      }
      const started = performance.now();
      const record = () =>
        session.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), migration.checksum, migration.name],
        );
      const online = isOnline(migration);
      log({ event: 'migration_started', migration: migration.name, online });
      if (online) {
        await applyOnline(session, migration, log);
        await record();
      } else {
        await givingWay(migration, log, () => applyInTransaction(session, migration.sql, record));
      }
      log({ event: 'migration_applied', migration: migration.name, online, ms: Math.round(performance.now() - started) });
      newlyApplied.push(migration.name);
    }
    return newlyApplied;
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}
