import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { createScratchDatabase, postgresSuiteRuns } from '../support/database.js';
import { actors, claim, createRun, createThread, must, THREAD_AUDITS, WorkerSession } from '../support/lifecycle.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';

// docs/operations.md, "Backup and restore", as an operator runs it: pg_dump of a live server,
// then pg_restore (custom format) or psql (plain) into a new database, and a server started on it.

const dumps = mkdtempSync(join(tmpdir(), 'audit-backup-'));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dumps, { recursive: true, force: true });
});

/** pg_dump of the database at `url` in `format` (c: custom, p: plain), as its file. */
function dump(url: string, format: 'c' | 'p'): string {
  const file = join(dumps, `${Date.now()}-${format}.dump`);
  execFileSync('pg_dump', [`--format=${format}`, '--file', file, url]);
  return file;
}

/** A new, empty database holding `file` (pg_restore for custom format, psql for plain), as a storage. */
async function restore(file: string, format: 'c' | 'p'): Promise<TestStorage> {
  const target = await createScratchDatabase();
  cleanups.push(() => target.drop());
  if (format === 'c') execFileSync('pg_restore', ['--exit-on-error', '-d', target.url, file]);
  else execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', target.url, '-f', file], { stdio: 'ignore' });
  return { env: { DATABASE_URL: target.url, DATA_DIR: '' }, describe: 'restored', remove: async () => {} };
}

async function started(storage: TestStorage): Promise<TestApp> {
  const t = await startTestApp({ REDIS_URL: '' }, { storage });
  cleanups.push(() => t.close());
  return t;
}

