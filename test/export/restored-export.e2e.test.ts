// docs/operations.md, "Backup and restore": a restored database holds the threads deleted since
// the backup, and its export positions are the backup's, so those threads are pending export
// again. The first start on a restored database holds the export until the operator, having
// deleted them again (redo-deletions.ts), releases it: nothing of a deleted thread reaches the
// tracing back end meanwhile. Servers as processes; a real backup of either backend (pg_dump and
// pg_restore on PostgreSQL, the documented copy of DATA_DIR on the embedded PGlite).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName, createScratchDatabase, onPostgres } from '../support/database.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { gqlAt as gql, jsonLines, killServers, runAsWritten, startServer, tokenFor, type ServerProcess } from '../e2e/support/server.js';

/** docs/operations.md's commands, as written (the code-blocks test checks they are here); run by bash with the values in place. */
const REDO =
  'AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/redo-deletions.ts <when the backup started> <server logs since then>...';
const RELEASE_POSTGRES = 'DATABASE_URL=<the restored database> npx tsx scripts/release-export.ts';
const RELEASE_EMBEDDED = 'DATA_DIR=<data directory> npx tsx scripts/release-export.ts';
const BACKUP_EMBEDDED = 'DATA_DIR=<data directory> npx tsx scripts/backup-data-dir.ts <backup directory>';
const RESTORE_EMBEDDED = 'cp -R <backup directory> <new data directory>';

const scratch = mkdtempSync(join(tmpdir(), 'audit-restored-export-'));
const cleanups: (() => Promise<unknown>)[] = [];
let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await killServers();
  await receiver?.close();
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

