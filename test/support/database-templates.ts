import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { openDatabase, type SqlDriver } from '../../src/db/database.js';
import { pgliteOptions } from '../../src/db/pglite.js';
import { migrate } from '../../src/db/migrate.js';

/**
 * Every test database starts migrated from one copy: creating a PGlite database runs initdb,
 * which costs several times the start of one from a copy, and the migrations cost more than
 * PostgreSQL's copy of a template database. test/global-setup.ts migrates the copy once per run,
 * by the project's own `migrate`, as buildApp runs it; each test still gets a database of its
 * own, and buildApp's `migrate` then finds every migration applied, checksums included.
 * test/db/migrate.int.test.ts migrates empty databases.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** A `dumpDataDir` tarball of a migrated PGlite database. */
    pgliteTemplateFile?: string;
    /** The same database as a PGlite data directory, for server processes (a DATA_DIR's `pglite`). */
    pgliteTemplateDataDir?: string;
    /** A migrated database on TEST_DATABASE_URL's server, to copy with CREATE DATABASE … TEMPLATE. */
    postgresTemplateDatabase?: string;
    /** The server's sources bundled for the e2e files' server processes (test/support/server-bundle.ts). */
    serverBundle?: string;
  }
}

let pgliteTemplate: Promise<Blob> | undefined;
/** The migrated PGlite database of this run (built here when the run has none, e.g. another config). */
export function migratedPgliteTemplate(): Promise<Blob> {
  const file = inject('pgliteTemplateFile');
  return (pgliteTemplate ??= file ? Promise.resolve(new Blob([readFileSync(file)])) : dumpMigratedPglite());
}

/** The migrated template database of this run on PostgreSQL, if there is one. */
export const postgresTemplateDatabase = () => inject('postgresTemplateDatabase');

/** The migrated PGlite data directory of this run, if there is one. */
export const pgliteTemplateDataDir = () => inject('pgliteTemplateDataDir');

export async function dumpMigratedPglite(): Promise<Blob> {
  const pglite = new PGlite(pgliteOptions);
  try {
    const session = {
      exec: async (sql: string) => void (await pglite.exec(sql)),
      query: async <Row>(sql: string, params?: unknown[]) => (await pglite.query<Row>(sql, params)).rows,
    };
    const driver: SqlDriver = { ...session, withSession: (fn) => fn(session), close: () => pglite.close() };
    await migrate(driver, undefined, { log: () => {} });
    // Kept in the copy, so every database and server process started from it has them (the
    // server's own defaults are unchanged): PostgreSQL's 128 MB of shared buffers are zeroed at
    // every start, a third of a start's work in WASM, and the suites' small databases fit in far
    // less; and no full pages or zero-filled segments in the WAL, which PGlite keeps in memory or
    // writes without fsync anyway, so they would guard against nothing here.
    await pglite.exec(`ALTER SYSTEM SET shared_buffers = '16MB'`);
    await pglite.exec(`ALTER SYSTEM SET full_page_writes = off`);
    await pglite.exec(`ALTER SYSTEM SET wal_init_zero = off`);
    return await pglite.dumpDataDir('gzip');
  } finally {
    await pglite.close();
  }
}

/** Writes `dump` out as a PGlite data directory in `dataDir` (which must not hold one). */
export async function writePgliteDataDir(dump: Blob, dataDir: string): Promise<void> {
  const pglite = new PGlite({ ...pgliteOptions, dataDir, loadDataDir: dump });
  await pglite.waitReady;
  await pglite.close();
}

/** Migrates `url`'s database and closes every connection to it, so that it can serve as a template. */
export async function migratePostgres(url: string): Promise<void> {
  const db = await openDatabase({ url, poolSize: 1 });
  try {
    await migrate(db.driver, undefined, { log: () => {} });
  } finally {
    await db.close();
  }
}
