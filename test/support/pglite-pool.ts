import { PGlite } from '@electric-sql/pglite';
import { pgliteOptions } from '../../src/db/pglite.js';
import { migratedPgliteTemplate } from './database-templates.js';

/**
 * The in-memory PGlite databases of a worker's test apps, reused: starting one from the migrated
 * copy costs over a second of CPU (untar, WASM start, the shared buffers zeroed), a reset a few
 * milliseconds. A test app borrows a database through a proxy that is revoked when the app
 * closes, so nothing the app left running can reach the next app's data. The reset empties every
 * table and restarts every sequence, discards the session (settings, prepared statements,
 * advisory locks, temporary tables) and the planner's statistics, so the next app finds the
 * database as migrated. A database the reset cannot bring back there (a test changed its schema,
 * or left a transaction open) is closed instead of reused.
 */
interface Pooled {
  pglite: PGlite;
  /** The schema as migrated (`SCHEMA` below): a reset database must still have it. */
  schema: string;
  tables: string[];
  sequences: string[];
}

export interface BorrowedPglite {
  /** The database, until `giveBack`. */
  pglite: PGlite;
  giveBack(): Promise<void>;
}

/** Most files run one app at a time; a few run up to three. */
const MAX_IDLE = 3;
const idle: Pooled[] = [];

export async function borrowMigratedPglite(): Promise<BorrowedPglite> {
  const pooled = idle.pop() ?? (await openMigrated());
  const { proxy, revoke } = Proxy.revocable(pooled.pglite, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  let given = false;
  return {
    pglite: proxy,
    async giveBack() {
      if (given) return;
      given = true;
      revoke();
      if (idle.length < MAX_IDLE && (await reset(pooled))) idle.push(pooled);
      else await pooled.pglite.close();
    },
  };
}

async function openMigrated(): Promise<Pooled> {
  const pglite = new PGlite({ ...pgliteOptions, loadDataDir: await migratedPgliteTemplate() });
  const names = async (relkind: string) =>
    (await pglite.query<{ name: string }>(
      `SELECT oid::regclass::text AS name FROM pg_class
       WHERE relnamespace = 'public'::regnamespace AND relkind = $1 AND relname <> '_prisma_migrations' ORDER BY 1`,
      [relkind],
    )).rows.map((row) => row.name);
  const tables = await names('r');
  const { rows } = await pglite.query<{ count: number }>(`SELECT (${tables.map((table) => `(SELECT count(*) FROM ${table})`).join(' + ')})::int AS count`);
  // The reset empties these tables: the migrated copy must have no row in them to restore.
  if (rows[0]!.count !== 0) throw new Error('the migrated template has rows outside _prisma_migrations');
  return { pglite, schema: await schemaOf(pglite), tables, sequences: await names('S') };
}

async function reset({ pglite, schema, tables, sequences }: Pooled): Promise<boolean> {
  try {
    // Refused inside a transaction block: an app that left one open leaves a database to close.
    await pglite.exec('DISCARD ALL');
    await pglite.exec(`
      TRUNCATE ${tables.join(', ')};
      ${sequences.map((sequence) => `ALTER SEQUENCE ${sequence} RESTART;`).join('\n')}
      DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace);`);
    return (await schemaOf(pglite)) === schema;
  } catch {
    return false;
  }
}

/** What a test could change of the database besides its rows. */
const SCHEMA = `
  SELECT md5(string_agg(entry, E'\\n' ORDER BY entry)) AS schema FROM (
    SELECT format('relation %s %s', oid::regclass, relkind) FROM pg_class
    WHERE relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
    UNION ALL
    SELECT format('column %s.%s %s %s %s', a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT format('index %s', pg_get_indexdef(indexrelid)) FROM pg_index WHERE indrelid::regclass::text NOT LIKE 'pg_%'
    UNION ALL
    SELECT format('constraint %s %s', conrelid::regclass, pg_get_constraintdef(oid)) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT format('function %s %s', oid::regprocedure, md5(prosrc)) FROM pg_proc
    WHERE pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    UNION ALL
    SELECT format('trigger %s %s %s', tgrelid::regclass, tgname, tgenabled) FROM pg_trigger
    UNION ALL
    SELECT format('schema %s', nspname) FROM pg_namespace WHERE nspname !~ '^pg_(toast_)?temp_'
    UNION ALL
    SELECT format('role %s %s', rolname, rolsuper) FROM pg_roles
    UNION ALL
    SELECT format('extension %s %s', extname, extversion) FROM pg_extension
    UNION ALL
    SELECT format('setting %s', setconfig) FROM pg_db_role_setting
    UNION ALL
    SELECT format('migrations %s', count(*)) FROM _prisma_migrations
  ) AS entries (entry)`;

async function schemaOf(pglite: PGlite): Promise<string> {
  return (await pglite.query<{ schema: string }>(SCHEMA)).rows[0]!.schema;
}
