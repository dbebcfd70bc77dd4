import { expect } from 'vitest';
import { AuditApiError } from '@agent-audit/client';

/** The AuditApiError a client call was refused with (fails the test when the call succeeds or fails otherwise). */
export async function rejectionOf(promise: Promise<unknown>): Promise<AuditApiError> {
  const error = await promise.then(
    () => new Error('expected the call to be refused'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(AuditApiError);
  return error as AuditApiError;
}
