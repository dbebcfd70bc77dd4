import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import {
  WorkerSession,
  actors,
  claim,
  claimRunMutation,
  createRun,
  createThread,
  expireLeases,
  must,
  runningRun,
} from '../support/lifecycle.js';
import { onPostgres } from '../support/database.js';
import { firstInTime } from '../support/races.js';
import { eventually } from '../support/streams.js';
import { EVENTS_PER_CALL } from '../../src/domain/lifecycle-events.js';
import { RUN_STATE, expectRejected, runningScene, waitPast, type Scene } from './support.js';

let t: TestApp;
beforeAll(async () => {
  // A 1-second lease is allowed; the sweeper stays out of the way so an expired lease is seen as such.
  t = await startTestApp({ LEASE_MIN_SECONDS: '1', LEASE_MAX_SECONDS: '60', LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

const runOf = async (scene: Scene, runId: string) => (await t.gql(RUN_STATE, { id: runId }, scene.owner)).data.run;

/** A running run with an open model audit and an open tool audit, so that every write has a target. */
async function busyRun() {
  const run = await runningScene(t);
  const { session } = run;
  must(await session.modelStarted('m-declare'));
  must(await session.modelFinished('m-declare', [
    { id: 'call-open', name: 'search' },
    { id: 'call-pending', name: 'search' },
  ]));
  must(await session.toolStarted('call-open', 'search'));
  must(await session.modelStarted('m-open'));
  return run;
}

/** Each lifecycle write, aimed at something it could legitimately change. */
const WRITES: [string, (session: WorkerSession) => Promise<any>][] = [
  ['recordModelStarted', (s) => s.modelStarted('m-new')],
  ['recordModelFinished', (s) => s.modelFinished('m-open')],
  ['recordToolStarted', (s) => s.toolStarted('call-pending', 'search')],
  ['recordToolFinished', (s) => s.toolFinished('call-open', { content: 'done' })],
  ['recordToolError', (s) => s.toolError('call-open', { message: 'boom' })],
  ['renewLease', (s) => s.renew(30)],
  ['finishRun', (s) => s.finish('COMPLETED')],
];

describe('claimRun', () => {
  it('lets exactly one of many concurrent claims win; every other gets INVALID_TRANSITION', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => t.token(`racer-${i}`, 'worker')));

    const results = await Promise.all(tokens.map((token) => t.gql(claimRunMutation, { input: { runId } }, token)));

    const winners = results.filter((result) => !result.errors);
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => errorCode(result) === 'INVALID_TRANSITION')).toHaveLength(tokens.length - 1);
    const lease = winners[0]!.data.result;
    expect(lease).toMatchObject({ runId, epoch: 1 });
    expect(await runOf({ t, owner: who.owner, threadId }, runId)).toMatchObject({
      status: 'RUNNING',
      leaseOwner: lease.owner,
      leaseEpoch: 1,
      leaseExpiresAt: lease.expiresAt,
    });
  });

  it('refuses a run that is not QUEUED and a run that does not exist', async () => {
    const { session, worker, owner, threadId, runId } = await runningRun(t);
    expect(errorCode(await t.gql(claimRunMutation, { input: { runId } }, worker))).toBe('INVALID_TRANSITION');
    must(await session.finish('COMPLETED'));
    const scene = { t, owner, threadId };
    await expectRejected(scene, 'INVALID_TRANSITION', () => t.gql(claimRunMutation, { input: { runId } }, worker));
    const missing = '00000000-0000-4000-8000-000000000000';
    expect(errorCode(await t.gql(claimRunMutation, { input: { runId: missing } }, worker))).toBe('NOT_FOUND');
  });

  it('clamps the lease length to LEASE_MIN_SECONDS and LEASE_MAX_SECONDS', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const scene = { t, owner: who.owner, threadId };
    const leaseLength = async (leaseSeconds: number) => {
      const runId = await createRun(t, who.owner, threadId);
      const lease = must(await t.gql(`mutation($input: ClaimRunInput!) { result: claimRun(input: $input) { expiresAt grantedAt } }`, { input: { runId, leaseSeconds } }, who.worker));
      expect((await runOf(scene, runId)).leaseExpiresAt).toBe(lease.expiresAt);
      return Date.parse(lease.expiresAt) - Date.parse(lease.grantedAt);
    };
    expect(await leaseLength(0)).toBe(1000);
    expect(await leaseLength(-5)).toBe(1000);
    expect(await leaseLength(5)).toBe(5000);
    expect(await leaseLength(100_000)).toBe(60_000);
  });

  it('says when it granted the lease, on the clock of expiresAt: expiresAt − grantedAt is the clamped length (claim, renewal, batch)', async () => {
    const { session, runId } = await runningScene(t);
    const clock = async () => (await t.app.db.driver.query<{ at: Date }>('SELECT clock_timestamp() AS at'))[0]!.at.getTime();
    /** The lease `write` answers, against the database's clock read before and after it: granted in between, expiring the clamped length after. */
    const grants = async <Lease extends { expiresAt: string; grantedAt: string }>(ms: number, write: () => Promise<Lease>) => {
      const before = await clock();
      const lease = await write();
      const after = await clock();
      const grantedAt = Date.parse(lease.grantedAt);
      expect(grantedAt).toBeGreaterThanOrEqual(before);
      expect(grantedAt).toBeLessThanOrEqual(after);
      expect(Date.parse(lease.expiresAt) - grantedAt).toBe(ms);
      return lease;
    };
    const LEASE = '{ runId epoch expiresAt grantedAt }';
    const renewed = await grants(60_000, async () =>
      must(await t.gql(`mutation($lease: LeaseInput!) { result: renewLease(lease: $lease, leaseSeconds: 100000) ${LEASE} }`, { lease: session.lease }, session.token)));
    await grants(7_000, async () => {
      const batch = await t.gql(
        `mutation($events: [LifecycleEventInput!]!) { result: recordEvents(events: $events) { lease ${LEASE} } }`,
        { events: [{ renewLease: { lease: session.lease, leaseSeconds: 7 } }] },
        session.token,
      );
      return must(batch)[0].lease;
    });

    const who = await actors(t);
    const queued = await createRun(t, who.owner, await createThread(t, who.owner));
    await grants(1_000, async () =>
      must(await t.gql(`mutation($input: ClaimRunInput!) { result: claimRun(input: $input) ${LEASE} }`, { input: { runId: queued, leaseSeconds: 0 } }, who.worker)));
    expect(renewed.runId).toBe(runId);
  });

  // A write's transaction starts (now()) before it gets the locks it queues for and before the
  // events ahead of it in its call: the lease runs from its grant, as the worker is told, and the
  // run's fence is that same expiry.
  it('counts a renewal late in a batch from its grant, not from the start of the batch', async () => {
    const { session, scene, runId } = await runningScene(t);
    const renewals = Array.from({ length: EVENTS_PER_CALL }, () => ({ renewLease: { lease: session.lease, leaseSeconds: 30 } }));
    const leases = await firstInTime('a batch of renewals granted over more than a millisecond', async () => {
      const batch = await t.gql(
        `mutation($events: [LifecycleEventInput!]!) { result: recordEvents(events: $events) { lease { expiresAt grantedAt } } }`,
        { events: renewals },
        session.token,
      );
      const granted: { expiresAt: string; grantedAt: string }[] = must(batch).map((result: { lease: unknown }) => result.lease);
      return Date.parse(granted.at(-1)!.grantedAt) > Date.parse(granted[0]!.grantedAt) ? granted : null;
    });
    expect(leases.map((lease) => Date.parse(lease.expiresAt) - Date.parse(lease.grantedAt))).toEqual(leases.map(() => 30_000));
    expect((await runOf(scene, runId)).leaseExpiresAt).toBe(leases.at(-1)!.expiresAt);
  });

  it.runIf(onPostgres)('counts a claim that queued for its thread from its grant, not from when it began to queue', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const threadLocked = new Promise<void>((resolve) => (locked = resolve));
    // Another writer of the thread (its change cursor's row) holds it while the claim begins.
    const holding = t.app.db.sql.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM thread WHERE id = $1::uuid FOR UPDATE', [threadId]);
      locked();
      await released;
    });
    try {
      await threadLocked;
      const claimed = t.gql(`mutation($input: ClaimRunInput!) { result: claimRun(input: $input) { expiresAt grantedAt } }`,
        { input: { runId, leaseSeconds: 30 } }, who.worker);
      // Queued for the thread since its transaction began, and for more than a millisecond of the database's clock.
      await eventually(
        () => t.app.db.sql.query<{ queued: boolean }>(
          `SELECT clock_timestamp() - xact_start > interval '2 milliseconds' AS queued FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`,
        ),
        (rows) => rows.length === 1 && rows[0]!.queued,
        { what: 'the claim queued for the thread', intervalMs: 5 },
      );
      release();
      await holding;
      const lease = must(await claimed);
      expect(Date.parse(lease.expiresAt) - Date.parse(lease.grantedAt)).toBe(30_000);
      expect((await runOf({ t, owner: who.owner, threadId }, runId)).leaseExpiresAt).toBe(lease.expiresAt);
    } finally {
      release();
      await holding.catch(() => {});
    }
  });
});

