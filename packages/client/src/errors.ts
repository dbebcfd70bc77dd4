import type { RunStatus } from './generated/graphql/graphql.js';

/** The `extensions.code` values the contract defines (docs/semantics.md, "Errors"). */
export const AUDIT_ERROR_CODES = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'LEASE_LOST',
  'LEASE_EXPIRED',
  'MODEL_NOT_FOUND',
  'NAMESPACE_REJECTED',
  'CONFLICT',
  'INVALID_TRANSITION',
  'UNAVAILABLE',
  'INTERNAL_SERVER_ERROR',
] as const;

export type AuditErrorCode = (typeof AUDIT_ERROR_CODES)[number];

/** The request or its response was lost on the way (network, gateway, timeout, unreadable body). */
export const TRANSPORT_ERROR = 'TRANSPORT_ERROR';

/** One entry of a GraphQL response's `errors`. */
export interface GraphQLErrorPayload {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: { code?: string; [key: string]: unknown };
}

export interface AuditApiErrorDetails {
  code: AuditErrorCode | typeof TRANSPORT_ERROR | (string & {});
  operationName: string;
  retryable: boolean;
  httpStatus?: number;
  graphqlErrors?: readonly GraphQLErrorPayload[];
  /** UNAVAILABLE: how long the server asked the client to wait (Retry-After). */
  retryAfterMs?: number;
  cause?: unknown;
}

/**
 * A failed API call. `code` is the GraphQL `extensions.code`, or `TRANSPORT_ERROR` when no
 * GraphQL answer arrived. `retryable` is true only for transient failures: transport failures
 * and `UNAVAILABLE` (a dependency of the server down for the moment); every other GraphQL error
 * is final. `attempts` says how many times the request was sent.
 */
export class AuditApiError extends Error {
  readonly code: AuditApiErrorDetails['code'];
  readonly operationName: string;
  readonly retryable: boolean;
  readonly httpStatus: number | undefined;
  readonly graphqlErrors: readonly GraphQLErrorPayload[];
  readonly retryAfterMs: number | undefined;
  /**
   * A LEASE_LOST because the run has ended: how it ended (the server's `extensions.runStatus`).
   * A worker cannot read a run it no longer leases; after a lost finishRun answer this says
   * whether the run ended as the finish asked.
   */
  readonly runStatus: RunStatus | undefined;
  attempts = 1;

  constructor(message: string, details: AuditApiErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'AuditApiError';
    this.code = details.code;
    this.operationName = details.operationName;
    this.retryable = details.retryable;
    this.httpStatus = details.httpStatus;
    this.graphqlErrors = details.graphqlErrors ?? [];
    this.retryAfterMs = details.retryAfterMs;
    this.runStatus = this.graphqlErrors.map((entry) => entry.extensions?.runStatus).find((status): status is RunStatus => typeof status === 'string');
  }
}

/** True when `error` is an AuditApiError, optionally with one of the given codes (the contract's, or TRANSPORT_ERROR). */
export function isAuditApiError(error: unknown, ...codes: readonly (AuditErrorCode | typeof TRANSPORT_ERROR)[]): error is AuditApiError {
  return error instanceof AuditApiError && (codes.length === 0 || (codes as readonly string[]).includes(error.code));
}
