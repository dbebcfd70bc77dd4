// One case per rule of the write path (the lifecycle functions of migration
// 20261203100000_lifecycle_functions, each rule stated once): the refusal's `extensions.code`
// and message, through GraphQL, and nothing changed. A rule changed in one place is caught here
// by name.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { WorkerSession, actors, claim, claimRunMutation, createRun, expireLeases, must } from '../support/lifecycle.js';
import { expectRejected, interruptAndResume, runningScene } from './support.js';

let t: TestApp;
beforeAll(async () => {
  // The sweeper stays out of the way, so that an expired lease is seen as such.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

const call = { id: 'call-1', name: 'search', args: { q: 'x' } };
const RESEND = 'a retry resends the start as it was first sent, with the same sequence and input';

describe('the lease fence', () => {
  it('a run that does not exist: NOT_FOUND', async () => {
    const { session, scene } = await runningScene(t);
    const missing = randomUUID();
    const stranger = new WorkerSession(t, session.token, { runId: missing, epoch: 1 });
    const { message } = await expectRejected(scene, 'NOT_FOUND', () => stranger.modelStarted('m1'));
    expect(message).toBe(`Run ${missing} not found`);
  });

  it('a run that is not RUNNING: LEASE_LOST', async () => {
    const { session, scene, runId } = await runningScene(t);
    must(await session.finish('COMPLETED'));
    const { message, extensions } = await expectRejected(scene, 'LEASE_LOST', () => session.modelStarted('m1'));
    expect(message).toBe(`Run ${runId} is COMPLETED, not RUNNING`);
    // A worker may not read a run it no longer leases: the refusal names how the run ended.
    expect(extensions?.runStatus).toBe('COMPLETED');
  });

  it('a run that has not been claimed (QUEUED): LEASE_LOST without a runStatus, which is for an ended run', async () => {
    const { session, scene } = await runningScene(t);
    const queuedId = await createRun(t, scene.owner, scene.threadId);
    const queued = new WorkerSession(t, session.token, { runId: queuedId, epoch: 0 });
    const { message, extensions } = await expectRejected(scene, 'LEASE_LOST', () => queued.renew());
    expect(message).toBe(`Run ${queuedId} is QUEUED, not RUNNING`);
    expect(extensions).not.toHaveProperty('runStatus');
  });

  it('a run that ended, to a worker that never held it: LEASE_LOST, and neither runStatus nor the message says how it ended', async () => {
    const { session, scene, runId } = await runningScene(t);
    must(await session.finish('CANCELLED'));
    const prober = new WorkerSession(t, (await actors(t)).worker, session.lease);
    const { message, extensions } = await expectRejected(scene, 'LEASE_LOST', () => prober.renew());
    expect(message).toBe(`Run ${runId} is not RUNNING under your lease`);
    expect(extensions).not.toHaveProperty('runStatus');
  });

  it('a worker that does not hold the lease: LEASE_LOST', async () => {
    const { session, scene, runId } = await runningScene(t);
    const other = new WorkerSession(t, (await actors(t)).worker, session.lease);
    const { message, extensions } = await expectRejected(scene, 'LEASE_LOST', () => other.renew());
    expect(message).toBe(`The lease of run ${runId} is held by another worker`);
    expect(extensions).not.toHaveProperty('runStatus');
  });

  it('a stale epoch: LEASE_LOST', async () => {
    const { session, scene } = await runningScene(t);
    const stale = new WorkerSession(t, session.token, { ...session.lease, epoch: session.lease.epoch + 1 });
    const { message, extensions } = await expectRejected(scene, 'LEASE_LOST', () => stale.modelStarted('m1'));
    expect(extensions).not.toHaveProperty('runStatus');
    expect(message).toBe(`Lease epoch ${session.lease.epoch + 1} is stale; the current epoch is ${session.lease.epoch}`);
  });

  it('an expired lease, by the database clock: LEASE_EXPIRED', async () => {
    const { session, scene, runId } = await runningScene(t);
    await expireLeases(t.app.db.driver, [runId]);
    const { message } = await expectRejected(scene, 'LEASE_EXPIRED', () => session.finish('COMPLETED'));
    expect(message).toBe(`The lease of run ${runId} has expired`);
  });
});

describe('claims', () => {
  it('a run another worker already claimed: INVALID_TRANSITION', async () => {
    const { scene, runId } = await runningScene(t);
    const other = (await actors(t)).worker;
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => t.gql(claimRunMutation, { input: { runId } }, other));
    expect(message).toBe(`Run ${runId} is RUNNING; only a QUEUED run can be claimed`);
  });
});

describe('model audits', () => {
  it('a finish of a model call never started: INVALID_TRANSITION', async () => {
    const { session, scene, runId } = await runningScene(t);
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => session.modelFinished('m9'));
    expect(message).toBe(`No model call m9 was started in run ${runId}`);
  });

  it('a start replayed with another input: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1', { sequence: '1', input: { a: 1 } }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.modelStarted('m1', { sequence: '1', input: { a: 2 } }));
    expect(message).toBe('Model call m1 was already started with a different sequence, model or input');
  });

  it('a finish replayed with other declarations: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1'));
    must(await session.modelFinished('m1', [call], { sequence: '5' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.modelFinished('m1', [{ ...call, args: { q: 'y' } }], { sequence: '5' }));
    expect(message).toBe('Model call m1 already ended (COMPLETED), and this finish differs in toolCalls: a retry resends the finish as it was first sent');
  });

  it('a finish retried with a new sequence or another status: CONFLICT naming what differs, with both values', async () => {
    const { session, scene } = await runningScene(t);
    must(await session.modelStarted('m1'));
    must(await session.modelFinished('m1', [call], { sequence: '5' }));
    const retried = await expectRejected(scene, 'CONFLICT', () => session.modelFinished('m1', [call], { sequence: '6' }));
    expect(retried.message).toBe('Model call m1 already ended (COMPLETED), and this finish differs in sequence (recorded 5, sent 6): a retry resends the finish as it was first sent');
    const other = await expectRejected(scene, 'CONFLICT', () => session.modelFinished('m1', [call], { sequence: '5', status: 'FAILED', output: { a: 1 } }));
    expect(other.message).toBe('Model call m1 already ended (COMPLETED), and this finish differs in status (recorded COMPLETED, sent FAILED) and output: a retry resends the finish as it was first sent');
  });
});

