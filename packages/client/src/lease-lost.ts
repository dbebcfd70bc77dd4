import type { AuditApiError } from './errors.js';

/**
 * The run's lease is gone (it was cancelled, swept after expiry, or taken over, or its thread was
 * deleted: `cause.code` NOT_FOUND): the audit server
 * refuses every further write for it, so the adapter stops writing and the agent stops with this.
 */
export class AuditLeaseLostError extends Error {
  constructor(
    readonly runId: string,
    cause: AuditApiError,
  ) {
    super(`The audit lease of run ${runId} is lost (${cause.code}): its events are no longer recorded`, { cause });
    this.name = 'AuditLeaseLostError';
  }
}
