import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.js';

/**
 * A scratch database for a benchmark: on PostgreSQL (DATABASE_URL, an admin URL) a new database
 * named after `prefix`, dropped by `drop`; without DATABASE_URL an in-memory PGlite.
 */
export async function openScratchDatabase(prefix: string, options: { statementTimeoutMs?: number } = {}): Promise<{ db: Database; drop: () => Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) return { db: await openDatabase({}), drop: async () => {} };
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { db: await openDatabase({ url: url.toString(), ...options }), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}
