import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Where the suites run: TEST_DATABASE_URL (an admin URL such as
 * postgres://postgres@127.0.0.1:5432/postgres) runs them on real PostgreSQL, one fresh database
 * per test file; unset, on the embedded default (in-memory PGlite).
 */
export const postgresAdminUrl = process.env.TEST_DATABASE_URL || undefined;
export const onPostgres = postgresAdminUrl !== undefined;
export const backendName = onPostgres ? 'PostgreSQL' : 'PGlite';

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Creates a database on the server, empty or a copy of `template` (a database nobody is connected
 * to); the returned `drop` removes it.
 */
export async function createScratchDatabase(adminUrl = requirePostgresUrl(), template?: string) {
  const name = `audit_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(adminUrl, name),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Set by CI's services pass (.ci/run): suites that need PostgreSQL and Redis must then fail,
 * never skip, when either is missing.
 */
export const servicesRequired = process.env.REQUIRE_SERVICES === '1';

/**
 * Suites that only mean something on a real server (multi-instance, cross-process races) call
 * this: in CI a missing TEST_DATABASE_URL is a failure, never a silent skip.
 */
export function requirePostgresUrl(): string {
  if (!postgresAdminUrl) throw new Error('TEST_DATABASE_URL must point at PostgreSQL for this suite');
  return postgresAdminUrl;
}

/**
 * Whether a suite that only means something on PostgreSQL runs here: on PostgreSQL, and always in
 * CI's services pass (where requirePostgresUrl then fails it instead of skipping). Says why when
 * it does not.
 */
export function postgresSuiteRuns(suite: string, why = 'it needs PostgreSQL'): boolean {
  const runs = onPostgres || servicesRequired;
  if (!runs) console.warn(`Skipping ${suite}: ${why} (set TEST_DATABASE_URL)`);
  return runs;
}