describe('tool audits', () => {
  it('a start no model call declared, in the run or its resume ancestry: MODEL_NOT_FOUND', async () => {
    const { session, scene, runId } = await runningScene(t);
    const { message } = await expectRejected(scene, 'MODEL_NOT_FOUND', () => session.toolStarted('call-9', 'search'));
    expect(message).toBe(`No model call in run ${runId} or its resume ancestry declared tool call call-9`);
  });

  it('a start of a call that already ended, bound through resume ancestry: INVALID_TRANSITION', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'found', status: 'success' }));
    const resumed = await interruptAndResume(scene, session);
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => resumed.toolStarted('call-1', 'search'));
    expect(message).toBe('Tool call call-1 has already ended (COMPLETED)');
  });

  it("a start of a call its run's end closed: INVALID_TRANSITION with the closing reason", async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.finish('FAILED'));
    const resumed = await claim(t, session.token, await createRun(t, scene.owner, scene.threadId, session.lease.runId));
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => resumed.toolStarted('call-1', 'search'));
    expect(message).toBe('Tool call call-1 has already ended (FAILED: RUN_FAILED)');
  });

  it('a start through a broken resume ancestry fails closed: INVALID_TRANSITION', async () => {
    const { session, scene } = await runningScene(t);
    const resumed = await interruptAndResume(scene, session);
    // A cycle no API call can make: the ancestor made to resume its own resume.
    await t.app.db.driver.query('UPDATE run SET resumed_from_id = $1 WHERE id = $2', [resumed.lease.runId, session.lease.runId]);
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => resumed.toolStarted('call-1', 'search'));
    expect(message).toBe(`The resume ancestry of run ${resumed.lease.runId} has a cycle at ${resumed.lease.runId}`);
  });

  it('a start replayed with another name: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search', { sequence: '7' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', 'lookup', { sequence: '7' }));
    expect(message).toBe(`Tool call call-1 was already started with a different name (recorded "search", sent "lookup"): ${RESEND}`);
  });

  it('a start retried with a new sequence or another input: CONFLICT naming what differs, with both values', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search', { sequence: '7', effectiveInput: { q: 'x' } }));
    const retried = await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', 'search', { sequence: '8', effectiveInput: { q: 'x' } }));
    expect(retried.message).toBe(`Tool call call-1 was already started with a different sequence (recorded 7, sent 8): ${RESEND}`);
    const both = await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', 'search', { sequence: '9', effectiveInput: { q: 'y' } }));
    expect(both.message).toBe(`Tool call call-1 was already started with a different sequence (recorded 7, sent 9) and effectiveInput: ${RESEND}`);
  });

  it('a start of a call a sibling resume is executing: INVALID_TRANSITION naming that run', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.finish('INTERRUPTED'));
    const left = await claim(t, session.token, await createRun(t, scene.owner, scene.threadId, session.lease.runId));
    const right = await claim(t, session.token, await createRun(t, scene.owner, scene.threadId, session.lease.runId));
    must(await left.toolStarted('call-1', 'search'));
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => right.toolStarted('call-1', 'search'));
    expect(message).toBe(`Tool call call-1 is already running in run ${left.lease.runId}; a declared call runs in one run at a time`);
  });

  it('a start of an id a later model call declared again, after its first execution in this run: CONFLICT saying so', async () => {
    const { session, scene, runId } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search', { sequence: '7' }));
    must(await session.toolFinished('call-1', { content: 'found', status: 'success' }));
    await session.declare('m2', [call]);
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolStarted('call-1', 'search', { sequence: '20' }));
    expect(message).toBe(
      `Tool call call-1 already ran in run ${runId} (started at sequence 7, COMPLETED) for an earlier declaration: ` +
        'a tool call id runs once per run, so the declaration of model call m2 cannot start in this run',
    );
  });

  it('a finish of a tool never started: INVALID_TRANSITION', async () => {
    const { session, scene, runId } = await runningScene(t);
    await session.declare('m1', [call]);
    const { message } = await expectRejected(scene, 'INVALID_TRANSITION', () => session.toolFinished('call-1', { content: 'x' }));
    expect(message).toBe(`No tool call call-1 was started in run ${runId}`);
  });

  it('a finish replayed with another result: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'a' }, { sequence: '9' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolFinished('call-1', { content: 'b' }, { sequence: '9' }));
    expect(message).toBe('Tool call call-1 already ended (COMPLETED), and this finish differs in output: a retry resends the finish as it was first sent');
  });

  it('a finish retried with the same result and a new sequence: CONFLICT naming the sequence, not the result', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'a' }, { sequence: '9' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolFinished('call-1', { content: 'a' }, { sequence: '10' }));
    expect(message).toBe('Tool call call-1 already ended (COMPLETED), and this finish differs in sequence (recorded 9, sent 10): a retry resends the finish as it was first sent');
  });

  it('a bare error after the terminal: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolFinished('call-1', { content: 'a' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolError('call-1', { message: 'late' }));
    expect(message).toBe('Tool call call-1 has already ended (COMPLETED)');
  });

  it('a bare error replayed with another error: CONFLICT', async () => {
    const { session, scene } = await runningScene(t);
    await session.declare('m1', [call]);
    must(await session.toolStarted('call-1', 'search'));
    must(await session.toolError('call-1', { message: 'one' }, { sequence: '9' }));
    const { message } = await expectRejected(scene, 'CONFLICT', () => session.toolError('call-1', { message: 'two' }, { sequence: '9' }));
    expect(message).toBe('Tool call call-1 already recorded a different error');
  });
});