describe('a claim retried with its claimId', () => {
  const claimWith = (token: string, runId: string, claimId: string | undefined, leaseSeconds = 30) =>
    t.gql(claimRunMutation, { input: { runId, claimId, leaseSeconds } }, token);

  async function queued() {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    return { ...who, runId };
  }

  it('whose answer was lost gets the same lease back, its expiry extended as by the claim', async () => {
    const { worker, owner, runId } = await queued();
    const first = must(await claimWith(worker, runId, 'claim-A', 5));
    const retried = must(await claimWith(worker, runId, 'claim-A', 30));
    expect(retried).toMatchObject({ runId, epoch: first.epoch, owner: first.owner });
    expect(Date.parse(retried.expiresAt)).toBeGreaterThan(Date.parse(first.expiresAt));
    // The lease works: the worker writes with the epoch it learnt from the retry.
    must(await new WorkerSession(t, worker, { runId, epoch: retried.epoch }).modelStarted('m1'));
    expect((await t.gql(RUN_STATE, { id: runId }, owner)).data.run).toMatchObject({ status: 'RUNNING', leaseEpoch: first.epoch });
  });

  it('never shortens a lease renewed since: the lease keeps the later of the two expiries', async () => {
    const { worker, owner, runId } = await queued();
    const first = must(await claimWith(worker, runId, 'claim-A', 2));
    const renewed = must(await new WorkerSession(t, worker, { runId, epoch: first.epoch }).renew(60));
    const retried = must(await claimWith(worker, runId, 'claim-A', 2));
    expect(retried).toMatchObject({ runId, epoch: first.epoch, expiresAt: renewed.expiresAt });
    expect((await t.gql(RUN_STATE, { id: runId }, owner)).data.run).toMatchObject({ status: 'RUNNING', leaseExpiresAt: renewed.expiresAt });
  });

  it('is INVALID_TRANSITION without the claimId, with another claimId, or from another worker', async () => {
    const { worker, runId } = await queued();
    must(await claimWith(worker, runId, 'claim-A'));
    const other = await t.token(`other-${runId}`, 'worker');
    for (const [token, claimId] of [
      [worker, undefined],
      [worker, 'claim-B'],
      [other, 'claim-A'],
    ] as const) {
      expect(errorCode(await claimWith(token, runId, claimId)), `${claimId}`).toBe('INVALID_TRANSITION');
    }
  });

  it('is INVALID_TRANSITION once the lease is no longer current: expired, or the run ended', async () => {
    const expiring = await queued();
    must(await claimWith(expiring.worker, expiring.runId, 'claim-A'));
    await expireLeases(t.app.db.driver, [expiring.runId]);
    expect(errorCode(await claimWith(expiring.worker, expiring.runId, 'claim-A'))).toBe('INVALID_TRANSITION');

    const ended = await queued();
    const endedLease = must(await claimWith(ended.worker, ended.runId, 'claim-A'));
    must(await new WorkerSession(t, ended.worker, { runId: ended.runId, epoch: endedLease.epoch }).finish('COMPLETED'));
    expect(errorCode(await claimWith(ended.worker, ended.runId, 'claim-A'))).toBe('INVALID_TRANSITION');
  });

  it('refuses a blank claimId or one over 256 characters as BAD_USER_INPUT, and claims nothing', async () => {
    const { worker, owner, runId } = await queued();
    for (const claimId of ['', ' ', 'c'.repeat(257)]) {
      expect(errorCode(await claimWith(worker, runId, claimId))).toBe('BAD_USER_INPUT');
    }
    expect((await t.gql(RUN_STATE, { id: runId }, owner)).data.run).toMatchObject({ status: 'QUEUED', leaseEpoch: 0 });
    must(await claimWith(worker, runId, 'c'.repeat(256)));
  });
});

