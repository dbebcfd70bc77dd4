// Searches match text in any case by the database's own case rules (lower(), ILIKE): on a
// database whose LC_CTYPE is C those know only a–z, so "ЗНАЧЕНИЕ" does not find "значение". The
// server cannot change a database's character type; it says so at start.
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { log } from '../../src/log.js';
import { postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';

async function databaseWithCtype(ctype: string) {
  const adminUrl = requirePostgresUrl();
  const name = `audit_test_ctype_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE '${ctype}'`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => client.end());
    },
  };
}

/** The warn lines the server logs while it opens a database of that character type. */
async function warningsOpening(ctype: string): Promise<string[]> {
  const warn = vi.spyOn(log, 'warn');
  const database = await databaseWithCtype(ctype);
  try {
    const db = await openPostgres(database.url, 2, 5_000);
    await db.close();
  } finally {
    await database.drop();
  }
  return warn.mock.calls.map((call) => String(call[1]));
}

describe.runIf(postgresSuiteRuns('a database whose character type is C'))('a database whose character type is C', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is named at start, with what it does to searches', async () => {
    const lines = await warningsOpening('C');
    expect(lines.some((line) => line.includes("LC_CTYPE is 'C'") && line.includes('ЗНАЧЕНИЕ'))).toBe(true);
  });

  it('is not named for a UTF-8 character type', async () => {
    expect((await warningsOpening('C.UTF-8')).filter((line) => line.includes('LC_CTYPE'))).toEqual([]);
  });
});
