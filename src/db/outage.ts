import { errorFields, log, outsideErrorFields } from '../log.js';
import { backgroundFailures, zeroed } from '../metrics.js';

/**
 * Whether a failure means a dependency cannot be reached, or answer, for the moment (the request may be sent
 * again): judged by the driver's SQLSTATE or the socket's errno name, never by message text
 * (which can carry user input), plus the pool's own acquire timeout and the client's query timeout.
 *
 * - 57P01 admin_shutdown (pg_terminate_backend, a restart), 57P02 crash_shutdown,
 *   57P03 cannot_connect_now (starting up, in recovery), 53300 too_many_connections,
 *   class 08 (connection exceptions); 08P01 protocol_violation only when FATAL, as PgBouncer
 *   ends a session it cannot serve (query_wait_timeout, its server gone): raised as an ERROR it is
 *   a statement the server could not take (a bind with more parameters than it has), a bug;
 * - 55000 object_not_in_prerequisite_state raised FATAL, which ends the session: at connect, a
 *   database not accepting connections (ALTER DATABASE … ALLOW_CONNECTIONS false, as during a
 *   maintenance). Raised as an ERROR, 55000 is a statement's (currval before nextval): a bug;
 * - 57014 query_canceled (the statement timeout, a cancel) and 55P03 lock_not_available (a lock
 *   timeout): the database was too busy to answer in time, and the transaction rolled back;
 * - 53100 disk_full: the database cannot write (the statement, and its transaction, changed
 *   nothing); the same request succeeds once space is freed (isDiskFull);
 * - ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, EAI_AGAIN: the socket.
 */
const DISK_FULL = '53100';
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03', DISK_FULL]);
const FATAL_SQLSTATES = new Set(['55000', '08P01']);
/** An SQLSTATE (and its severity, for those that are an outage only when FATAL) that says the database cannot be reached. */
const isUnavailableState = (code: string | undefined, severity: unknown) =>
  code !== undefined && (SQLSTATES.has(code) || (FATAL_SQLSTATES.has(code) ? severity === 'FATAL' : code.startsWith('08')));
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** pg's error for a query its client gave up waiting for (query_timeout: no answer a little past the statement timeout). */
export const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';

/** pg's own wordings for a connection it lost or could not get (errors without a code). */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Connection terminated due to connection timeout',
  QUERY_TIMEOUT_MESSAGE,
];

/** Prisma's codes for the same (its driver adapter maps pg's errors): not reachable, timed out, closed, pool timeout, too many connections. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

export const isUnavailable = (error: unknown): boolean => someCause(error, (each) => {
  const code = (each as { code?: unknown }).code;
  if (typeof code === 'string' && (isUnavailableState(code, (each as { severity?: unknown }).severity) || SOCKET_ERRORS.has(code) || PRISMA_CODES.has(code))) return true;
  const adapterCause = adapterCauseOf(each);
  if (adapterCause && (ADAPTER_KINDS.has(adapterCause.kind ?? '') || isUnavailableState(adapterCause.originalCode, adapterCause.severity))) return true;
  // pg's own errors carry no code, and no user input: their messages are fixed texts.
  return code === undefined && !('severity' in each) && PG_CONNECTION_MESSAGES.includes(each.message);
});

/** Whether the database refused a write for want of disk space (an outage of its own kind: UNAVAILABLE, saying so). */
export const isDiskFull = (error: unknown): boolean =>
  someCause(error, (each) => (each as { code?: unknown }).code === DISK_FULL || adapterCauseOf(each)?.originalCode === DISK_FULL);

/**
 * Whether the database refused a statement for going past one of its own size limits (SQLSTATE
 * 54000 program_limit_exceeded: a jsonb value of more than 256 MiB of elements, say). It depends
 * on the input alone: the same request fails again.
 */
export const isProgramLimit = (error: unknown): boolean =>
  someCause(error, (each) => (each as { code?: unknown }).code === '54000' || adapterCauseOf(each)?.originalCode === '54000');

const adapterCauseOf = (error: Error) =>
  (error as { meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string; severity?: string } } } }).meta?.driverAdapterError?.cause;

/** Whether `error` or one it wraps (Prisma's adapter wraps the driver's error; an AggregateError, a connect to several addresses, holds several) passes `test`. */
function someCause(error: unknown, test: (error: Error) => boolean, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 4) return false;
  if (test(error)) return true;
  const inner = (error as { cause?: unknown }).cause;
  if (inner && someCause(inner, test, depth + 1)) return true;
  if (error instanceof AggregateError) return error.errors.some((each) => someCause(each, test, depth + 1));
  return false;
}

/** What a log line says of a failure: an outage's without a stack (it is no bug), anything else's as errorFields does. */
export const failureFields = (error: unknown) => (isUnavailable(error) ? outsideErrorFields(error) : errorFields(error));

/**
 * A job that runs again and again and retries what failed (a poll, a sweep, a stream's catch-up):
 * an outage is one line when it first fails (warn when the database cannot be reached, error for
 * anything else) and one when it works again, never a line per try. The ways a database cannot be
 * reached (refused, reset, terminated, timed out) are one kind, as they alternate in one outage;
 * a failure of another kind while it keeps failing is a line of its own. Every failed try counts in
 * agent_audit_background_failures_total{work}, at 0 from the job's start (`zeroed`).
 */
export function retriedWork(work: string, what: string, fields: Record<string, unknown>) {
  let failing: { sinceMs: number; tries: number; kind: string } | null = null;
  zeroed(backgroundFailures, [{ work }]);
  return {
    failed(error: unknown): void {
      backgroundFailures.inc({ work });
      const described = failureFields(error);
      const unreachable = isUnavailable(error);
      const kind = unreachable ? 'database unreachable' : `${described.code ?? ''} ${described.message}`;
      const tries = (failing?.tries ?? 0) + 1;
      if (failing?.kind !== kind) {
        const line = { ...fields, error: described };
        if (unreachable) log.warn(line, `${what} failed: the database cannot be reached; retrying`);
        else log.error(line, `${what} failed; retrying`);
      }
      failing = { sinceMs: failing?.sinceMs ?? Date.now(), tries, kind };
    },
    succeeded(): void {
      if (!failing) return;
      log.info({ ...fields, failedTries: failing.tries, failedForMs: Date.now() - failing.sinceMs }, `${what} works again`);
      failing = null;
    },
  };
}
