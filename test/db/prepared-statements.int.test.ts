// The lifecycle's fenced statements (texts marked `prepared` in src/db/sql.ts) run as named
// prepared statements on PGlite too (src/db/pglite.ts): parsed and planned once per database,
// not at every call, which was half of what each cost. (On PostgreSQL, node-postgres names them.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { TOOL_ACTIVITY_STATEMENT } from '../../src/domain/tool-activity.js';
import { actors, must, runningRun } from '../support/lifecycle.js';

describe.skipIf(onPostgres)('the lifecycle statements on PGlite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const preparedTexts = async () =>
    (await t.app.db.driver.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY statement')).map((row) => row.statement);

  it('are prepared once, however often they run, refusals and failures included', async () => {
    const { session } = await runningRun(t);
    must(await session.modelStarted('m0'));
    const afterFirst = await preparedTexts();
    expect(afterFirst.some((text) => text.includes('audit_record_events'))).toBe(true);

    const m1 = { sequence: '50', model: 'm', input: { q: 1 } };
    must(await session.modelStarted('m1', m1));
    must(await session.modelStarted('m1', m1)); // a replay
    expect(errorCode(await session.modelStarted('m1', { sequence: '99' }))).toBe('CONFLICT');
    must(await session.modelStarted('m2'));
    expect(await preparedTexts()).toEqual(afterFirst);
  });

  it('never run inside a transaction another caller has open: they wait for it to end', async () => {
    // PGlite is one session: a statement sent between two statements of an open transaction
    // would run inside it, and be rolled back with it after answering a success.
    let sendingWrite = () => {};
    const writeSent = new Promise<void>((resolve) => (sendingWrite = resolve));
    const app = await startTestApp({}, { onQuery: (sql) => sql.includes('audit_record_events') && sendingWrite() });
    try {
      const { session, runId } = await runningRun(app);
      let write: ReturnType<typeof session.modelStarted> | undefined;
      const rolledBack = app.app.db.driver.transaction(async (sql) => {
        await sql.query('SELECT 1');
        write = session.modelStarted('during');
        await writeSent;
        await new Promise((resolve) => setTimeout(resolve, 20)); // the write's turn, if it could take it
        await sql.query('SELECT 1');
        throw new Error('rolled back');
      });
      await expect(rolledBack).rejects.toThrow('rolled back');
      must(await write!);
      const kept = await app.app.db.driver.query<{ n: number }>(`SELECT count(*)::int AS n FROM message WHERE run_id = $1::uuid AND operation_id = 'during'`, [runId]);
      expect(kept).toEqual([{ n: 1 }]);
    } finally {
      await app.close();
    }
  });
});

// Issue 43: a migration that changes a table under a running server (an upgrade while old
// instances serve) made every connection's named statement that returns that table's rows fail
// with "cached plan must not change result type" (0A000), answered INTERNAL_SERVER_ERROR.
describe.runIf(onPostgres)('the lifecycle statements on PostgreSQL after a schema change under the running server', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Few connections (the pool hands out the latest released first): the connection that
    // prepared the statement is the one the next writes find it stale on.
    t = await startTestApp({ DATABASE_POOL_SIZE: '2' });
  });
  afterAll(() => t.close());

  it('are prepared again and the write succeeds, once, instead of failing', async () => {
    const { session, runId } = await runningRun(t);
    must(await session.modelStarted('before'));
    await t.app.db.driver.exec('ALTER TABLE message ADD COLUMN added_by_an_upgrade integer');
    const after = ['after-1', 'after-2', 'after-3', 'after-4'];
    for (const operationId of after) must(await session.modelStarted(operationId));
    const written = await t.app.db.driver.query<{ operation_id: string }>(
      'SELECT operation_id FROM message WHERE run_id = $1::uuid ORDER BY sequence',
      [runId],
    );
    expect(written.map((row) => row.operation_id)).toEqual(['before', ...after]);
  });
});

// Issue 40: PostgreSQL planned the tool activity view again at each execution (plan_cache_mode
// auto keeps custom plans while they look cheaper than the generic one): half of a small view's
// cost (bench/README.md, run SV1). It runs with its generic plan; the connection's other
// statements keep PostgreSQL's own choice.
describe.runIf(onPostgres)('the tool activity view on PostgreSQL', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ DATABASE_POOL_SIZE: '2' });
  });
  afterAll(() => t.close());

  it('is planned once, for every owner and window, and leaves the plan cache mode of its connection as it was', async () => {
    const windows = [60, 900, 3600, 86_400, 604_800, 3600, 60];
    for (const windowSeconds of windows) {
      const { owner } = await actors(t);
      const response = await t.gql(`query($w: Int) { toolActivity(windowSeconds: $w) { runningCount } }`, { w: windowSeconds }, owner);
      expect(response.errors).toBeUndefined();
    }
    // Both connections of the pool at once (each session holds its own until both have one), each
    // with its own prepared statements and settings.
    let entered = 0;
    let bothIn = () => {};
    const both = new Promise<void>((resolve) => (bothIn = resolve));
    const sessions = await Promise.all(
      [0, 1].map(() =>
        t.app.db.driver.withSession(async (session) => {
          if (++entered === 2) bothIn();
          await both;
          const [plans] = await session.query<{ generic: number; custom: number }>(
            `SELECT coalesce(sum(generic_plans), 0)::int AS generic, coalesce(sum(custom_plans), 0)::int AS custom FROM pg_prepared_statements WHERE right(statement, length($1)) = $1`,
            [TOOL_ACTIVITY_STATEMENT],
          );
          const [setting] = await session.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`);
          return { ...plans!, mode: setting!.mode };
        }),
      ),
    );
    expect(sessions.reduce((sum, { generic }) => sum + generic, 0)).toBe(windows.length);
    expect(sessions.reduce((sum, { custom }) => sum + custom, 0)).toBe(0);
    expect(sessions.map(({ mode }) => mode)).toEqual(['auto', 'auto']);
  });
});
