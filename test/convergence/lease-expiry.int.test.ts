import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { sweepExpiredLeases } from '../../src/domain/convergence.js';
import { errorCode, startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { createTestStorage } from '../support/storage.js';
import { WorkerSession, actors, claim, createRun, createThread, expireLeases, must } from '../support/lifecycle.js';
import { eventually, payloads, subscribeSse, type Stream } from '../support/streams.js';
import { auditsOf, expectLeaseExpired, openWork, readRun } from './helpers.js';
import { onLogLine } from '../../src/log.js';

// SEMANTICS.md: the server sweeps expired leases; several instances may sweep at once and each
// run is converged exactly once; a restarted server sweeps once at start-up.

const NEVER = '3600000';

/** What a suite's beforeAll set up, undone after the file (what a test sets up: onTestFinished). */
const fileCleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of fileCleanups.reverse()) await cleanup();
});

// Generous ceilings for tests that set up many runs on a shared, busy machine; nothing is timed.
const HEAVY = 120_000;

/**
 * Server instances sharing one database: two apps on a scratch PostgreSQL database, or on PGlite
 * (one in-process database) the same app twice.
 */
async function instances(env: Record<string, string>): Promise<TestApp[]> {
  if (!onPostgres) {
    const t = await startTestApp(env);
    fileCleanups.push(() => t.close());
    return [t, t];
  }
  const storage = await createTestStorage();
  fileCleanups.push(() => storage.remove());
  const apps: TestApp[] = [];
  for (let i = 0; i < 2; i++) {
    const t = await startTestApp(env, { storage });
    fileCleanups.push(() => t.close());
    apps.push(t);
  }
  return apps;
}

