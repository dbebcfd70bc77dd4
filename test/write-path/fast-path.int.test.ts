// The cases the one-statement fast path (src/domain/fast-write.ts) opens: a write it starts but
// cannot finish (a replay meeting the unique key, a race on the same audit) must leave nothing
// behind, the thread's change cursor included, and the transaction path must still decide.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { must, type WorkerSession } from '../support/lifecycle.js';
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

describe('a replay the fast path cannot write', () => {
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
    const winners = new Set<string>();
    for (let trial = 0; trial < 6; trial++) {
      const { session, scene } = await declared();
      must(await session.toolStarted('call-1', 'search', { sequence: '10' }));
      const sides = trial % 2 === 0 ? ['left', 'right'] : ['right', 'left'];
      const finish = (side: string, s: WorkerSession) => s.toolFinished('call-1', { content: side, status: 'success' }, { sequence: '11' });
      const results = await Promise.all(sides.map((side) => finish(side, session)));
      expect(results.map((result) => errorCode(result) ?? 'ok').sort()).toEqual(['CONFLICT', 'ok']);
      const winner = sides[results.findIndex((result) => !result.errors)]!;
      winners.add(winner);
      const { audits, runs } = await threadState(scene);
      const audit = audits.items.find((item: any) => item.__typename === 'ToolAudit');
      expect(audit.output.content).toBe(winner);
      expect(runs[0].toolCalls[0]).toMatchObject({ status: 'COMPLETED', output: winner });
    }
    expect([...winners].sort()).toEqual(['left', 'right']);
  });
});
