// A worker pool's LeaseKeeper callbacks are its own code (a logger, a metrics client): one that
// throws must neither stop the renewals (the run would be lost) nor crash the process with an
// unhandled rejection from the keeper's background timer.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditApiError, LeaseKeeper, type LeaseInput, type RunLease } from '@agent-audit/client';

const leaseFor = (): RunLease => ({ runId: 'run-1', owner: 'w', epoch: 1, expiresAt: new Date(Date.now() + 30_000).toISOString(), grantedAt: new Date().toISOString() });

describe('LeaseKeeper with a callback that throws', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  let vitestListeners: NodeJS.UnhandledRejectionListener[] = [];
  beforeEach(() => {
    vi.useFakeTimers();
    vi.spyOn(console, 'error').mockImplementation(() => {});
    unhandled.length = 0;
    vitestListeners = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
    for (const listener of vitestListeners) process.on('unhandledRejection', listener);
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('keeps renewing after onRenewError throws, with no unhandled rejection', async () => {
    const transient = new AuditApiError('RenewLease: timed out', { code: 'TRANSPORT_ERROR', operationName: 'RenewLease', retryable: true });
    const renewLease = vi
      .fn<(lease: LeaseInput, seconds?: number) => Promise<RunLease>>()
      .mockRejectedValueOnce(transient)
      .mockImplementation(async () => leaseFor());
    const keeper = new LeaseKeeper({ renewLease }, leaseFor(), {
      leaseSeconds: 30,
      onRenewError: () => {
        throw new Error('the metrics client is down');
      },
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewLease).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(renewLease).toHaveBeenCalledTimes(2);
    expect(unhandled).toEqual([]);
    expect(keeper.signal.aborted).toBe(false);
    keeper.stop();
  });

  it('still aborts its signal when onLost throws, with no unhandled rejection', async () => {
    const lost = new AuditApiError('RenewLease: lost', { code: 'LEASE_LOST', operationName: 'RenewLease', retryable: false });
    const keeper = new LeaseKeeper({ renewLease: async () => Promise.reject(lost) }, leaseFor(), {
      leaseSeconds: 30,
      onLost: () => {
        throw new Error('the handler crashed');
      },
    });
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(keeper.signal.aborted).toBe(true);
    expect(unhandled).toEqual([]);
  });
});
