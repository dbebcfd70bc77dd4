import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { exportFailures } from '../../src/metrics.js';

const failures = async () => (await exportFailures.get()).values.reduce((sum, value) => sum + value.value, 0);
let failuresSeen = 0;

/** Polls `condition` (after refreshing what it reads) until it holds. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000, refresh: () => Promise<unknown> = async () => {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await refresh();
    if (condition()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/*
 * A commit that lands late is not skipped (src/export/queue.ts). The exporter has read a thread's
 * changes and sent them while another change of the thread is still committing: the release must
 * wait for that commit and keep the thread pending, or the late change is never exported. Only
 * PostgreSQL has concurrent sessions (PGlite runs one statement after another, so nothing can
 * commit while the exporter releases).
 */
describe.skipIf(!onPostgres)('a change committing while the exporter releases its thread (PostgreSQL)', () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  let late: pg.Client;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    await receiver.down();
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TIMEOUT: '500', EXPORT_POLL_MS: '50' });
    late = new pg.Client({ connectionString: t.config.databaseUrl });
    await late.connect();
  });
  afterAll(async () => {
    await late?.end();
    await t?.close();
    await receiver?.close();
  });

  it('is exported after the release waited for it', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    const failuresBefore = await failures();
    must(await (await claim(t, who.worker, runId)).finish('COMPLETED'));
    // The exporter has read the finished run (and failed to send it): its next read sees the same cursor.
    await waitFor(() => failuresSeen > failuresBefore, 'an export attempt with the finished run', 20_000, async () => (failuresSeen = await failures()));

    // A change of the same thread that has bumped the cursor (as every write does) but not committed yet.
    const lateRunId = randomUUID();
    await late.query('BEGIN');
    const [{ change_cursor: cursor }] = (
      await late.query('UPDATE thread SET change_cursor = change_cursor + 1 WHERE id = $1 RETURNING change_cursor', [threadId])
    ).rows;
    await late.query(
      `INSERT INTO run (id, thread_id, status, started_at, finished_at, change_cursor, changed_at)
       VALUES ($1, $2, 'COMPLETED', now(), now(), $3, clock_timestamp())`,
      [lateRunId, threadId, cursor],
    );

    await receiver.up();
    await waitFor(() => receiver.spans.some((span) => span.attributes['agent_audit.run.id'] === runId), 'the first run exported', 20_000);
    // Sent, but the release is waiting for the late commit: the position has not moved.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [held] = await t.app.db.driver.query<{ cursor: string }>(
      'SELECT exported_cursor::text AS cursor FROM export_position WHERE thread_id = $1',
      [threadId],
    );
    expect(BigInt(held?.cursor ?? 0)).toBeLessThan(BigInt(cursor) - 1n); // the finished run's change is not yet recorded as exported

    await late.query('COMMIT');
    await waitFor(() => receiver.spans.some((span) => span.attributes['agent_audit.run.id'] === lateRunId), 'the late run exported', 20_000);
    // Then the position moves past it, and the thread has nothing left pending.
    const positionOf = async () =>
      (await t.app.db.driver.query<{ cursor: string }>('SELECT exported_cursor::text AS cursor FROM export_position WHERE thread_id = $1', [threadId]))[0]?.cursor;
    const deadline = Date.now() + 10_000;
    while ((await positionOf()) !== String(cursor) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await positionOf()).toBe(String(cursor));
  });
});
