// The chaos report's finding 1: across a silent link (a partition: nothing answers, nothing is
// reset) PostgreSQL's statement_timeout cannot fire, and a statement waited for as long as the
// link was down. The client gives a statement up a little past the statement timeout; the
// connection it was sent on is then in an unknown state (the statement may still run, its
// transaction may still be open) and must never serve anything again. A session that raises its
// own statement timeout (migrations, up to 15 min) is waited for as long. Only PostgreSQL has a link
// to lose; with REQUIRE_SERVICES=1 a missing one is a failure, never a skip.
import { setTimeout as pause } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { isUnavailable } from '../../src/db/outage.js';
import { startTcpProxyFor } from '../e2e/support/tcp-proxy.js';
import { createScratchDatabase, postgresSuiteRuns } from '../support/database.js';

const meaningful = postgresSuiteRuns('unanswered-statement.int.test.ts');

describe.runIf(meaningful)('a statement the database does not answer (PostgreSQL behind a silent link)', () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let proxy: Awaited<ReturnType<typeof startTcpProxyFor>>;
  let db: Database;
  beforeAll(async () => {
    scratch = await createScratchDatabase();
    proxy = await startTcpProxyFor(scratch.url);
    // One connection: whatever runs next runs on the one a given-up statement was sent on, unless it was ended.
    db = await openDatabase({ url: proxy.url, poolSize: 1, statementTimeoutMs: 200 });
  });
  // The client gives a statement up 2.2 s after sending it at the requests' timeout: an event-loop
  // stall that long on a loaded machine would give up one that must succeed. Those wait a minute.
  const answered = <Row>(sql: string) => db.driver.withSession((session) => session.query<Row>(sql), { statementTimeoutMs: 60_000 });
  afterAll(async () => {
    await db?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  it("is given up as an outage; the transaction it was in is never continued by the connection's next user", async () => {
    // The transaction runs at the requests' timeout: given up at its first statement (a stall) or at its second (the link), it is given up all the same.
    const givenUp = db.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1`;
      proxy.stall();
      await tx.$queryRaw`SELECT 2`;
    });
    const error = await givenUp.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(isUnavailable(error), String(error)).toBe(true);
    proxy.resume();

    // A statement outside any transaction: its own transaction began with it, not with the one given up.
    const [row] = await answered<{ own: boolean }>('SELECT now() = statement_timestamp() AS own');
    expect(row?.own).toBe(true);
    expect(await answered<{ n: number }>('SELECT 3 AS n')).toEqual([{ n: 3 }]);
  });

  // A connection whose link went silent right after its handshake: the settings each connection
  // runs before its first use (statement_timeout…) waited the statement timeout and 2 s more on top
  // of the pool's 10 s connect timeout, although getting a connection waits at most 10 s.
  it('a new connection whose settings go unanswered is given up within the pool\'s 10 s connect timeout, not the statement timeout', async () => {
    const own = await createScratchDatabase();
    const silent = await startTcpProxyFor(own.url);
    // A statement timeout far past the 10 s, so that which bound gave up is plain.
    const slowDb = await openDatabase({ url: silent.url, poolSize: 2, statementTimeoutMs: 60_000 });
    const admin = new pg.Client({ connectionString: own.url });
    try {
      silent.silenceNewAtFirstQuery();
      // The pool's open connections end: the next statement opens a connection, through the silence.
      await admin.connect();
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      await expect.poll(() => slowDb.poolStats!().total, { timeout: 10_000 }).toBe(0);
      const outcome = await Promise.race([
        slowDb.driver.query('SELECT 1').then(
          () => 'answered',
          (error: unknown) => (isUnavailable(error) ? 'UNAVAILABLE' : String(error)),
        ),
        // Twice the bound, far less than the 62 s of the settings' own timeout.
        pause(20_000).then(() => 'still waiting after 20 s'),
      ]);
      expect(outcome).toBe('UNAVAILABLE');
    } finally {
      await admin.end();
      await silent.close();
      await slowDb.close();
      await own.drop();
    }
  }, 60_000);

  it('a session that raises its own statement timeout (a migration) is waited for as long, not given up at the requests\' one', async () => {
    // Past the requests' 200 ms statement timeout and the 2 s the client waits beyond it.
    const slow = { name: '99999999999999_slower_than_requests', sql: 'SELECT pg_sleep(2.5);', checksum: 'slower' };
    expect(await migrate(db.driver, [slow])).toEqual([slow.name]);
  });
});
