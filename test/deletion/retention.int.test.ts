import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LATEST_CHANGE } from '../../src/domain/deletion.js';
import { registry } from '../../src/metrics.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { RETENTION_LOCK_KEY, startRetentionSweeper } from '../../src/server/retention-sweeper.js';
import { readOwnerToolActivity } from '../../src/domain/tool-activity.js';
import { onLogLine } from '../../src/log.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { actors, createRun, createThread, must, runningRun } from '../support/lifecycle.js';
import { eventually } from '../support/streams.js';
import { bulkSeed } from '../../bench/lib/bulk-seed.js';
import { sqlOverDriver } from '../../bench/lib/sql.js';
import { DELETE_THREAD, rowsLeft } from './support.js';

// SEMANTICS.md "Deletion and retention": RETENTION_DAYS deletes, by deleteThread's rule, every
// thread whose latest change is older, and logs each receipt. The sweeper's clock is the test's:
// it says "now" is a day and a bit after the moment the test picked, so no test waits for days.

const DAY_MS = 86_400_000;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const latestChange = async (threadId: string) => {
  const [row] = await t.app.db.sql.query<{ at: Date }>(`SELECT ${LATEST_CHANGE('t')} AS at FROM thread t WHERE t.id = $1::uuid`, [threadId]);
  return row!.at;
};

/** Waits until the database clock has moved past `at` (a few milliseconds, never days). */
const databaseClockPast = (at: Date) =>
  eventually(async () => (await t.app.db.sql.query<{ now: Date }>('SELECT clock_timestamp() AS now'))[0]!.now, (now) => now > at);

const appendMessage = (token: string, threadId: string) =>
  t.gql(`mutation($input: AppendMessageInput!) { result: appendMessage(input: $input) { id } }`, {
    input: { threadId, role: 'USER', content: { text: 'still here' } },
  }, token);

const sweeperAt = (now: Date, retentionDays: number | undefined) =>
  startRetentionSweeper(t.app.deps, t.app.db.driver, { retentionDays, intervalMs: 3_600_000, now: () => now, batchRows: 1 });