describe('the lease fence on every lifecycle write', () => {
  it.each(WRITES)('%s with a stale or future epoch is LEASE_LOST and changes nothing', async (_name, write) => {
    const { session, scene } = await busyRun();
    for (const epoch of [0, 2]) {
      const stale = new WorkerSession(t, session.token, { ...session.lease, epoch });
      await expectRejected(scene, 'LEASE_LOST', () => write(stale));
    }
    // The same write with the current lease goes through: the epoch alone was the reason.
    must(await write(session));
  });

  it.each(WRITES)("%s with another worker's token is LEASE_LOST and changes nothing", async (_name, write) => {
    const { session, scene } = await busyRun();
    const intruder = new WorkerSession(t, await t.token('intruder', 'worker'), session.lease);
    await expectRejected(scene, 'LEASE_LOST', () => write(intruder));
    must(await write(session));
  });

  it.each(WRITES)('%s after the run ended is LEASE_LOST', async (_name, write) => {
    const { session, scene } = await busyRun();
    must(await session.finish('FAILED'));
    await expectRejected(scene, 'LEASE_LOST', () => write(session));
  });

  it('names a run that does not exist: NOT_FOUND', async () => {
    const { session } = await runningRun(t);
    const ghost = new WorkerSession(t, session.token, { runId: '00000000-0000-4000-8000-000000000000', epoch: 1 });
    expect(errorCode(await ghost.modelStarted('m1'))).toBe('NOT_FOUND');
  });
});