const RUN_CHANGED = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;
const AUDIT_CHANGED = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id runId operationId status } }`;

// How long a stream may take to deliver on a shared, busy machine; nothing is timed.
const STREAM_TIMEOUT = 15_000;
const auditSeen = (operationId: string, status: string) => (results: GraphQLResponse[]) =>
  results.some((result) => result.data?.auditChanged?.operationId === operationId && result.data.auditChanged.status === status);
const runSeen = (runId: string, status?: string) => (results: GraphQLResponse[]) =>
  results.some((result) => result.data?.runChanged?.id === runId && (!status || result.data.runChanged.status === status));

/**
 * Live subscriptions on every distinct instance (each publishes only its own events here). A
 * marker run on each instance proves its streams are live, and later fences them: once the
 * marker's next event arrives, everything published before it has been delivered.
 */
async function watch(apps: TestApp[], owner: string, worker: string, threadId: string) {
  const watched: { runs: Stream; audits: Stream; marker: WorkerSession; markerId: string }[] = [];
  for (const t of new Set(apps)) {
    const runs = await subscribeSse(t.app, RUN_CHANGED, { threadId }, owner);
    onTestFinished(() => runs.close());
    const audits = await subscribeSse(t.app, AUDIT_CHANGED, { threadId }, owner);
    onTestFinished(() => audits.close());
    const markerId = await createRun(t, owner, threadId);
    const marker = await claim(t, worker, markerId, 600);
    must(await marker.modelStarted('marker'));
    await audits.until(auditSeen('marker', 'RUNNING'), 'the marker running', STREAM_TIMEOUT);
    await runs.until(runSeen(markerId), 'the marker run', STREAM_TIMEOUT);
    watched.push({ runs, audits, marker, markerId });
  }
  return {
    async fence() {
      for (const { runs, audits, marker, markerId } of watched) {
        must(await marker.modelFinished('marker'));
        must(await marker.finish('COMPLETED'));
        await audits.until(auditSeen('marker', 'COMPLETED'), 'the marker completed', STREAM_TIMEOUT);
        await runs.until(runSeen(markerId, 'COMPLETED'), 'the marker run completed', STREAM_TIMEOUT);
      }
    },
    /**
     * Each instance's streams, once they have heard every run of `runIds` end: an instance hears
     * the changes another instance committed too (caught up from the database), so every stream
     * ends up with each ending, whoever swept it.
     */
    async perInstance(runIds: string[]) {
      const abandoned = (results: GraphQLResponse[]) =>
        payloads(results, 'auditChanged').filter((event: any) => runIds.includes(event.runId) && event.status === 'ABANDONED').length >=
        runIds.length * 3;
      for (const { runs, audits } of watched) {
        for (const runId of runIds) await runs.until(runSeen(runId, 'FAILED'), `run ${runId} failed`, STREAM_TIMEOUT);
        await audits.until(abandoned, 'every open audit abandoned', STREAM_TIMEOUT);
      }
      return watched.map(({ runs, audits }) => ({
        runEvents: payloads(runs.results, 'runChanged'),
        auditEvents: payloads(audits.results, 'auditChanged'),
      }));
    },
  };
}

/** `count` runs in one thread, each with open work, each claimed with a 30 s lease. */
async function runsWithOpenWork(t: TestApp, count: number) {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const runs = [];
  for (let i = 0; i < count; i++) {
    const runId = await createRun(t, who.owner, threadId);
    const session = await claim(t, who.worker, runId, 30);
    await openWork(session);
    runs.push({ runId, session });
  }
  return { ...who, threadId, runs };
}

/**
 * Every run ended once, as FAILED LEASE_EXPIRED, with its open audits ABANDONED; each instance's
 * streams deliver each ending once, as the last state of its entity (a catch-up may deliver an
 * earlier folded state first, e.g. the run as its renewal left it).
 */
async function expectConvergedOnce(t: TestApp, ctx: Awaited<ReturnType<typeof runsWithOpenWork>>, watcher: Awaited<ReturnType<typeof watch>>) {
  const heard = await watcher.perInstance(ctx.runs.map(({ runId }) => runId));
  const endingsOf = (events: any[], id: string) => {
    const own = events.filter((event) => event.id === id);
    const last = own.findIndex((event) => event.status !== 'RUNNING');
    return last === -1 ? [] : own.slice(last);
  };
  for (const { runId, session } of ctx.runs) {
    const run = await readRun(t, ctx.owner, runId);
    expect(run).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' }, leaseOwner: null });
    for (const { runEvents } of heard) expect(endingsOf(runEvents, runId), runId).toEqual([{ id: runId, status: 'FAILED' }]);

    const audits = await auditsOf(t, ctx.owner, ctx.threadId, runId);
    for (const key of ['Tool:t-await', 'Tool:t-open', 'Model:m-open']) {
      expect(audits[key], key).toMatchObject({ status: 'ABANDONED' });
      for (const { auditEvents } of heard) {
        expect(auditEvents.filter((event) => event.id === audits[key].id && event.status === 'ABANDONED'), key).toEqual([
          { id: audits[key].id, runId, operationId: audits[key].operationId, status: 'ABANDONED' },
        ]);
      }
    }
    expect(audits['Tool:t-await'].awaitingRunTerminal).toBe(false);
    expect(audits['Tool:t-open'].finishedAt).toBe(run.finishedAt);
    expect(audits['Model:m-open'].finishedAt).toBe(run.finishedAt);
    expect(run.toolCalls.map((call: any) => call.status)).toEqual(['FAILED', 'FAILED']);
    expect(errorCode(await session.modelStarted('late'))).toBe('LEASE_LOST');
  }
  // Nothing else was converged: on each instance, only the marker runs' own audits ended besides these.
  const ours = new Set(ctx.runs.map(({ runId }) => runId));
  for (const { auditEvents } of heard) {
    expect(auditEvents.filter((event) => ours.has(event.runId) && event.status === 'ABANDONED')).toHaveLength(ctx.runs.length * 3);
  }
}

describe(`sweeps on ${backendName}, with the instances' own interval sweepers idle`, () => {
  let apps: TestApp[];
  let t: TestApp;
  beforeAll(async () => {
    apps = await instances({ LEASE_SWEEP_INTERVAL_MS: NEVER });
    t = apps[0]!;
  });

  it('an unexpired lease is never swept', async () => {
    const ctx = await runsWithOpenWork(t, 1);
    const { runId, session } = ctx.runs[0]!;
    expect(await sweepExpiredLeases(t.app.deps)).toBe(0);
    expect(await readRun(t, ctx.owner, runId)).toMatchObject({ status: 'RUNNING' });
    must(await session.modelFinished('m-open'));
    must(await session.finish('COMPLETED'));
  });

  it('a run that cannot be converged does not keep the others open; the next sweep retries it', async () => {
    const ctx = await runsWithOpenWork(t, 2);
    const [poisoned, healthy] = ctx.runs as [(typeof ctx.runs)[0], (typeof ctx.runs)[0]];
    // A tool audit that lost its ToolCall (the foreign key is ON DELETE SET NULL) cannot be mirrored.
    const where = `WHERE run_id = $1::uuid AND role = 'TOOL' AND operation_id = 't-open'`;
    const [row] = await t.app.db.driver.query<{ id: string }>(`SELECT tool_call_row_id AS id FROM message ${where}`, [poisoned.runId]);
    await t.app.db.driver.query(`UPDATE message SET tool_call_row_id = NULL ${where}`, [poisoned.runId]);
    // The poisoned run expires first, so it is first in the sweep's order.
    await expireLeases(t.app.db.driver, [poisoned.runId, healthy.runId]);
    await expectLeaseExpired(healthy.session);

    const logged: { runId?: string; error?: { message: string } }[] = [];
    onTestFinished(onLogLine((line) => void logged.push(JSON.parse(line))));
    expect(await sweepExpiredLeases(t.app.deps)).toBe(1);
    expect(logged).toContainEqual(expect.objectContaining({ runId: poisoned.runId, error: expect.objectContaining({ message: expect.any(String) }) }));
    expect(await readRun(t, ctx.owner, healthy.runId)).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
    expect(await readRun(t, ctx.owner, poisoned.runId)).toMatchObject({ status: 'RUNNING' });
    expect(errorCode(await poisoned.session.modelFinished('m-open'))).toBe('LEASE_EXPIRED');

    await t.app.db.driver.query(`UPDATE message SET tool_call_row_id = $2::uuid ${where}`, [poisoned.runId, row!.id]);
    expect(await sweepExpiredLeases(t.app.deps)).toBe(1);
    expect(await readRun(t, ctx.owner, poisoned.runId)).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
  }, HEAVY);

  it('runs that keep failing to converge, a whole batch of them, do not starve the runs expiring after them', async () => {
    const BATCH = 3;
    const ctx = await runsWithOpenWork(t, BATCH + 2);
    const poisoned = ctx.runs.slice(0, BATCH);
    const healthy = ctx.runs.slice(BATCH);
    const where = `WHERE run_id = $1::uuid AND role = 'TOOL' AND operation_id = 't-open'`;
    const toolCallRows: string[] = [];
    for (const { runId } of poisoned) {
      const [row] = await t.app.db.driver.query<{ id: string }>(`SELECT tool_call_row_id AS id FROM message ${where}`, [runId]);
      toolCallRows.push(row!.id);
      await t.app.db.driver.query(`UPDATE message SET tool_call_row_id = NULL ${where}`, [runId]);
    }
    // The poisoned runs expire first: they fill the first batch of every sweep.
    await expireLeases(t.app.db.driver, [...poisoned, ...healthy].map(({ runId }) => runId));
    await expectLeaseExpired(healthy.at(-1)!.session);

    const logged: { runId?: string; error?: { message: string } }[] = [];
    onTestFinished(onLogLine((line) => void logged.push(JSON.parse(line))));
    for (let sweep = 1; sweep <= 2; sweep++) {
      expect(await sweepExpiredLeases(t.app.deps, BATCH), `sweep ${sweep}`).toBe(sweep === 1 ? healthy.length : 0);
    }
    for (const { runId } of healthy) {
      expect(await readRun(t, ctx.owner, runId)).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
    }
    // Each failure is logged with its run and its error, at every sweep; the runs stay for the next.
    for (const { runId } of poisoned) {
      const lines = logged.filter((entry) => entry.runId === runId);
      expect(lines).toHaveLength(2);
      for (const line of lines) expect(line.error?.message).toEqual(expect.any(String));
      expect(await readRun(t, ctx.owner, runId)).toMatchObject({ status: 'RUNNING' });
    }
    // Repaired, they are swept like any other (and stay out of the later tests' sweeps).
    for (const [index, { runId }] of poisoned.entries()) {
      await t.app.db.driver.query(`UPDATE message SET tool_call_row_id = $2::uuid ${where}`, [runId, toolCallRows[index]]);
    }
    expect(await sweepExpiredLeases(t.app.deps, BATCH)).toBe(poisoned.length);
  }, HEAVY);

  it('sweeps racing on every instance converge each expired run exactly once', async () => {
    const ctx = await runsWithOpenWork(t, 6);
    const watcher = await watch(apps, ctx.owner, ctx.worker, ctx.threadId);
    await expireLeases(t.app.db.driver, ctx.runs.map(({ runId }) => runId));
    // Expired but not yet swept: the worker is told so.
    for (const { session } of ctx.runs) await expectLeaseExpired(session);

    const sweeps = await Promise.all([...apps, ...apps].map((app) => sweepExpiredLeases(app.app.deps)));
    expect(sweeps.reduce((sum, ended) => sum + ended, 0)).toBe(ctx.runs.length);

    await watcher.fence();
    await expectConvergedOnce(t, ctx, watcher);
  }, HEAVY);
});

