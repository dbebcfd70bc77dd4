// The races of a lifecycle write (its rules: the functions of migration
// 20261203100000_lifecycle_functions): a write it starts but cannot finish (a replay meeting the
// unique key, a race on the same audit or run) must leave nothing behind, the thread's change
// cursor included, and the answer must be that of some serialization of the racing commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claimRunMutation, createRun, createThread, must } from '../support/lifecycle.js';
import { sendRacing, untilEachOutcome } from '../support/races.js';
import { runningScene, threadState, type Scene } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const THREAD_CURSOR = `query($id: ID!) { thread(id: $id) { changeCursor } }`;
const cursorOf = async ({ owner, threadId }: Scene) => (await t.gql(THREAD_CURSOR, { id: threadId }, owner)).data.thread.changeCursor;

/** A running run whose model call declared call-1. */
async function declared() {
  const run = await runningScene(t);
  await run.session.declare('m1', [{ id: 'call-1', name: 'search', args: { q: 'x' } }]);
  return run;
}

describe('a replay the statement cannot write', () => {
  it('of a model start leaves the thread cursor where it was and returns the first row', async () => {
    const { session, scene } = await runningScene(t);
    const input = { sequence: '7', model: 'm', input: { q: 1 } };
    const first = must(await session.modelStarted('m1', input));
    const cursor = await cursorOf(scene);
    const before = await threadState(scene);
    const replay = must(await session.modelStarted('m1', input));
    expect(replay.id).toBe(first.id);
    expect(replay.startedAt).toBe(first.startedAt);
    expect(await cursorOf(scene)).toBe(cursor);
    expect(await threadState(scene)).toEqual(before);
  });

  it('of a tool start and of a tool finish leave the thread cursor where it was', async () => {
    const { session, scene } = await declared();
    const start = { sequence: '10', effectiveInput: { q: 'x' } };
    const started = must(await session.toolStarted('call-1', 'search', start));
    const afterStart = await cursorOf(scene);
    expect(must(await session.toolStarted('call-1', 'search', start)).id).toBe(started.id);
    expect(await cursorOf(scene)).toBe(afterStart);

    const output = { content: 'found', status: 'success' };
    must(await session.toolFinished('call-1', output, { sequence: '11' }));
    const afterFinish = await cursorOf(scene);
    expect(afterFinish).not.toBe(afterStart);
    must(await session.toolFinished('call-1', output, { sequence: '11' }));
    expect(errorCode(await session.toolFinished('call-1', { content: 'other', status: 'success' }))).toBe('CONFLICT');
    expect(await cursorOf(scene)).toBe(afterFinish);
  });
});

describe('racing writes of one audit', () => {
  it('two identical tool starts at once: one audit, both answered with it', async () => {
    const { session, scene } = await declared();
    const start = { sequence: '10', effectiveInput: { q: 'x' } };
    const results = await Promise.all([0, 1].map(() => session.toolStarted('call-1', 'search', start)));
    const [left, right] = results.map((result) => must(result));
    expect(left.id).toBe(right.id);
    const { audits, runs } = await threadState(scene);
    expect(audits.items.filter((item: any) => item.__typename === 'ToolAudit')).toHaveLength(1);
    expect(runs[0].toolCalls[0].status).toBe('RUNNING');
  });

  it('two different tool finishes at once: exactly one is recorded, the other is CONFLICT; each side won in some trial', async () => {
    const winners = await untilEachOutcome(['left', 'right'], async (trial) => {
      const { session, scene } = await declared();
      must(await session.toolStarted('call-1', 'search', { sequence: '10' }));
      const finish = (side: string) => () => session.toolFinished('call-1', { content: side, status: 'success' }, { sequence: '11' });
      const results = await sendRacing(trial, finish('left'), finish('right'));
      expect(results.map((result) => errorCode(result) ?? 'ok').sort()).toEqual(['CONFLICT', 'ok']);
      const winner = results[0].errors ? 'right' : 'left';
      const { audits, runs } = await threadState(scene);
      const audit = audits.items.find((item: any) => item.__typename === 'ToolAudit');
      expect(audit.output.content).toBe(winner);
      expect(runs[0].toolCalls[0]).toMatchObject({ status: 'COMPLETED', output: winner });
      return winner;
    });
    expect(winners).toEqual(['left', 'right']);
  });
});

describe('racing writes of one run', () => {
  it('two workers claim one QUEUED run at once: one lease, the other INVALID_TRANSITION; each worker won in some trial', async () => {
    const winners = await untilEachOutcome(['first worker', 'second worker'], async (trial) => {
      const who = await actors(t);
      const other = await t.token(`rival-${trial}-${who.workerSub}`, 'worker');
      const runId = await createRun(t, who.owner, await createThread(t, who.owner));
      const claim = (token: string) => () => t.gql(claimRunMutation, { input: { runId } }, token);
      const results = await sendRacing(trial, claim(who.worker), claim(other));
      expect(results.map((result) => errorCode(result) ?? 'ok').sort()).toEqual(['INVALID_TRANSITION', 'ok']);
      const run = (await t.gql(`query($id: ID!) { run(id: $id) { status leaseOwner leaseEpoch } }`, { id: runId }, who.owner)).data.run;
      expect(run).toMatchObject({ status: 'RUNNING', leaseEpoch: 1 });
      return results[0].errors ? 'second worker' : 'first worker';
    });
    expect(winners).toEqual(['first worker', 'second worker']);
  });

  it('a tool start racing the verdict: the start is refused, or it is recorded and the verdict closes it; both happened', async () => {
    const outcomes = await untilEachOutcome(['start closed by the verdict', 'start refused'], async (trial) => {
      const { session, scene } = await declared();
      const [started, finished] = await sendRacing(
        trial,
        () => session.toolStarted('call-1', 'search', { sequence: '10' }),
        () => session.finish('COMPLETED'),
      );
      expect(finished.errors).toBeUndefined();
      const { audits, runs } = await threadState(scene);
      expect(runs[0].status).toBe('COMPLETED');
      const tool = audits.items.find((item: any) => item.__typename === 'ToolAudit');
      if (started.errors) {
        expect(errorCode(started)).toBe('LEASE_LOST');
        expect(tool).toBeUndefined();
        return 'start refused';
      }
      // Never an ended run with an audit still RUNNING: the verdict saw the start and closed it.
      expect(tool.status).toBe('ABANDONED');
      expect(runs[0].toolCalls[0].status).toBe('FAILED'); // the projection of an ABANDONED audit
      return 'start closed by the verdict';
    });
    expect(outcomes).toEqual(['start closed by the verdict', 'start refused']);
  });
});