describe('an expired lease', () => {
  it('rejects every write, renewal included, with LEASE_EXPIRED and changes nothing', async () => {
    const { session, scene, runId } = await busyRun();
    await expireLeases(t.app.db.driver, [runId]);
    const expired = (await runOf(scene, runId)).leaseExpiresAt;

    for (const [, write] of WRITES) await expectRejected(scene, 'LEASE_EXPIRED', () => write(session));
    // Nothing but the sweeper ends the run: it is still RUNNING under the expired lease.
    expect(await runOf(scene, runId)).toMatchObject({ status: 'RUNNING', leaseEpoch: 1, leaseExpiresAt: expired });
  });

  it('is still reported as LEASE_LOST to a worker that never held it', async () => {
    const { session, scene } = await busyRun();
    await expireLeases(t.app.db.driver, [session.lease.runId]);
    const intruder = new WorkerSession(t, await t.token('intruder', 'worker'), session.lease);
    await expectRejected(scene, 'LEASE_LOST', () => intruder.modelStarted('m-new'));
  });
});

describe('renewLease', () => {
  it('keeps the epoch and lets writes go on past the original expiry', async () => {
    const who = await actors(t);
    // A 1 s lease renewed at once: on a loaded machine the renewal may come after it expired
    // (LEASE_EXPIRED), and that trial is played again on a new run.
    const renewedAtOnce = async () => {
      const threadId = await createThread(t, who.owner);
      const runId = await createRun(t, who.owner, threadId);
      const session = await claim(t, who.worker, runId, 1);
      const original = (await runOf({ t, owner: who.owner, threadId }, runId)).leaseExpiresAt;
      const renewal = await session.renew(30);
      return errorCode(renewal) === 'LEASE_EXPIRED' ? null : { threadId, runId, session, original, renewed: must(renewal) };
    };
    const { threadId, runId, session, original, renewed } = await firstInTime('a renewal within 1 s of the claim', renewedAtOnce);
    expect(renewed).toMatchObject({ runId, epoch: 1 });
    expect(new Date(renewed.expiresAt).getTime()).toBeGreaterThan(new Date(original).getTime());
    await waitPast(original);

    const audit = must(await session.modelStarted('m-after-renew'));
    expect(audit.status).toBe('RUNNING');
    expect(await runOf({ t, owner: who.owner, threadId }, runId)).toMatchObject({
      status: 'RUNNING',
      leaseExpiresAt: renewed.expiresAt,
    });
  });
});

describe('a renewal shorter than the lease left', () => {
  it('sets the expiry to now + leaseSeconds: the worker shortens its own lease (docs/semantics.md)', async () => {
    const { session, scene, runId } = await runningScene(t);
    const long = must(await session.renew(60));
    const short = must(await session.renew(2));
    expect(short).toMatchObject({ runId, epoch: long.epoch });
    expect(Date.parse(short.expiresAt)).toBeLessThan(Date.parse(long.expiresAt));
    expect(await runOf(scene, runId)).toMatchObject({ status: 'RUNNING', leaseExpiresAt: short.expiresAt });
  });
});

describe('who may call the lifecycle mutations', () => {
  it.each(WRITES)('%s is FORBIDDEN to every role but worker and UNAUTHENTICATED without a token', async (_name, write) => {
    const { session, scene } = await busyRun();
    for (const role of ['user', 'admin', 'superadmin'] as const) {
      const other = new WorkerSession(t, await t.token(`not-a-worker-${role}`, role), session.lease);
      await expectRejected(scene, 'FORBIDDEN', () => write(other));
    }
    // The thread's own owner is no worker either.
    await expectRejected(scene, 'FORBIDDEN', () => write(new WorkerSession(t, scene.owner, session.lease)));
    await expectRejected(scene, 'UNAUTHENTICATED', () => write(new WorkerSession(t, '', session.lease)));
  });

  it('claimRun is FORBIDDEN to every role but worker and UNAUTHENTICATED without a token', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    const scene = { t, owner: who.owner, threadId };
    for (const role of ['user', 'admin', 'superadmin'] as const) {
      const token = await t.token(`not-a-worker-${role}`, role);
      await expectRejected(scene, 'FORBIDDEN', () => t.gql(claimRunMutation, { input: { runId } }, token));
    }
    await expectRejected(scene, 'UNAUTHENTICATED', () => t.gql(claimRunMutation, { input: { runId } }, null));
    expect((await runOf(scene, runId)).status).toBe('QUEUED');
  });
});
