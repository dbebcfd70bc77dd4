import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresSuiteRuns, requirePostgresUrl } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { auditsOf, cancelRun, openWork, readRun } from './helpers.js';

// One clock on the write path: a run's start and its end are both stamped by the database, so an
// instance whose own clock is off (here: an hour behind) never stamps an end before the start.
// On PGlite the database runs inside this process and reads the process clock (faking Date moves
// it too): one process, one clock by construction, so the suite means something on PostgreSQL only.

const HOUR = 3_600_000;

const meaningful = postgresSuiteRuns('the database-clock suite', 'on PGlite the database clock is the process clock');

let t: TestApp | undefined;
beforeAll(async () => {
  if (!meaningful) return;
  requirePostgresUrl(); // with REQUIRE_SERVICES=1 a missing PostgreSQL fails here instead of skipping
  t = await startTestApp();
});
afterAll(() => t?.close());
afterEach(() => {
  vi.useRealTimers();
});

const app = () => t!;
const skewProcessClock = () => vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - HOUR, shouldAdvanceTime: true });

describe.runIf(meaningful)('run endings are stamped by the database clock (PostgreSQL)', () => {
  it.each(['finishRun', 'cancelRun'] as const)('%s on an instance whose clock is an hour behind', async (how) => {
    const t = app();
    const ctx = await runningRun(t);
    await openWork(ctx.session);
    skewProcessClock();
    if (how === 'finishRun') must(await ctx.session.finish('COMPLETED'));
    else must(await cancelRun(t, ctx.owner, ctx.runId));
    vi.useRealTimers();

    const run = await readRun(t, ctx.owner, ctx.runId);
    expect(Date.parse(run.finishedAt)).toBeGreaterThanOrEqual(Date.parse(run.startedAt));
    // The rows it closed share that instant.
    const audits = await auditsOf(t, ctx.owner, ctx.threadId, ctx.runId);
    expect(audits['Tool:t-open'].finishedAt).toBe(run.finishedAt);
    expect(audits['Model:m-open'].finishedAt).toBe(run.finishedAt);
  });
});
