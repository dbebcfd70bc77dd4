import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres, servicesRequired } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { delivered, subscribeLive } from '../support/streams.js';

// SEMANTICS.md, "Subscriptions": several instances on one database without REDIS_URL still
// deliver every change committed on any instance, read from the database (issue 43: an instance
// with a mistyped REDIS_URL delivered none of another instance's changes). Only PostgreSQL is
// shared between instances; with REQUIRE_SERVICES=1 a missing one is a failure, never a skip.

const meaningful = onPostgres || servicesRequired;
const title = 'two instances on one PostgreSQL database without Redis';
if (!meaningful) console.warn(`Skipping "${title}": set TEST_DATABASE_URL`);

const AUDITS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id operationId status } }`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;

describe.runIf(meaningful)(title, () => {
  let a: TestApp;
  let b: TestApp;
  let urlB: string;

  beforeAll(async () => {
    a = await startTestApp({ REDIS_URL: '' });
    b = await startTestApp({ REDIS_URL: '' }, { databaseUrl: a.config.databaseUrl });
    urlB = await b.app.start(0);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('says in its start banner that it polls the database', () => {
    expect(b.app.mode.liveUpdates).toMatch(/^database poll every \d+ ms/);
  });

  it('a subscriber on B receives, in order, the changes written through A', async () => {
    const { session, owner, threadId } = await runningRun(a);
    const audits = await subscribeLive(b.app, urlB, 'audit', AUDITS, { threadId }, owner);
    const runs = await subscribeLive(b.app, urlB, 'run', RUNS, { threadId }, owner);

    // One change at a time: changes caught up from the database together fold into their latest state.
    must(await session.modelStarted('m1')); // served by A
    await delivered(audits, 1, 'auditChanged');
    must(await session.modelFinished('m1'));
    await delivered(audits, 2, 'auditChanged');
    must(await session.finish('COMPLETED'));
    for (const events of await delivered(audits, 2, 'auditChanged')) {
      expect(events.map((e) => `${e.operationId}:${e.status}`)).toEqual(['m1:RUNNING', 'm1:COMPLETED']);
    }
    for (const events of await delivered(runs, 1, 'runChanged')) {
      expect(events.map((e) => e.status)).toEqual(['COMPLETED']);
    }
  });
});
