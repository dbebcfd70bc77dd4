// PostgreSQL as a platform team runs it: the server's role is no superuser and owns only its
// schema, which is not `public`, and the role carries its own statement_timeout and
// idle_in_transaction_session_timeout. Migrations run as
// that role, and every read and write then finds its tables in that schema, whether the URL
// names it (`?schema=`, Prisma's way) or the role's search_path does.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.js';
import { createScratchDatabase, postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';
import { actors, claim, createRun, createThread } from '../support/lifecycle.js';

const SCHEMA = 'audit_app';

/** The SQL block of docs/operations.md, "Managed PostgreSQL and connection poolers". */
function adminStatements(): string {
  const page = readFileSync(join(import.meta.dirname, '../../docs/operations.md'), 'utf8');
  const block = /<!-- checked by: test\/db\/managed-postgres\.int\.test\.ts -->\n\s*```sql\n([\s\S]*?)\n\s*```/.exec(page);
  if (!block) throw new Error('docs/operations.md has no SQL block checked by this test');
  expect(block[1]).toContain(`CREATE SCHEMA ${SCHEMA} AUTHORIZATION audit_server`);
  return block[1]!;
}

describe.runIf(postgresSuiteRuns('a role that owns only its schema'))('a role that owns only its schema, not the database', () => {
  const role = `audit_test_role_${randomBytes(4).toString('hex')}`;
  let database: Awaited<ReturnType<typeof createScratchDatabase>>;
  let admin: pg.Client;
  const urlAs = (search: Record<string, string>) => {
    const url = new URL(database.url);
    url.username = role;
    url.password = '';
    for (const [key, value] of Object.entries(search)) url.searchParams.set(key, value);
    return url.toString();
  };

  beforeAll(async () => {
    database = await createScratchDatabase();
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    // The page's statements as written, for this test's role and database.
    await admin.query(adminStatements().replaceAll('audit_server', `"${role}"`).replace('DATABASE audit ', `DATABASE "${database.name}" `));
    await admin.query(`ALTER ROLE "${role}" IN DATABASE "${database.name}" SET statement_timeout = '20s'`);
    await admin.query(`ALTER ROLE "${role}" IN DATABASE "${database.name}" SET idle_in_transaction_session_timeout = '5s'`);
  });

  afterAll(async () => {
    await admin?.end();
    await database?.drop();
    const client = new pg.Client({ connectionString: requirePostgresUrl() });
    await client.connect();
    await client.query(`DROP ROLE IF EXISTS "${role}"`).finally(() => client.end());
  });

  async function serves(url: string) {
    const t = await startTestApp({}, { databaseUrl: url });
    try {
      const { owner, worker } = await actors(t);
      const threadId = await createThread(t, owner, 'in its own schema');
      const runId = await createRun(t, owner, threadId);
      await claim(t, worker, runId);
      const threads = await t.gql(`{ threads(first: 50) { edges { node { id runs { id status } } } } }`, {}, owner);
      expect(threads.errors).toBeUndefined();
      const thread = threads.data.threads.edges.find((edge: { node: { id: string } }) => edge.node.id === threadId).node;
      expect(thread.runs).toEqual([{ id: runId, status: 'RUNNING' }]);
    } finally {
      await t.close();
    }
  }

  it('migrates and serves in the schema that `?schema=` names', async () => {
    await serves(urlAs({ schema: SCHEMA }));
    const tables = await admin.query(`SELECT table_schema, count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('thread', 'run') GROUP BY 1`);
    expect(tables.rows).toEqual([{ table_schema: SCHEMA, n: 2 }]);
  });

  it("serves in the schema that the role's search_path names", async () => {
    await admin.query(`ALTER ROLE "${role}" IN DATABASE "${database.name}" SET search_path = ${SCHEMA}`);
    try {
      await serves(urlAs({}));
    } finally {
      await admin.query(`ALTER ROLE "${role}" IN DATABASE "${database.name}" RESET search_path`);
    }
  });

  it("keeps its own settings over the role's and beside the URL's `options`", async () => {
    const t = await startTestApp({ DATABASE_STATEMENT_TIMEOUT_MS: '25000' }, { databaseUrl: urlAs({ options: `-c search_path=${SCHEMA}` }) });
    try {
      const [settings] = await t.app.db.driver.query<Record<string, string>>(
        `SELECT current_schema() AS schema, current_setting('statement_timeout') AS statement_timeout,
                current_setting('jit') AS jit, current_setting('audit.recent_changes', true) AS recent_changes`,
      );
      expect(settings).toEqual({ schema: SCHEMA, statement_timeout: '25s', jit: 'off', recent_changes: 'on' });
    } finally {
      await t.close();
    }
  });

  it('names a schema that does not exist, at start', async () => {
    await expect(startTestApp({}, { databaseUrl: urlAs({ schema: 'no_such_schema' }) })).rejects.toThrow(
      /schema "no_such_schema" does not exist.*CREATE SCHEMA/,
    );
  });
});
