// The lifecycle's fenced statements (texts marked `prepared` in src/db/sql.ts) run as named
// prepared statements on PGlite too (src/db/pglite.ts): parsed and planned once per database,
// not at every call, which was half of what each cost. (On PostgreSQL, node-postgres names them.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';

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
    expect(afterFirst.some((text) => text.includes('INSERT INTO message'))).toBe(true);

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
    const app = await startTestApp({}, { onQuery: (sql) => sql.includes('INSERT INTO message') && sendingWrite() });
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
