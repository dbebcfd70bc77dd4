import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { backendName, createScratchDatabase, onPostgres } from '../support/database.js';
import { actors, claim, createRun, createThread, type Actors } from '../support/lifecycle.js';
import { counterOf, subscribeSse, subscribeWs, THREAD_SNAPSHOT, waitFor, type Stream } from '../support/streams.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';

// SEMANTICS.md, "Change cursors": a cursor is valid only on the database that issued it; after a
// restore, one issued before it is BAD_USER_INPUT (issue 43 item 5: a stale cursor the restored
// thread had passed again was taken, and ~840 changes were silently skipped). Each cursor carries
// the id of its database (src/domain/database-identity.ts), renewed when the server starts on a
// copy or a restore. The restore: on PostgreSQL a copy of the database (CREATE DATABASE …
// TEMPLATE, as a restore into a new database), on PGlite a copy of its directory whose identity
// table is created again, as a logical restore (pg_dump, then psql) does.

const CHANGES = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status } run { id status } }
}`;

/** A copy of the storage as it is now (the apps on it stopped): the backup, restored. */
async function restoredCopy(storage: TestStorage): Promise<{ env: Record<string, string>; remove(): Promise<void>; afterStart?: (t: TestApp) => Promise<void> }> {
  if (onPostgres) {
    const name = new URL(storage.env.DATABASE_URL!).pathname.slice(1);
    const copy = await createScratchDatabase(undefined, name);
    return { env: { DATABASE_URL: copy.url, DATA_DIR: '' }, remove: copy.drop };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'audit-restored-'));
  cpSync(storage.env.DATA_DIR!, dataDir, { recursive: true });
  return {
    env: { DATABASE_URL: '', DATA_DIR: dataDir },
    remove: async () => rmSync(dataDir, { recursive: true, force: true }),
    // What a logical restore does to the identity table: creates it again, with its dumped row.
    afterStart: async (t) => {
      for (const statement of [
        'ALTER TABLE database_identity RENAME TO database_identity_dumped',
        'CREATE TABLE database_identity (LIKE database_identity_dumped INCLUDING ALL)',
        'INSERT INTO database_identity SELECT * FROM database_identity_dumped',
        'DROP TABLE database_identity_dumped',
      ]) {
        await t.app.db.sql.query(statement);
      }
    },
  };
}

async function snapshotCursor(t: TestApp, threadId: string, token: string): Promise<string> {
  const { data } = await t.gql(THREAD_SNAPSHOT, { threadId }, token);
  return data.threadAudits.cursor as string;
}

/** Model calls in a new run of the thread until its counter is past `counter`. */
async function writeUntilPast(t: TestApp, who: Actors, threadId: string, counter: bigint) {
  const runId = await createRun(t, who.owner, threadId);
  const session = await claim(t, who.worker, runId);
  for (let i = 0; counterOf(await snapshotCursor(t, threadId, who.owner)) <= counter; i++) await session.declare(`m${i}`, []);
}

/** Starts an app on this database, which outlives it. */
const on = (env: Record<string, string>): TestStorage => ({ env, describe: 'restored', remove: async () => {} });

const errorsOf = (stream: Stream) =>
  stream.ending?.kind === 'error' ? (stream.ending.error as GraphQLResponse['errors']) : stream.results[0]?.errors;

describe(`change cursors after a restore (${backendName})`, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function started(env: Record<string, string>) {
    const t = await startTestApp({ REDIS_URL: '' }, { storage: on(env) });
    const url = await t.app.start(0);
    return { t, url };
  }

  it('refuses a cursor from before the restore with BAD_USER_INPUT over graphql-ws and SSE, after the restored thread passed it again', async () => {
    const storage = await createTestStorage();
    cleanups.push(() => storage.remove());

    // The original database: a thread with a few changes, then the backup.
    const first = await started(storage.env);
    const who = await actors(first.t);
    const threadId = await createThread(first.t, who.owner);
    await (await claim(first.t, who.worker, await createRun(first.t, who.owner, threadId))).declare('m0', []);
    const beforeBackup = await snapshotCursor(first.t, threadId, who.owner);
    await first.t.close();
    const backup = await restoredCopy(storage);
    cleanups.push(() => backup.remove());

    // The original lives on (restarted: the same database, its cursors still good) and moves ahead.
    const original = await started(storage.env);
    const stillGood = subscribeWs(original.url, CHANGES, { threadId, after: beforeBackup }, who.owner);
    onTestFinished(() => stillGood.close());
    await waitFor(() => original.t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the cursor from before the restart to be taken');
    await stillGood.close();
    await writeUntilPast(original.t, who, threadId, counterOf(beforeBackup) + 3n);
    const stale = await snapshotCursor(original.t, threadId, who.owner);
    await original.t.close();

    // The restore, then writes that take the restored thread past the stale cursor's counter.
    let restored = await started(backup.env);
    if (backup.afterStart) {
      await backup.afterStart(restored.t);
      await restored.t.close();
      restored = await started(backup.env);
    }
    cleanups.push(() => restored.t.close());
    await writeUntilPast(restored.t, who, threadId, counterOf(stale));

    const refusals = [
      subscribeWs(restored.url, CHANGES, { threadId, after: stale }, who.owner),
      await subscribeSse(restored.t.app, CHANGES, { threadId, after: stale }, who.owner),
    ];
    for (const stream of refusals) {
      onTestFinished(() => stream.close());
      await stream.ended();
      expect(errorsOf(stream)?.[0]?.extensions?.code, stream.label).toBe('BAD_USER_INPUT');
      expect(errorsOf(stream)?.[0]?.message, stream.label).toMatch(/another database, or from this one before a restore/);
    }
    // As an EventSource resumes: the cursor in Last-Event-ID.
    const url = new URL(restored.url);
    url.searchParams.set('query', CHANGES);
    url.searchParams.set('variables', JSON.stringify({ threadId }));
    const controller = new AbortController();
    onTestFinished(() => controller.abort());
    const response = await fetch(url, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${who.owner}`, 'last-event-id': stale },
      signal: controller.signal,
    });
    expect(await response.text()).toContain('BAD_USER_INPUT');
    expect(restored.t.app.pubsub.subscriberCount('changes', threadId)).toBe(0);

    // A cursor read from the restored database is good there.
    const fresh = subscribeWs(restored.url, CHANGES, { threadId, after: await snapshotCursor(restored.t, threadId, who.owner) }, who.owner);
    onTestFinished(() => fresh.close());
    await waitFor(() => restored.t.app.pubsub.subscriberCount('changes', threadId) === 1, 'a fresh cursor to be taken');
    // A cursor from before cursors named their database is still taken as it was (old clients).
    const legacy = Buffer.from(`${threadId}:${counterOf(beforeBackup)}`).toString('base64url');
    const old = subscribeWs(restored.url, CHANGES, { threadId, after: legacy }, who.owner);
    onTestFinished(() => old.close());
    await waitFor(() => restored.t.app.pubsub.subscriberCount('changes', threadId) === 2, 'a cursor without a database id to be taken');
  });

  it.runIf(onPostgres)('instances starting together on a restored database agree on its new id', async () => {
    const storage = await createTestStorage();
    cleanups.push(() => storage.remove());
    const backup = await restoredCopy(storage);
    cleanups.push(() => backup.remove());
    const [a, b] = await Promise.all([startTestApp({ REDIS_URL: '' }, { storage: on(backup.env) }), startTestApp({ REDIS_URL: '' }, { storage: on(backup.env) })]);
    cleanups.push(() => a!.close(), () => b!.close());
    const client = new pg.Client({ connectionString: backup.env.DATABASE_URL });
    await client.connect();
    const { rows } = await client.query('SELECT database_id FROM database_identity');
    await client.end();
    expect(a!.app.deps.databaseId).toBe(rows[0].database_id);
    expect(b!.app.deps.databaseId).toBe(rows[0].database_id);
    const original = await startTestApp({ REDIS_URL: '' }, { storage });
    cleanups.push(() => original.close());
    expect(original.app.deps.databaseId).not.toBe(rows[0].database_id);
  });
});
