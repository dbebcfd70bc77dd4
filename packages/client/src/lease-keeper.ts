import { isAuditApiError, type AuditApiError } from './errors.js';
import type { RetryPolicy } from './transport.js';
import type { LeaseInput, RunLease } from './types.js';
import type { CallOptions } from './audit-client.js';
import { notify } from './callbacks.js';

/**
 * Renewal answers after which the lease cannot come back: the run moved on without this worker.
 * Not UNAUTHENTICATED: a refused token (expired, most often) says nothing of the run, whose
 * lease stays this worker's until it expires (AuditTokenRejectedError).
 */
export const LEASE_GONE_CODES = ['LEASE_LOST', 'LEASE_EXPIRED', 'INVALID_TRANSITION', 'NOT_FOUND', 'FORBIDDEN'] as const;

/**
 * The server refused the worker's token while the keeper renewed a lease (UNAUTHENTICATED; the
 * cause's message says why, e.g. "expired at ..."). The lease is not lost: it stays this worker's
 * until `lease.expiresAt`. Renewing with the same token cannot succeed, so the keeper stopped;
 * before that time, keep it with a client holding a fresh token:
 * `new LeaseKeeper(freshClient, error.lease, options)`. A client whose `token` is a provider
 * gets this only when the provider had no newer token to give.
 */
export class AuditTokenRejectedError extends Error {
  readonly runId: string;

  constructor(
    readonly lease: RunLease,
    cause: AuditApiError,
  ) {
    super(
      `The worker token was refused while renewing the lease of run ${lease.runId} (${cause.code}: ${cause.message}); ` +
        `the lease is still held until ${lease.expiresAt}: renew it with a fresh token before then`,
      { cause },
    );
    this.name = 'AuditTokenRejectedError';
    this.runId = lease.runId;
  }
}

export interface LeaseRenewer {
  /**
   * `retry`: the policy of this one renewal, over the client's (AuditClient.renewLease); `signal`
   * aborts when the keeper stops, cutting the renewal in flight.
   */
  renewLease(lease: LeaseInput, leaseSeconds?: number, retry?: Partial<RetryPolicy>, options?: CallOptions): Promise<RunLease>;
}

export interface LeaseKeeperOptions {
  /** Length requested on each renewal; pass what claimRun was given. Default: the length the server granted the lease. */
  leaseSeconds?: number;
  /** Called once when renewal fails with one of LEASE_GONE_CODES; stop writing for this run. */
  onLost?: (error: AuditApiError) => void;
  /** A renewal failed for a reason that may pass (transport, internal error); the keeper tries again. */
  onRenewError?: (error: unknown) => void;
  /**
   * Called once when the server refuses the token (UNAUTHENTICATED): the keeper stops, the lease
   * is not lost (the signal stays unaborted); refresh the token and keep the lease with a new
   * keeper. Without it, the error goes to onRenewError.
   */
  onTokenRejected?: (error: AuditTokenRejectedError) => void;
}

/**
 * Keeps a run's lease alive by renewing it at about a third of its length, so one or two
 * renewals may fail before it expires. Each renewal is one attempt, given up after a third of
 * the lease (at least 1 s): one that hangs (packets dropped, a stalled server) must not outlast
 * the lease; after a failure the next comes at a third of the time left (at least 1 s later),
 * while the lease is still current. Its timers are unref'd and stop() cuts a renewal in flight:
 * it never keeps a process alive.
 */
export class LeaseKeeper {
  private current: RunLease;
  private readonly leaseMs: number;
  private readonly leaseSeconds: number;
  private readonly lostController = new AbortController();
  private readonly stopController = new AbortController();
  /** When the current lease expires on this process's monotonic clock (performance.now). */
  private expiresAtMs: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly client: LeaseRenewer,
    lease: RunLease,
    private readonly options: LeaseKeeperOptions = {},
  ) {
    this.current = lease;
    this.leaseSeconds = options.leaseSeconds ?? Math.max(1, Math.round(grantedMs(lease) / 1000));
    this.leaseMs = this.leaseSeconds * 1000;
    // The lease may have been granted a while ago (handed over after a refused token): this once,
    // this machine's clock may say it has less left than it was granted.
    this.expiresAtMs = performance.now() + Math.min(grantedMs(lease), msUntil(lease.expiresAt));
    this.schedule();
  }

  /** The newest lease; pass it to lifecycle calls. */
  get lease(): RunLease {
    return this.current;
  }

  /** Aborted, with the AuditApiError as reason, when the lease is lost. */
  get signal(): AbortSignal {
    return this.lostController.signal;
  }

  /** Stops renewing, cutting a renewal in flight. The lease itself stays until it expires or the run ends. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopController.abort(new Error('LeaseKeeper stopped'));
  }

  /**
   * The next renewal, at a third of what is left of the lease. What is left is counted from the
   * length the server granted (expiresAt − grantedAt, both on the database's clock; the server may
   * clamp the requested length) on this process's monotonic clock, never by comparing expiresAt
   * with this machine's clock, which may be minutes off.
   */
  private schedule(): void {
    if (this.stopped) return;
    const lengthMs = Math.min(this.leaseMs, this.expiresAtMs - performance.now());
    const delayMs = Math.max(Math.min(1_000, this.leaseMs / 3), lengthMs / 3);
    this.timer = setTimeout(() => void this.renew(), delayMs);
    this.timer.unref?.();
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    try {
      // Granted after it was sent: counted from then, it expires no sooner than counted.
      const sentAtMs = performance.now();
      this.current = await this.client.renewLease(this.current, this.leaseSeconds, { maxAttempts: 1, timeoutMs: Math.max(1_000, this.leaseMs / 3) }, { signal: this.stopController.signal });
      this.expiresAtMs = sentAtMs + grantedMs(this.current);
    } catch (error) {
      if (this.stopped) return;
      if (isAuditApiError(error, ...LEASE_GONE_CODES)) {
        this.stop();
        this.lostController.abort(error);
        notify('LeaseKeeper onLost', this.options.onLost, error);
        return;
      }
      if (isAuditApiError(error, 'UNAUTHENTICATED')) {
        this.stop();
        const rejected = new AuditTokenRejectedError(this.current, error);
        if (this.options.onTokenRejected) notify('LeaseKeeper onTokenRejected', this.options.onTokenRejected, rejected);
        else notify('LeaseKeeper onRenewError', this.options.onRenewError, rejected);
        return;
      }
      notify('LeaseKeeper onRenewError', this.options.onRenewError, error);
    }
    this.schedule();
  }
}

function msUntil(isoTime: string): number {
  return Date.parse(isoTime) - Date.now();
}

/** How long the lease lasts from its grant, on the server's clock; by this machine's clock for a lease without grantedAt. */
function grantedMs(lease: RunLease): number {
  const length = Date.parse(lease.expiresAt) - Date.parse(lease.grantedAt);
  return Number.isNaN(length) ? msUntil(lease.expiresAt) : length;
}
