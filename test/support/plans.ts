import { openDatabase, type Database, type Db } from '../../src/db/database.js';
import type { Sql } from '../../src/db/sql.js';
import { createScratchDatabase, onPostgres } from './database.js';
import { postgresTemplateDatabase } from './database-templates.js';
import { borrowMigratedPglite } from './pglite-pool.js';

/** A database of its own for a plan test, which seeds it by SQL: a scratch PostgreSQL database, or a migrated PGlite borrowed from the pool. */
export async function planTestDatabase(): Promise<{ db: Database; close: () => Promise<void> }> {
  const scratch = onPostgres ? await createScratchDatabase(undefined, postgresTemplateDatabase()) : undefined;
  const embedded = scratch ? undefined : await borrowMigratedPglite();
  const db = await openDatabase({ url: scratch?.url, embedded: embedded?.pglite, statementTimeoutMs: 300_000 });
  return {
    db,
    close: async () => {
      await db.close();
      await embedded?.giveBack();
      await scratch?.drop();
    },
  };
}

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/**
 * Rows each table's scans produced, filtered or rechecked away, over all their loops; a bitmap
 * index scan's under its index's name (it names no table: on a table never analysed, one read a
 * whole audit index once per run, 110,000 entries a loop, for the 10 rows its bitmap heap scan kept).
 */
export function rowsTouched(node: PlanNode, into = new Map<string, number>()) {
  const name = node['Relation Name'] ?? (node['Node Type'] === 'Bitmap Index Scan' ? node['Index Name'] : undefined);
  if (name) {
    const rows = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'];
    into.set(name, (into.get(name) ?? 0) + rows);
  }
  for (const child of node.Plans ?? []) rowsTouched(child, into);
  return into;
}

/**
 * `db.sql` that hands each statement but a setting (`SET …`) to `before` first, on the connection
 * it is about to run on (its transaction's, if it runs in one, so that the transaction's settings
 * apply to both).
 */
export function observedSql(db: Database, before: (sql: Sql, text: string, params?: unknown[]) => Promise<void>): Db {
  const observed = (sql: Sql): Sql => ({
    query: async <Row,>(text: string, params?: unknown[]) => {
      if (!/^SET\b/i.test(text)) await before(sql, text, params);
      return sql.query<Row>(text, params);
    },
  });
  return { ...observed(db.sql), transaction: (fn) => db.sql.transaction((tx) => fn(observed(tx))) };
}

/** A `Db` that runs each statement under `EXPLAIN (ANALYZE, FORMAT JSON)` first, handing its plan to `seen`, then runs it for its answer. */
export const explainingSql = (db: Database, seen: (plan: PlanNode) => void): Db =>
  observedSql(db, async (sql, text, params) => {
    const [row] = await sql.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
    seen(row!['QUERY PLAN'][0].Plan);
  });
