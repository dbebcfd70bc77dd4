// The server behind PgBouncer, as managed PostgreSQL often is: in session pooling it starts
// (PgBouncer refuses unknown startup parameters, so the server's settings must not be sent as
// such), migrates through it, serves, and comes back after the pooler restarts under writes; a
// transaction pool, which would mix the server's prepared statements and advisory locks between
// clients, is refused at start with a line that says what to change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { createScratchDatabase, postgresSuiteRuns } from '../support/database.js';
import { actors, claim, createRun, createThread } from '../support/lifecycle.js';
import { pgbouncerSuiteRuns, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';

const runs = postgresSuiteRuns('the PgBouncer suite') && pgbouncerSuiteRuns('the PgBouncer suite');

describe.runIf(runs)('behind PgBouncer', () => {
  let database: Awaited<ReturnType<typeof createScratchDatabase>>;
  let bouncer: PgBouncer;

  beforeAll(async () => {
    // An empty database: the migrations run through the pooler too.
    database = await createScratchDatabase();
    bouncer = await startPgBouncer(database.url);
  });

  afterAll(async () => {
    await bouncer?.stop();
    await database?.drop();
  });

  it('in session pooling: migrates, serves, and writes again after the pooler restarts', async () => {
    const t: TestApp = await startTestApp({ DATABASE_POOL_SIZE: '4' }, { databaseUrl: bouncer.url('session') });
    try {
      const { owner, worker } = await actors(t);
      const threadId = await createThread(t, owner, 'through PgBouncer');
      await claim(t, worker, await createRun(t, owner, threadId));

      await bouncer.restart();
      // The connections the pool held are gone: a write may fail while it finds that out, and
      // says UNAVAILABLE (which clients retry), never an unexpected error.
      const codes: unknown[] = [];
      for (let attempt = 0; attempt < 20; attempt++) {
        const response = await t.gql(`mutation { result: createThread(input: { title: "after the restart" }) { id } }`, {}, owner);
        if (!response.errors) break;
        codes.push(errorCode(response));
      }
      expect(codes.length).toBeLessThan(20);
      expect(codes.filter((code) => code !== 'UNAVAILABLE')).toEqual([]);
      await claim(t, worker, await createRun(t, owner, threadId));
    } finally {
      await t.close();
    }
  });

  it('in transaction pooling: refuses to start, and says what to change', async () => {
    await expect(startTestApp({}, { databaseUrl: bouncer.url('transaction') })).rejects.toThrow(/transaction or statement pooling mode.*pool_mode = session/);
  });
});
