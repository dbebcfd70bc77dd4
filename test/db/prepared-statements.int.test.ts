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
});
