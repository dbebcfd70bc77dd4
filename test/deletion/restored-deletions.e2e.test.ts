// docs/operations.md, "Backup and restore": a thread deleted after the backup comes back with the
// restore; examples/operations/redo-deletions.ts deletes again what the servers' logs say was
// deleted since the backup started. A real pg_dump -Fc and pg_restore, servers as processes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, postgresSuiteRuns } from '../support/database.js';
import { createTestStorage } from '../support/storage.js';
import { gqlAt as gql, killServers, runAsWritten, startServer, tokenFor } from '../e2e/support/server.js';

/** docs/operations.md's command, as written (the code-blocks test checks it is here); run by bash with the values in place. */
const REDO =
  'AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/redo-deletions.ts <when the backup started> <server logs since then>...';

const scratch = mkdtempSync(join(tmpdir(), 'audit-redo-deletions-'));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await killServers();
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

const CREATE = `mutation($title: String) { createThread(input: { title: $title }) { id } }`;
const READ = `query($id: ID!) { thread(id: $id) { id title } }`;

describe.runIf(postgresSuiteRuns('restored-deletions', 'pg_dump and pg_restore need PostgreSQL'))('deletions made after a backup, after its restore', () => {
  it('the thread deleted after the backup is back after the restore; the documented command deletes it again from the logs, and only it', async () => {
    const [owner, admin] = await Promise.all([tokenFor('restore-owner', 'user'), tokenFor('ops', 'admin')]);
    const storage = await createTestStorage('postgres');
    cleanups.push(() => storage.remove());
    const original = await startServer(storage);
    const kept = (await gql(original.url, owner, CREATE, { title: 'kept' })).data.createThread.id as string;
    const gone = (await gql(original.url, owner, CREATE, { title: 'deleted after the backup' })).data.createThread.id as string;
    const deletedBefore = (await gql(original.url, owner, CREATE, { title: 'deleted before the backup' })).data.createThread.id as string;
    expect((await gql(original.url, admin, `mutation($id: ID!) { deleteThread(id: $id) { threadId } }`, { id: deletedBefore })).errors).toBeUndefined();

    const backupStarted = new Date().toISOString();
    const dump = join(scratch, 'audit.dump');
    execFileSync('pg_dump', ['-Fc', '-f', dump, storage.env.DATABASE_URL!]);
    expect((await gql(original.url, admin, `mutation($id: ID!) { deleteThread(id: $id) { threadId } }`, { id: gone })).errors).toBeUndefined();
    await original.stop();
    const log = join(scratch, 'server.log');
    writeFileSync(log, original.output());

    const target = await createScratchDatabase();
    cleanups.push(() => target.drop());
    execFileSync('pg_restore', ['--exit-on-error', '-d', target.url, dump]);
    const restored = await startServer({ env: { DATABASE_URL: target.url, DATA_DIR: '' }, describe: 'restored', remove: async () => {} });
    // What the restore alone gives: the deleted thread, readable again.
    expect((await gql(restored.url, owner, READ, { id: gone })).data.thread).toEqual({ id: gone, title: 'deleted after the backup' });

    const redo = () => runAsWritten(REDO, { '<admin or superadmin token>': admin, '<when the backup started>': backupStarted, '<server logs since then>...': log }, { AUDIT_URL: restored.url });
    const { code, output } = await redo();
    expect(code, output).toBe(0);
    const receipts = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { threadId: string; verifiedAt?: string });
    expect(receipts.map((receipt) => receipt.threadId)).toEqual([gone]);
    expect(receipts[0]!.verifiedAt).toBeTruthy();
    expect((await gql(restored.url, owner, READ, { id: gone })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gql(restored.url, owner, READ, { id: kept })).data.thread).toEqual({ id: kept, title: 'kept' });

    // Run again (interrupted, or two logs naming one deletion): what is gone already is said so.
    const again = await redo();
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain(`${gone}: already gone`);
  }, 180_000);
});
