// A framework adapter's recording (RunRecording) when its worker token is refused while it keeps
// the lease: that is said where write errors go, as its own error naming the token; the lease is
// not taken as lost (the run goes on until the lease expires), so the agent is not aborted.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditApiError, AuditTokenRejectedError, RunRecording, type AuditClient, type RunLease } from '@agent-audit/client';

const lease = (): RunLease => ({ runId: 'run-1', owner: 'worker-1', epoch: 1, expiresAt: new Date(Date.now() + 30_000).toISOString(), grantedAt: new Date().toISOString() });

describe('RunRecording', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('reports a refused token to onWriteError as an AuditTokenRejectedError, without aborting the run', async () => {
    const refused = new AuditApiError('RenewLease: the token expired', { code: 'UNAUTHENTICATED', operationName: 'RenewLease', retryable: false, httpStatus: 401 });
    const client = { renewLease: vi.fn().mockRejectedValue(refused), clockId: undefined } as unknown as AuditClient;
    const onWriteError = vi.fn();
    const recording = new RunRecording(client, lease(), { leaseSeconds: 30, onWriteError });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onWriteError).toHaveBeenCalledTimes(1);
    expect(onWriteError.mock.calls[0]![0]).toBeInstanceOf(AuditTokenRejectedError);
    expect(recording.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(onWriteError).toHaveBeenCalledTimes(1); // said once: the keeper stops renewing
  });
});
