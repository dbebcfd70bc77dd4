export { AuditClient, type AuditClientOptions, type CallOptions } from './audit-client.js';
export {
  AUDIT_ERROR_CODES,
  AuditApiError,
  TRANSPORT_ERROR,
  isAuditApiError,
  type AuditApiErrorDetails,
  type AuditErrorCode,
  type GraphQLErrorPayload,
} from './errors.js';
export { AuditTokenRejectedError, LEASE_GONE_CODES, LeaseKeeper, type LeaseKeeperOptions, type LeaseRenewer } from './lease-keeper.js';
export { PROCESS_CLOCK_ID, SequenceCounter, readClock } from './clock.js';
export { DEFAULT_RETRY_POLICY, backoffDelayMs, type FetchLike, type RetryPolicy, type TokenProvider } from './transport.js';
export { OPERATIONS, type Operation } from './operations.js';
export { AuditLeaseLostError } from './lease-lost.js';
export { RunInterruption, RunRecording, type FinishedRun, type RecordingOptions } from './run-recording.js';
export { RunWriter } from './run-writer.js';
export { EventWriter, MAX_BATCH_BYTES, type EventWriterOptions, type LifecycleEventKind } from './event-writer.js';
export { errorJson, toJson } from './json.js';
export type * from './types.js';
