import { execFileSync } from 'node:child_process';
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
});