const ofThread = (threadId: string) => (span: ReceivedSpan) => span.attributes['gen_ai.conversation.id'] === threadId;
const said = (server: ServerProcess, msg: RegExp) => jsonLines(server).some((line) => msg.test(line.msg));
/** What the start banner says of the export (main.ts): its `export` field. */
const bannerExport = (server: ServerProcess) => jsonLines(server).find((line) => /^Agent audit server listening/.test(line.msg))?.export;
const metrics = async (server: ServerProcess) => (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();

/** A thread with a run that ended (cancelled): one span to export. */
async function threadWithRun(url: string, owner: string, title: string) {
  const threadId = (await gql(url, owner, `mutation($title: String) { createThread(input: { title: $title }) { id } }`, { title })).data.createThread.id as string;
  const runId = (await gql(url, owner, `mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }`, { t: threadId })).data.createRun.id as string;
  expect((await gql(url, owner, `mutation($r: ID!) { cancelRun(runId: $r) { status } }`, { r: runId })).data.cancelRun.status).toBe('CANCELLED');
  return { threadId, runId };
}

describe(`the export of a restored database (${backendName}, server processes)`, () => {
  it('holds until the operator has deleted again what was deleted since the backup and releases it: the deleted thread never goes out, the rest does', async () => {
    const [owner, admin, worker] = await Promise.all([tokenFor('restored-export-owner', 'user'), tokenFor('ops', 'admin'), tokenFor('restored-export-worker', 'worker')]);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' };
    // The export is behind when the backup is taken (its receiver down): both threads are pending in the backup.
    receiver.failWith = 503;
    const storage = await createTestStorage();
    cleanups.push(() => storage.remove());
    let original = await startServer(storage, env);
    const kept = await threadWithRun(original.url, owner, 'kept');
    const gone = await threadWithRun(original.url, owner, 'deleted after the backup');
    // A run going at the backup: the restore fences its lease.
    const goingThread = (await gql(original.url, owner, `mutation { createThread(input: { title: "going" }) { id } }`)).data.createThread.id as string;
    const going = (await gql(original.url, owner, `mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }`, { t: goingThread })).data.createRun.id as string;
    expect((await gql(original.url, worker, `mutation($r: ID!) { claimRun(input: { runId: $r, leaseSeconds: 600 }) { epoch } }`, { r: going })).errors).toBeUndefined();

    const backupStarted = new Date().toISOString();
    let restored: TestStorage;
    const backupDir = join(scratch, 'backup');
    const dump = join(scratch, 'audit.dump');
    if (onPostgres) {
      execFileSync('pg_dump', ['-Fc', '-f', dump, storage.env.DATABASE_URL!]);
    } else {
      await original.stop();
      const backup = await runAsWritten(BACKUP_EMBEDDED, { '<data directory>': storage.env.DATA_DIR!, '<backup directory>': backupDir });
      expect(backup.code, backup.output).toBe(0);
      original = await startServer(storage, env);
    }
    expect((await gql(original.url, admin, `mutation($id: ID!) { deleteThread(id: $id) { threadId } }`, { id: gone.threadId })).errors).toBeUndefined();
    await original.stop();
    const log = join(scratch, 'server.log');
    writeFileSync(log, original.output());

    if (onPostgres) {
      const target = await createScratchDatabase();
      cleanups.push(() => target.drop());
      execFileSync('pg_restore', ['--exit-on-error', '-d', target.url, dump]);
      restored = { env: { DATABASE_URL: target.url, DATA_DIR: '' }, describe: 'restored', remove: async () => {} };
    } else {
      const restoredDir = join(scratch, 'restored');
      const copied = await runAsWritten(RESTORE_EMBEDDED, { '<backup directory>': backupDir, '<new data directory>': restoredDir });
      expect(copied.code, copied.output).toBe(0);
      restored = { env: { DATABASE_URL: '', DATA_DIR: restoredDir }, describe: 'restored', remove: async () => {} };
    }

    // The receiver is back: the restored server, started with the export configured, holds it.
    receiver.failWith = null;
    let server = await startServer(restored, env);
    await expect.poll(() => said(server, /^export held/) || receiver.spans.some(ofThread(gone.threadId)), { timeout: 30_000 }).toBe(true);
    expect(receiver.spans.filter(ofThread(gone.threadId)), 'the deleted thread went out again before the operator could act').toEqual([]);
    expect(receiver.spans).toEqual([]);
    expect(await metrics(server)).toMatch(/^agent_audit_export_held 1$/m);
    // An operator reading the start banner is told it is held, not 'on'.
    expect(bannerExport(server)).toMatch(/^held since \S+ \(a restored database: release with scripts\/release-export\.ts\)$/);
    expect(jsonLines(server).find((line) => /^this database is a restore or a copy/.test(line.msg))).toMatchObject({ level: 'warn', fencedRuns: 1, fencedRunIds: [going] });
    // The thread deleted after the backup is back: readable until it is deleted again.
    expect((await gql(server.url, owner, `query($id: ID!) { thread(id: $id) { id } }`, { id: gone.threadId })).data.thread).toEqual({ id: gone.threadId });

    const redo = await runAsWritten(REDO, { '<admin or superadmin token>': admin, '<when the backup started>': backupStarted, '<server logs since then>...': log }, { AUDIT_URL: server.url });
    expect(redo.code, redo.output).toBe(0);
    expect(redo.output).toContain(`"threadId":"${gone.threadId}"`);

    let release: Awaited<ReturnType<typeof runAsWritten>>;
    if (onPostgres) {
      // While the instances serve: each one's exporter finds the hold gone at its next poll.
      release = await runAsWritten(RELEASE_POSTGRES, { '<the restored database>': restored.env.DATABASE_URL! });
    } else {
      // The embedded database is one process's: released while its server is stopped. While it
      // runs, the release is refused with what to do, and nothing changes.
      const running = await runAsWritten(RELEASE_EMBEDDED, { '<data directory>': restored.env.DATA_DIR! }, { DATABASE_URL: '' });
      expect(running.code, running.output).toBe(1);
      expect(running.output).toMatch(/^cannot release the export: a server runs on \S+ \(process \d+\): stop it, release, then start it again$/m);
      expect(await metrics(server)).toMatch(/^agent_audit_export_held 1$/m);
      await server.stop();
      release = await runAsWritten(RELEASE_EMBEDDED, { '<data directory>': restored.env.DATA_DIR! }, { DATABASE_URL: '' });
    }
    expect(release.code, release.output).toBe(0);
    expect(release.output).toMatch(/^the export was held since \S+ \(a start on a restored database\): released$/m);
    if (!onPostgres) {
      server = await startServer(restored, env);
      expect(bannerExport(server)).toBe('on');
    }

    await receiver.waitFor((spans) => spans.some((span) => span.attributes['agent_audit.run.id'] === kept.runId), 30_000);
    expect(receiver.spans.filter(ofThread(gone.threadId))).toEqual([]);
    expect(await metrics(server)).toMatch(/^agent_audit_export_held 0$/m);
    if (onPostgres) expect(said(server, /^export hold released/)).toBe(true);

    // Run again: nothing left to release.
    const again = onPostgres
      ? await runAsWritten(RELEASE_POSTGRES, { '<the restored database>': restored.env.DATABASE_URL! })
      : (await server.stop(), await runAsWritten(RELEASE_EMBEDDED, { '<data directory>': restored.env.DATA_DIR! }, { DATABASE_URL: '' }));
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain('the export is not held');
  }, 300_000);
});