describe(`RETENTION_DAYS (${backendName})`, () => {
  it('deletes the threads whose latest change is older, keeps the others, and logs each receipt', async () => {
    // Created first, but changed last: kept (its latest change counts, not its creation).
    const revived = await actors(t);
    const revivedThread = await createThread(t, revived.owner);
    // Old: a run written to, its worker still holding the lease.
    const old = await runningRun(t);
    await old.session.declare('m1', [{ id: 'c1', name: 'search' }]);
    must(await old.session.toolStarted('c1', 'search'));
    must(await appendMessage(old.owner, old.threadId));
    const oldLatest = await latestChange(old.threadId);
    await databaseClockPast(oldLatest);
    // Newer: created after the old thread's latest change.
    const newer = await actors(t);
    const newerThread = await createThread(t, newer.owner);
    must(await appendMessage(revived.owner, revivedThread));
    await createRun(t, revived.owner, revivedThread);
    expect((await latestChange(newerThread)) > oldLatest).toBe(true);
    expect((await latestChange(revivedThread)) > oldLatest).toBe(true);

    const deletedByRetention = async () =>
      parsePrometheusText(await registry.metrics()).samples.get('agent_audit_sweeper_deleted_threads_total{reason="retention"}') ?? 0;
    const countedBefore = await deletedByRetention();
    const logged: unknown[] = [];
    const stopReading = onLogLine((line) => {
      const entry = JSON.parse(line) as { event?: string };
      if (entry.event === 'thread_deleted') logged.push(entry);
    });
    try {
      // "Now" is such that the cut-off (now - 1 day) falls just after the old thread's latest change.
      const cutoff = new Date(oldLatest.getTime() + 1);
      const off = await sweeperAt(new Date(cutoff.getTime() + 10 * DAY_MS), undefined).sweep();
      expect(off).toBe(0); // unset: keep everything
      expect(await sweeperAt(new Date(cutoff.getTime() + DAY_MS), 1).sweep()).toBe(1);
    } finally {
      stopReading();
    }

    const receipt = { threadId: old.threadId, runs: 1, audits: 2, toolCalls: 1, messages: 1 };
    expect(logged).toEqual([{ level: 'info', time: expect.any(String), msg: 'thread deleted', event: 'thread_deleted', reason: 'retention', ...receipt, verifiedAt: expect.any(String) }]);
    expect(await deletedByRetention()).toBe(countedBefore + 1);
    expect(await rowsLeft(t, old.threadId, [old.runId])).toEqual({});
    expect(errorCode(await old.session.toolFinished('c1', { ok: true }))).toBe('NOT_FOUND');
    for (const [token, threadId] of [[newer.owner, newerThread], [revived.owner, revivedThread]] as const) {
      const read = await t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: threadId }, token);
      expect(read.data.thread.id).toBe(threadId);
    }
  });

  it('a thread written to after the sweep chose it, before its mark, is kept', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const chosenAt = await latestChange(threadId);
    await databaseClockPast(chosenAt);
    must(await appendMessage(who.owner, threadId));
    // The sweep's page query is skipped here: the mark's recheck alone must keep it.
    const { markDeleted } = await import('../../src/domain/deletion.js');
    const cutoff = new Date(chosenAt.getTime() + 1);
    const due = async (thread: { id: string }, sql: { query: typeof t.app.db.sql.query }) =>
      (await sql.query<{ due: boolean }>(`SELECT ${LATEST_CHANGE('t')} < $2::timestamptz AS due FROM thread t WHERE t.id = $1::uuid`, [thread.id, cutoff]))[0]!.due;
    expect(await markDeleted(t.app.deps, threadId, due)).toBe(false);
    expect((await t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: threadId }, who.owner)).data.thread.id).toBe(threadId);
  });

  it.runIf(onPostgres)('sweeps on one instance at a time: a sweep finding the lock taken does nothing', async () => {
    const old = await runningRun(t);
    const far = new Date(Date.now() + 30 * DAY_MS);
    await t.app.db.driver.withSession(async (session) => {
      await session.query('SELECT pg_advisory_lock($1)', [RETENTION_LOCK_KEY]); // another instance sweeping
      try {
        expect(await sweeperAt(far, 1).sweep()).toBeNull();
      } finally {
        await session.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
      }
    });
    expect((await t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: old.threadId }, old.owner)).data.thread.id).toBe(old.threadId);
    expect(await sweeperAt(far, 1).sweep()).toBeGreaterThanOrEqual(1);
    expect(await rowsLeft(t, old.threadId, [old.runId])).toEqual({});
  });

  it("prunes the tool activity view's copies of ends older than its widest window, with or without RETENTION_DAYS; no view changes", async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    // Three ends by SQL, 8 days, a week and a minute, and 6 days before now; copied as they commit.
    await t.app.db.sql.query(
      `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, 'TOOL', 'tool_audit', 'op-' || ago, 'lookup', 'COMPLETED', 10 * ago,
         now() - make_interval(secs => ago + 1), now() - make_interval(secs => ago)
       FROM unnest(ARRAY[8 * 86400, 7 * 86400 + 60, 6 * 86400]) AS ago`,
      [threadId, runId],
    );
    const copies = async () =>
      (await t.app.db.sql.query<{ ago: number }>(
        `SELECT round(extract(epoch FROM now() - changed_at) / 86400)::int AS ago FROM tool_audit_end WHERE owner_id = $1 ORDER BY 1`,
        [who.ownerSub],
      )).map((row) => row.ago);
    const week = () => readOwnerToolActivity(t.app.db.sql, who.ownerSub, { windowSeconds: 604_800, name: null }).then((view) => view.tools);
    expect(await copies()).toEqual([6, 7, 8]);
    const before = await week();
    expect(before).toMatchObject([{ name: 'lookup', completed: 1, maxDurationMs: 6 * 86400 * 10 }]);

    expect(await sweeperAt(new Date(), undefined).sweep()).toBe(0);
    expect(await copies()).toEqual([6]);
    expect(await week()).toEqual(before);
  });

  // PostgreSQL's autovacuum makes deleted rows' space reusable there (docs/deletion.md; the bench
  // measures it). PGlite runs no autovacuum: the sweeper vacuums after deletions instead.
  it.runIf(!onPostgres)('on PGlite, the space a deletion freed is reused by the rows written after it', async () => {
    const seed = (title: string) => bulkSeed(sqlOverDriver(t.app.db.driver), { ownerSub: 'space-owner', threads: 1, auditsPerThread: 8000, title });
    const size = async () =>
      Number((await t.app.db.sql.query<{ bytes: string }>(`SELECT pg_relation_size('message') AS bytes`))[0]!.bytes);
    const [first] = await seed('first');
    const withFirst = await size();
    const owner = await t.token('space-owner', 'superadmin');
    const deleted = await t.gql(DELETE_THREAD, { id: first }, owner);
    expect(deleted.data.deleteThread.audits).toBe(8000);
    await t.app.retention.sweep();
    await seed('second');
    // Without the vacuum the second thread's rows would need as much space again.
    expect(await size()).toBeLessThan(withFirst * 1.2);
  }, 120_000); // two seeds of 8,000 audits and a deletion: 16 s alone, past 30 s on a loaded machine
});

