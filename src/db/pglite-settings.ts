import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

/**
 * PGlite as the server opens it: pg_trgm and btree_gin for the audit search index, the thread
 * beside the searched text's trigrams (migrations 20261201200000_audit_search, 20261203120000_btree_gin).
 */
export const pgliteOptions = { extensions: { pg_trgm, btree_gin } } satisfies PGliteOptions;

/**
 * The server's own PGlite, sized for a laptop (README, "Memory"): PostgreSQL's 128 MB of shared
 * buffers live in PGlite's WebAssembly memory, which never shrinks, and its first start holds
 * them twice (its initdb instance beside its own). 16 MB (the test suites' size too) holds a
 * run's hot rows and index pages; the rest of the database is a read from the operating system's
 * file cache away.
 */
export const serverStartParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB', '-c', 'maintenance_work_mem=16MB'];

/** PGlite as the one session it is, for `migrate` and the driver (pglite.ts). */
export function pgliteSession(pglite: PGlite) {
  return {
    exec: async (sql: string) => void (await pglite.exec(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pglite.query<Row>(sql, params)).rows,
  };
}
