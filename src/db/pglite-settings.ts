import type { PGlite, PGliteOptions } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

/**
 * PGlite as the server opens it: pg_trgm and btree_gin for the audit search index, the thread
 * beside the searched text's trigrams (migrations 20261201200000_audit_search, 20261203120000_btree_gin).
 */
export const pgliteOptions = { extensions: { pg_trgm, btree_gin } } satisfies PGliteOptions;

export { ginPendingListParams, serverStartParams } from './pglite-start-params.mjs';

/** PGlite as the one session it is, for `migrate` and the driver (pglite.ts). */
export function pgliteSession(pglite: PGlite) {
  return {
    exec: async (sql: string) => void (await pglite.exec(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pglite.query<Row>(sql, params)).rows,
  };
}
