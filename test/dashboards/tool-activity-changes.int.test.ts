import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedOwners, pollToolAuditChanges, type ToolAuditChangeCount, type ToolAuditChangePoll } from '../../src/domain/tool-activity-changes.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';

// Dashboards without Redis (docs/dashboards.md, "Cadence"): an instance polls its dashboards'
// owners' tool-audit changes and wakes only the owners whose counts after the previous bound moved.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** Polls like pubsub.ts does: each poll compared with the counts the previous one kept. */
function poller(owners: string[]) {
  let previous: { poll: ToolAuditChangePoll; counted: Map<string, ToolAuditChangeCount> } | null = null;
  return async () => {
    const poll = await pollToolAuditChanges(t.app.db.sql, owners, previous?.poll.bound ?? null);
    const changed = changedOwners(poll, previous?.counted ?? new Map());
    previous = { poll, counted: new Map([...poll.byOwner].map(([owner, counts]) => [owner, counts.sinceBound])) };
    return changed;
  };
}

describe(`the poll of owners' tool-audit changes (${backendName})`, () => {
  it('names the owners whose tool audits started or ended since the previous poll, and only them', async () => {
    const busy = await runningRun(t);
    const quiet = await runningRun(t);
    await busy.session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    const poll = poller([busy.ownerSub, quiet.ownerSub]);
    await poll();
    must(await busy.session.toolStarted('call-1', 'search'));
    expect(await poll()).toEqual([busy.ownerSub]);
    expect(await poll()).toEqual([]);
    must(await busy.session.toolFinished('call-1', { content: 'ok', status: 'success' }));
    expect(await poll()).toEqual([busy.ownerSub]);
    expect(await poll()).toEqual([]);
  });

  it.runIf(onPostgres)('notices a change that commits after a later poll, its time stamped before that poll', async () => {
    const { session, ownerSub, threadId, runId } = await runningRun(t);
    await session.declare('m1', []);
    const poll = poller([ownerSub]);
    await poll();
    const writer = new pg.Client({ connectionString: t.config.databaseUrl });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      // created_at is the transaction's start: before the poll below.
      await writer.query(
        `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status)
         VALUES (gen_random_uuid(), $1, $2, 'TOOL', 'tool_audit', 'late', 'late', 'RUNNING')`,
        [threadId, runId],
      );
      expect(await poll()).toEqual([]);
      await writer.query('COMMIT');
    } finally {
      await writer.end();
    }
    expect(await poll()).toEqual([ownerSub]);
    expect(await poll()).toEqual([]);
  });
});
