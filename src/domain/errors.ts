import type { RunStatus } from '../generated/prisma/enums.js';

/**
 * The contract's expected failure codes (docs/semantics.md, "Errors"); the clients keep the same
 * list (test/schema/error-codes.unit.test.ts).
 */
export const ERROR_CODES = [
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
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * An expected failure of a domain rule. The GraphQL layer maps it to `extensions.code` in one
 * place (src/graphql/errors.ts); anything that is not a DomainError is masked as internal.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** A LEASE_LOST refusal of a run that ended: how it ended (a worker may not read the run). */
    readonly runStatus?: RunStatus,
  ) {
    // Without frames, as withoutFrames below (super cannot go in a callback).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'DomainError';
  }
}

/**
 * Builds an error without capturing the stack (a DomainError is always built so). A refusal is an answer, not a fault: where it was
 * raised helps no one, and capturing the frames (which the GraphQL layer reads when it wraps an
 * error, through source maps) is most of an error answer's CPU (bench/request-cost.ts).
 */
export function withoutFrames<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export const unauthenticated = (message = 'A valid bearer token is required') => new DomainError('UNAUTHENTICATED', message);
export const forbidden = (message = 'Not allowed') => new DomainError('FORBIDDEN', message);
export const notFound = (what: string, id: string) => new DomainError('NOT_FOUND', `${what} ${id} not found`);
export const badInput = (message: string) => new DomainError('BAD_USER_INPUT', message);
export const invalidTransition = (message: string) => new DomainError('INVALID_TRANSITION', message);
export const conflict = (message: string) => new DomainError('CONFLICT', message);
