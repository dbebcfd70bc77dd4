import type { PGlite } from '@electric-sql/pglite';
import type { Database } from './driver.js';

export type { Database, Db, SqlDriver, SqlTransactor } from './driver.js';

export interface DatabaseOptions {
  /** `postgres://…` for a server; unset for embedded PGlite. */
  url?: string;
  /** PGlite data directory; unset keeps the embedded database in memory (tests). */
  dataDir?: string;
  /**
   * PGlite: an open database to use instead of opening one; `close()` leaves it open for its owner.
   * The suites start theirs from one migrated copy and reuse it across test apps
   * (test/support/pglite-pool.ts).
   */
  embedded?: PGlite;
  poolSize?: number;
  /** PostgreSQL's statement_timeout for requests (default 30 s); migrations run under their own. */
  statementTimeoutMs?: number;
  /** Sees every SQL statement but the transactions', Prisma's and `sql`'s (tests count them to prove that reads are batched). */
  onQuery?: (sql: string) => void;
  /** PostgreSQL: this instance's writes keep each change as committed for a few minutes (the `recent_change` table), for instances without Redis. */
  recentChanges?: boolean;
}

/**
 * Opens the configured database. Each backend's module, and the packages it needs, is loaded
 * only when that backend is used: a server on PGlite never loads `pg`, one on PostgreSQL never
 * loads PGlite.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) {
    const { openPostgres } = await import('./postgres.js');
    return openPostgres(options.url, options.poolSize ?? 10, options.statementTimeoutMs ?? 30_000, options.onQuery, options.recentChanges);
  }
  const { openPglite } = await import('./pglite.js');
  return openPglite(options.dataDir, options.embedded, options.onQuery);
}
