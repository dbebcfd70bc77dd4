// docs/operations.md, "Backup and restore", the embedded default: DATA_DIR is PGlite's files, which
// a running server writes at any moment (a copy taken then is files of different moments, as
// PostgreSQL's file-level backups are); the documented command backs it up only while no server
// holds it, and a server started on a copy of the backup takes it for a restore.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestStorage } from '../support/storage.js';
import { e2eActors, gqlAt as gql, jsonLines, killServers, runAsWritten, startServer, type ServerProcess } from './support/server.js';

/** docs/operations.md's commands, as written (the code-blocks test checks they are there); run by bash with the values in place. */
const BACKUP = 'DATA_DIR=<data directory> npx tsx scripts/backup-data-dir.ts <backup directory>';
const RESTORE = 'cp -R <backup directory> <new data directory>';
/** docs/operations.md: a copy not made by the backup command is marked by backing it up with it. */
const MARK_COPY = 'DATA_DIR=<unmarked copy> npx tsx scripts/backup-data-dir.ts <backup directory>';

const scratch = mkdtempSync(join(tmpdir(), 'audit-embedded-backup-'));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await killServers();
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

const SNAPSHOT = `query($id: ID!) { thread(id: $id) { title } threadAudits(threadId: $id) { cursor items { __typename status } } }`;
const MODEL_STARTED = `mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }`;
/** A server on a new embedded database, with a thread whose run a worker holds for 600 s; `modelStarted` is that worker's next event. */
async function runGoing(title: string) {
  const storage = await createTestStorage('embedded');
  cleanups.push(() => storage.remove());
  const who = await e2eActors();
  const server = await startServer(storage);
  const threadId = (await gql(server.url, who.owner, `mutation($title: String) { createThread(input: { title: $title }) { id } }`, { title })).data.createThread.id as string;
  const runId = (await gql(server.url, who.owner, `mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }`, { t: threadId })).data.createRun.id as string;
  const lease = (await gql(server.url, who.worker, `mutation($r: ID!) { claimRun(input: { runId: $r, leaseSeconds: 600 }) { runId epoch } }`, { r: runId })).data.claimRun;
  const modelStarted = (operationId: string, sequence: number) => ({ input: { lease, operationId, sequence: String(sequence), observedAt: new Date().toISOString() } });
  return { storage, who, server, threadId, modelStarted };
}
const tookForRestore = (server: ServerProcess) => jsonLines(server).some((line) => /^this database is a restore or a copy/.test(line.msg));

describe('backing up the embedded database (DATA_DIR)', () => {
  it('refuses while a server runs on it; once stopped, backs it up, and a server on a copy of the backup has the data, refuses later cursors and fences the leases', async () => {
    const { storage, who, server, threadId, modelStarted } = await runGoing('before the backup');
    const dataDir = storage.env.DATA_DIR!;
    const backupDir = join(scratch, 'backup');
    expect((await gql(server.url, who.worker, MODEL_STARTED, modelStarted('m0', 1))).errors).toBeUndefined();

    // While the server runs: refused, nothing written.
    const whileRunning = await runAsWritten(BACKUP, { '<data directory>': dataDir, '<backup directory>': backupDir });
    expect(whileRunning.code, whileRunning.output).toBe(1);
    expect(whileRunning.output).toMatch(/in use by another server \(process \d+\)/);
    expect(existsSync(backupDir)).toBe(false);

    await server.stop();
    const stopped = await runAsWritten(BACKUP, { '<data directory>': dataDir, '<backup directory>': backupDir });
    expect(stopped.code, stopped.output).toBe(0);
    // Not the server's mark (these servers take AUTH_JWT_SECRET: no generated secret to copy).
    expect(readdirSync(backupDir)).toEqual(['pglite']);

    // The original goes on after the backup: a change the restore will not have.
    const after = await startServer(storage);
    expect((await gql(after.url, who.worker, MODEL_STARTED, modelStarted('m1', 2))).errors).toBeUndefined();
    const later = (await gql(after.url, who.owner, SNAPSHOT, { id: threadId })).data.threadAudits.cursor as string;
    await after.stop();

    const restoredDir = join(scratch, 'restored');
    const copied = await runAsWritten(RESTORE, { '<backup directory>': backupDir, '<new data directory>': restoredDir });
    expect(copied.code, copied.output).toBe(0);
    const restored = await startServer({ env: { DATABASE_URL: '', DATA_DIR: restoredDir }, describe: 'restored', remove: async () => {} });
    const { data } = await gql(restored.url, who.owner, SNAPSHOT, { id: threadId });
    expect(data.thread.title).toBe('before the backup');
    // m0 alone (m1 came after the backup), RUNNING or, once the fenced run's lease is swept, ABANDONED.
    expect(data.threadAudits.items).toHaveLength(1);
    // A cursor from after the backup: refused, not taken as a position the restored thread passes again.
    const url = new URL(restored.url);
    url.searchParams.set('query', `subscription($t: ID!, $after: String) { threadChanges(threadId: $t, after: $after) { cursor } }`);
    url.searchParams.set('variables', JSON.stringify({ t: threadId, after: later }));
    const refused = await fetch(url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${who.owner}` } });
    const refusal = await refused.text();
    expect(refusal).toContain('"code":"BAD_USER_INPUT"');
    expect(refusal).toContain('comes from another database, or from this one before a restore');
    // The worker that wrote m1 after the backup: fenced.
    expect((await gql(restored.url, who.worker, MODEL_STARTED, modelStarted('m2', 3))).errors?.[0]?.extensions?.code).toBe('LEASE_LOST');
    await restored.stop();
  }, 240_000);

  it('a copy made otherwise (cp -R of a stopped DATA_DIR) is not told from the original; backed up with the documented command, its restore is', async () => {
    const { storage, who, server, modelStarted } = await runGoing('copied');
    await server.stop();
    const copy = join(scratch, 'plain-copy');
    execFileSync('cp', ['-R', storage.env.DATA_DIR!, copy]);

    // PGlite's OIDs are the same in every copy: the copy keeps the database id, the lease goes on.
    const unmarked = await startServer({ env: { DATABASE_URL: '', DATA_DIR: copy }, describe: 'unmarked copy', remove: async () => {} });
    expect((await gql(unmarked.url, who.worker, MODEL_STARTED, modelStarted('m0', 1))).errors).toBeUndefined();
    expect(tookForRestore(unmarked)).toBe(false);
    await unmarked.stop();

    const backupDir = join(scratch, 'marked');
    const marked = await runAsWritten(MARK_COPY, { '<unmarked copy>': copy, '<backup directory>': backupDir });
    expect(marked.code, marked.output).toBe(0);
    const restoredDir = join(scratch, 'restored-from-marked');
    const copied = await runAsWritten(RESTORE, { '<backup directory>': backupDir, '<new data directory>': restoredDir });
    expect(copied.code, copied.output).toBe(0);
    const restored = await startServer({ env: { DATABASE_URL: '', DATA_DIR: restoredDir }, describe: 'restored', remove: async () => {} });
    expect(tookForRestore(restored)).toBe(true);
    expect((await gql(restored.url, who.worker, MODEL_STARTED, modelStarted('m1', 2))).errors?.[0]?.extensions?.code).toBe('LEASE_LOST');
    await restored.stop();
  }, 240_000);
});
