import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { runningRun } from '../support/lifecycle.js';
import { threadState, type Scene } from '../write-path/support.js';
import { RunEvents, sendAlone } from './support.js';

// Single lifecycle mutations of many workers at once share the database's calls once the server's
// calls fill its pool (src/domain/lifecycle-events.ts): each is still applied, fenced, replayed and
// refused as its own mutation, and answered alone.

let t: TestApp;
let calls = 0;
beforeAll(async () => {
  // A pool of two on PostgreSQL (PGlite has one connection): 25 mutations at once must wait for it.
  t = await startTestApp({ DATABASE_POOL_SIZE: '2', LEASE_SWEEP_INTERVAL_MS: '600000' }, { onQuery: (sql) => void (sql.includes('audit_record_events_of') && calls++) });
});
afterAll(() => t.close());

async function running() {
  const run = await runningRun(t);
  const scene: Scene = { t, owner: run.owner, threadId: run.threadId };
  return { ...run, scene, events: new RunEvents(run.session.lease) };
}

describe('single events sent at once by many workers', () => {
  it('go together in fewer calls than events, each answered, refused and replayed as its own mutation', async () => {
    const runs = await Promise.all(Array.from({ length: 24 }, running));
    const stale = await running();
    const staleEvents = new RunEvents({ ...stale.events.lease, epoch: stale.events.lease.epoch + 1 });
    const before = await threadState(stale.scene);

    const sent = runs.map(({ worker, events }) => events.modelStarted('m1', { input: { prompt: worker.slice(-12) } }));

    calls = 0;
    const [refused, ...answers] = await Promise.all([
      sendAlone(t, stale.worker, staleEvents.modelStarted('m1')),
      ...runs.map(({ worker }, index) => sendAlone(t, worker, sent[index]!)),
    ]);
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(runs.length + 1);

    expect(refused!.error?.code).toBe('LEASE_LOST');
    expect(await threadState(stale.scene)).toEqual(before);
    answers.forEach((answer, index) => {
      expect(answer.error).toBeNull();
      expect(answer.audit).toMatchObject({ __typename: 'ModelAudit', runId: runs[index]!.runId, operationId: 'm1', status: 'RUNNING', input: { prompt: runs[index]!.worker.slice(-12) } });
    });
    for (const { scene } of runs) {
      const { audits } = await threadState(scene);
      expect(audits.items.map((audit: { operationId: string; status: string }) => [audit.operationId, audit.status])).toEqual([['m1', 'RUNNING']]);
    }

    // The same events again, at once: every one a replay of what it wrote, nothing written twice.
    const replays = await Promise.all(runs.map(({ worker }, index) => sendAlone(t, worker, sent[index]!)));
    replays.forEach((replay, index) => expect(replay).toEqual(answers[index]));
  });
});
