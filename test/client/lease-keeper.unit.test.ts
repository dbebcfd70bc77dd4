import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditApiError, AuditTokenRejectedError, LeaseKeeper, type LeaseInput, type RunLease } from '@agent-audit/client';

const LEASE_SECONDS = 30;

function leaseFor(epoch: number): RunLease {
  return { runId: 'run-1', owner: 'worker-1', epoch, expiresAt: new Date(Date.now() + LEASE_SECONDS * 1000).toISOString(), grantedAt: new Date().toISOString() };
}

const apiError = (code: string, retryable = false) =>
  new AuditApiError(code, { code, operationName: 'RenewLease', retryable });

describe('LeaseKeeper', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews at about a third of the lease and exposes the newest lease', async () => {
    const renewLease = vi.fn(async (lease: LeaseInput) => ({ ...leaseFor(lease.epoch), expiresAt: new Date(Date.now() + 30_000).toISOString() }));
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS });

    await vi.advanceTimersByTimeAsync(9_999);
    expect(renewLease).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(renewLease).toHaveBeenCalledTimes(1);
    expect(renewLease).toHaveBeenCalledWith(expect.objectContaining({ runId: 'run-1', epoch: 1 }), LEASE_SECONDS, { maxAttempts: 1, timeoutMs: 10_000 }, { signal: expect.any(AbortSignal) });
    expect(Date.parse(keeper.lease.expiresAt)).toBe(Date.now() + 30_000);

    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewLease).toHaveBeenCalledTimes(2);
    keeper.stop();
  });

  it('calls onLost and aborts its signal when renewal fails with LEASE_LOST, then stops', async () => {
    const lost = apiError('LEASE_LOST');
    const renewLease = vi.fn<(lease: LeaseInput, seconds?: number) => Promise<RunLease>>().mockRejectedValue(lost);
    const onLost = vi.fn();
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS, onLost });

    await vi.advanceTimersByTimeAsync(10_000);
    expect(onLost).toHaveBeenCalledExactlyOnceWith(lost);
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBe(lost);

    await vi.advanceTimersByTimeAsync(60_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
  });

  it('keeps an hour-long lease for twelve hours, every third of it, however long each answer takes: no drift, never lapsing', async () => {
    // Each answer takes 0 to 2 s; the database grants the hour from when it answers.
    const answerMs = [0, 2_000, 700, 1_500];
    const sentAt: number[] = [];
    const renewLease = vi.fn(async () => {
      sentAt.push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, answerMs[sentAt.length % answerMs.length]));
      return { runId: 'run-1', owner: 'worker-1', epoch: 1, grantedAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
    });
    const claimed = { ...leaseFor(1), expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
    const keeper = new LeaseKeeper({ renewLease }, claimed, { leaseSeconds: 3600 });

    await vi.advanceTimersByTimeAsync(12 * 3_600_000);
    keeper.stop();
    // Each comes a third of what the last one left after its answer: twenty minutes and at most
    // 2/3 of its answer's time after the one before was sent (35 in twelve hours, not fewer as
    // the answers' times add up), with two thirds of the hour still left each time.
    const gaps = sentAt.slice(1).map((at, i) => at - sentAt[i]!);
    expect(renewLease).toHaveBeenCalledTimes(35);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1_200_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1_200_000 + (2 * 2_000) / 3);
  });

  it('after a pause past its expiry (a laptop asleep), stops at the renewal that answers LEASE_EXPIRED and says so', async () => {
    const expired = apiError('LEASE_EXPIRED');
    const renewLease = vi.fn<(lease: LeaseInput, seconds?: number) => Promise<RunLease>>().mockRejectedValue(expired);
    const onLost = vi.fn();
    const onRenewError = vi.fn();
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS, onLost, onRenewError });

    await vi.advanceTimersByTimeAsync(2 * 3_600_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
    expect(onLost).toHaveBeenCalledExactlyOnceWith(expired);
    expect(onRenewError).not.toHaveBeenCalled();
    expect(keeper.signal.reason).toBe(expired);
  });

  it('keeps trying after a transient failure, reporting it to onRenewError', async () => {
    const transient = apiError('TRANSPORT_ERROR', true);
    const renewLease = vi
      .fn<(lease: LeaseInput, seconds?: number) => Promise<RunLease>>()
      .mockRejectedValueOnce(transient)
      .mockImplementation(async () => leaseFor(1));
    const onLost = vi.fn();
    const onRenewError = vi.fn();
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS, onLost, onRenewError });

    await vi.advanceTimersByTimeAsync(10_000);
    expect(onRenewError).toHaveBeenCalledExactlyOnceWith(transient);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewLease).toHaveBeenCalledTimes(2);
    expect(onLost).not.toHaveBeenCalled();
    expect(keeper.signal.aborted).toBe(false);
    keeper.stop();
  });

  it('takes a refused token (UNAUTHENTICATED) as its own error naming the token, not as a lost lease', async () => {
    // The worker's token expired: the lease is still the worker's until it expires, so the agent
    // must not be stopped as if the run had moved on; the runtime refreshes the token instead.
    const expired = new AuditApiError('RenewLease: the token expired at 2026-12-05T13:00:00.000Z', { code: 'UNAUTHENTICATED', operationName: 'RenewLease', retryable: false, httpStatus: 401 });
    const renewLease = vi.fn<(lease: LeaseInput, seconds?: number) => Promise<RunLease>>().mockRejectedValue(expired);
    const onLost = vi.fn();
    const onTokenRejected = vi.fn();
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS, onLost, onTokenRejected });

    await vi.advanceTimersByTimeAsync(10_000);
    expect(onLost).not.toHaveBeenCalled();
    expect(keeper.signal.aborted).toBe(false);
    expect(onTokenRejected).toHaveBeenCalledTimes(1);
    const rejected = onTokenRejected.mock.calls[0]![0] as AuditTokenRejectedError;
    expect(rejected).toBeInstanceOf(AuditTokenRejectedError);
    expect(rejected).toMatchObject({ name: 'AuditTokenRejectedError', runId: 'run-1', cause: expired });
    expect(rejected.message).toMatch(/token/);
    expect(rejected.message).toContain('expired at 2026-12-05T13:00:00.000Z');
    expect(rejected.lease).toEqual(keeper.lease);

    // Renewing with the same token cannot succeed: the keeper stops; one with a fresh client carries on.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
    const fresh = vi.fn(async (lease: LeaseInput) => leaseFor(lease.epoch));
    const next = new LeaseKeeper({ renewLease: fresh }, rejected.lease, { leaseSeconds: LEASE_SECONDS });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fresh).toHaveBeenCalledWith(expect.objectContaining({ runId: 'run-1', epoch: 1 }), LEASE_SECONDS, { maxAttempts: 1, timeoutMs: 10_000 }, { signal: expect.any(AbortSignal) });
    next.stop();
  });

  it('renews no more after stop()', async () => {
    const renewLease = vi.fn(async () => leaseFor(1));
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(1), { leaseSeconds: LEASE_SECONDS });
    keeper.stop();

    await vi.advanceTimersByTimeAsync(60_000);
    expect(renewLease).not.toHaveBeenCalled();
  });

  it('renews sooner when the server granted less than was asked', async () => {
    const renewLease = vi.fn(async () => leaseFor(1));
    const granted = { ...leaseFor(1), expiresAt: new Date(Date.now() + 3_000).toISOString() };
    const keeper = new LeaseKeeper({ renewLease }, granted, { leaseSeconds: 3600 });

    await vi.advanceTimersByTimeAsync(1_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
    keeper.stop();
  });

  // A worker's clock may be minutes off the database's, which stamps grantedAt and expiresAt: the
  // keeper times its renewals by the length granted, never by expiresAt against its own clock.
  /** A lease the database granted for `seconds` at its `databaseNow`. */
  const grantedAt = (databaseNow: number, seconds: number): RunLease => ({
    ...leaseFor(1),
    grantedAt: new Date(databaseNow).toISOString(),
    expiresAt: new Date(databaseNow + seconds * 1000).toISOString(),
  });

  it('renews within the granted length when the server clamped the request and the worker clock is 5 minutes behind', async () => {
    const behindMs = 5 * 60_000;
    // The database granted 30 s of the 600 asked (LEASE_MAX_SECONDS=30).
    const renewLease = vi.fn(async () => grantedAt(Date.now() + behindMs, 30));
    const keeper = new LeaseKeeper({ renewLease }, grantedAt(Date.now() + behindMs, 30), { leaseSeconds: 600 });

    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewLease).toHaveBeenCalledTimes(2);
    keeper.stop();
  });

  it.each([
    ['40 s ahead', 40_000],
    ['5 minutes behind', -5 * 60_000],
  ])('without leaseSeconds renews for the length granted, the worker clock %s', async (_, offsetMs) => {
    const renewedAt: number[] = [];
    const renewLease = vi.fn(async (_lease: LeaseInput, _seconds?: number) => (renewedAt.push(Date.now()), grantedAt(Date.now() - offsetMs, 30)));
    const keeper = new LeaseKeeper({ renewLease }, grantedAt(Date.now() - offsetMs, 30));

    await vi.advanceTimersByTimeAsync(40_000);
    keeper.stop();
    expect(renewLease.mock.calls.map(([, seconds]) => seconds)).toEqual([30, 30, 30, 30]);
    // The first may come early (its lease may be old); then every third of the length granted.
    expect(renewedAt.slice(1).map((at, i) => at - renewedAt[i]!)).toEqual([10_000, 10_000, 10_000]);
  });

  it('does not keep the process alive', () => {
    vi.useRealTimers();
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const keeper = new LeaseKeeper({ renewLease: vi.fn() }, leaseFor(1), { leaseSeconds: LEASE_SECONDS });
    const timer = setTimeoutSpy.mock.results.at(-1)!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    keeper.stop();
    setTimeoutSpy.mockRestore();
  });
});