describe.runIf(postgresSuiteRuns('backup-restore', 'pg_dump and pg_restore need PostgreSQL'))('backup and restore with pg_dump (PostgreSQL)', () => {
  it('fences a run whose lease the backup holds: its worker, writing on after the restore, gets LEASE_LOST and the run ends LEASE_EXPIRED, not COMPLETED with the events the restore lost', async () => {
    const storage = await createTestStorage('postgres');
    cleanups.push(() => storage.remove());
    const original = await started(storage);
    const who = await actors(original);
    const threadId = await createThread(original, who.owner);
    const runId = await createRun(original, who.owner, threadId);
    const worker = await claim(original, who.worker, runId, 600);
    await worker.declare('m0', [{ id: 'c1', name: 'search' }]);

    const backup = dump(storage.env.DATABASE_URL!, 'c');
    // Acknowledged by the original database, after the backup: the restore loses them.
    must(await worker.toolStarted('c1', 'search'));
    must(await worker.toolFinished('c1', { hits: 3 }));
    await original.close();

    const restored = await started(await restore(backup, 'c'));
    // The same worker, its lease (600 s) not expired by the clock, goes on with its run.
    const same = new WorkerSession(restored, who.worker, worker.lease);
    expect(errorCode(await same.modelStarted('m1', { sequence: '10' }))).toBe('LEASE_LOST');
    expect(errorCode(await same.finish('COMPLETED'))).toBe('LEASE_LOST');
    // The server's lease sweep (every 200 ms here) ends it.
    const run = async () => (await restored.gql(`query($id: ID!) { run(id: $id) { status error } }`, { id: runId }, who.owner)).data.run;
    await expect.poll(run).toMatchObject({ status: 'FAILED', error: { code: 'LEASE_EXPIRED' } });
    const audits = must(await restored.gql(THREAD_AUDITS.replace('threadAudits(', 'result: threadAudits('), { threadId }, who.owner));
    expect(audits.items.map((a: { __typename: string; status: string }) => `${a.__typename} ${a.status}`)).toEqual(['ModelAudit COMPLETED']);
  });

  it('fences the leases after a physical restore too, once the operator marks the database as a copy (UPDATE database_identity SET database_oid = 0)', async () => {
    const storage = await createTestStorage('postgres');
    cleanups.push(() => storage.remove());
    const before = await started(storage);
    const who = await actors(before);
    const runId = await createRun(before, who.owner, await createThread(before, who.owner));
    const worker = await claim(before, who.worker, runId, 600);
    await worker.declare('m0', []);
    await before.close();
    // A physical restore keeps both OIDs: without the mark, the same worker writes on.
    const unmarked = await started(storage);
    must(await new WorkerSession(unmarked, who.worker, worker.lease).modelStarted('m1', { sequence: '10' }));
    await unmarked.app.db.sql.query('UPDATE database_identity SET database_oid = 0');
    const previousId = unmarked.app.deps.databaseId;
    await unmarked.close();

    const after = await started(storage);
    expect(after.app.deps.databaseId).not.toBe(previousId);
    expect(errorCode(await new WorkerSession(after, who.worker, worker.lease).modelStarted('m2', { sequence: '11' }))).toBe('LEASE_LOST');
  });

  it('a plain pg_dump taken under writes, restored with psql: each thread reads whole, the incident window finds exactly its audits, resumes bind to their ancestors, new writes go on', async () => {
    const storage = await createTestStorage('postgres');
    cleanups.push(() => storage.remove());
    const original = await started(storage);
    const who = await actors(original);
    // A run interrupted after its model declared c0: its resume, later, runs c0.
    const interruptedThread = await createThread(original, who.owner);
    const interrupted = await createRun(original, who.owner, interruptedThread);
    const first = await claim(original, who.worker, interrupted);
    await first.declare('m0', [{ id: 'c0', name: 'lookup' }]);
    must(await first.finish('INTERRUPTED'));
    const windowStart = new Date(Date.now() - 60_000).toISOString();

    // Writers in three threads, while pg_dump runs.
    const threads = [interruptedThread, await createThread(original, who.owner), await createThread(original, who.owner)];
    let stop = false;
    let written = 0;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const session = await claim(original, who.worker, await createRun(original, who.owner, threads[i % 3]!));
        await session.declare(`m${i}`, [{ id: `w${i}`, name: 'lookup' }]);
        must(await session.toolStarted(`w${i}`, 'lookup'));
        must(await session.toolFinished(`w${i}`, { found: i }));
        must(await session.finish('COMPLETED'));
        written++;
      }
    })();
    // Two runs of six writes each: seconds on a loaded machine, past the polls' usual 10 s.
    await expect.poll(() => written, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
    const file = join(dumps, 'under-writes.sql');
    await promisify(execFile)('pg_dump', ['--format=p', '--file', file, storage.env.DATABASE_URL!]);
    stop = true;
    await writer;
    await original.close();

    const restored = await started(await restore(file, 'p'));
    const auditIds = new Set<string>();
    for (const threadId of threads) {
      const { items, truncated } = must(await restored.gql(THREAD_AUDITS.replace('threadAudits(', 'result: threadAudits('), { threadId, limit: 500 }, who.owner));
      expect(truncated).toBe(false);
      for (const audit of items) {
        auditIds.add(audit.id);
        // No half-written run: every tool audit has its declaring model call, every audit its ended state.
        if (audit.__typename === 'ToolAudit') expect(audit.declaredBy, audit.toolCallId).not.toBeNull();
      }
    }
    // The incident window (recorded time) finds exactly the restored audits of these threads.
    const windowed = new Set<string>();
    for (let after: string | null = null; ; ) {
      const searchAudits: { hasMore: boolean; items: { audit: { id: string } }[] } = must(
        await restored.gql(
          `query($since: DateTime!, $until: DateTime!, $after: ID) { result: searchAudits(since: $since, until: $until, first: 100, after: $after) { hasMore items { audit { id } } } }`,
          { since: windowStart, until: new Date(Date.now() + 60_000).toISOString(), after },
          who.owner,
        ),
      );
      for (const item of searchAudits.items) windowed.add(item.audit.id);
      if (!searchAudits.hasMore) break;
      after = searchAudits.items.at(-1)!.audit.id;
    }
    expect(windowed).toEqual(auditIds);

    // A resume of the interrupted run, started on the restored database, runs c0: bound to m0.
    const resume = must(await restored.gql(`mutation($t: ID!, $from: ID) { result: createRun(input: { threadId: $t, resumeFromRunId: $from }) { id } }`, { t: interruptedThread, from: interrupted }, who.owner));
    const session = await claim(restored, who.worker, resume.id);
    const started0 = must(await session.toolStarted('c0', 'lookup'));
    expect(auditIds.has(started0.id)).toBe(false);
    const after = must(await restored.gql(THREAD_AUDITS.replace('threadAudits(', 'result: threadAudits('), { threadId: interruptedThread, limit: 500 }, who.owner));
    expect(after.items.find((audit: { id: string }) => audit.id === started0.id).declaredBy.operationId).toBe('m0');
    const ledger = must(await restored.gql(`query($t: ID!) { result: toolCallLedger(threadId: $t, first: 100) { edges { node { toolCallId status } } } }`, { t: interruptedThread }, who.owner));
    expect(ledger.edges.find((edge: { node: { toolCallId: string } }) => edge.node.toolCallId === 'c0').node.status).toBe('RUNNING');
  }, 120_000);
});