describe(`sweeps on ${backendName}, by the instances' own interval sweepers`, () => {
  let apps: TestApp[];
  beforeAll(async () => {
    apps = await instances({ LEASE_SWEEP_INTERVAL_MS: '50' });
  });

  it('converge each expired run exactly once', async () => {
    const t = apps[0]!;
    const ctx = await runsWithOpenWork(t, 6);
    const watcher = await watch(apps, ctx.owner, ctx.worker, ctx.threadId);
    await expireLeases(t.app.db.driver, ctx.runs.map(({ runId }) => runId));

    for (const { runId } of ctx.runs) await eventually(() => readRun(t, ctx.owner, runId), (run) => run.status !== 'RUNNING');
    await watcher.fence();
    await expectConvergedOnce(t, ctx, watcher);
  }, HEAVY);
});

describe('the start-up sweep', () => {
  it('closes a run whose lease expired while no server was running', async () => {
    // The same database across two server lifetimes: a scratch PostgreSQL database, or a PGlite data directory.
    const storage = await createTestStorage();
    onTestFinished(() => storage.remove());
    const env = { LEASE_SWEEP_INTERVAL_MS: NEVER };

    const first = await startTestApp(env, { storage });
    onTestFinished(() => first.close());
    const ctx = await runsWithOpenWork(first, 1);
    const { runId, session } = ctx.runs[0]!;
    // The lease runs out with no sweep to see it (this server's interval sweeper never fires).
    await expireLeases(first.app.db.driver, [runId]);
    await first.close();

    // Its interval sweeper never fires during the test: only the start-up sweep can close the run.
    const second = await startTestApp(env, { storage });
    onTestFinished(() => second.close());
    const run = await readRun(second, ctx.owner, runId);
    expect(run).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
    const audits = await auditsOf(second, ctx.owner, ctx.threadId, runId);
    for (const key of ['Tool:t-await', 'Tool:t-open', 'Model:m-open']) expect(audits[key], key).toMatchObject({ status: 'ABANDONED' });
    expect(run.toolCalls.map((call: any) => call.status)).toEqual(['FAILED', 'FAILED']);
    expect(errorCode(await new WorkerSession(second, session.token, session.lease).modelStarted('late'))).toBe('LEASE_LOST');
  }, HEAVY);
});
