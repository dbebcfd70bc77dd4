import type { SqlTransactor } from './database.js';
import type { Sql } from './sql.js';

const MAX_ATTEMPTS = 5;

/** SQLSTATEs of serialization failures and deadlocks: the transaction is safe to run again from the start. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/** Judged by the driver's SQLSTATE alone: message text can carry user input (a toolCallId of "call-40001"). */
const isRetryable = (error: unknown): boolean => RETRYABLE_SQLSTATES.has((error as { code?: unknown } | null)?.code as string);

/** Runs `run` (one transaction, or one statement in autocommit) again after a serialization failure or deadlock. */
export async function withRetries<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
    }
  }
}

/** Runs `fn` in one short transaction on the driver's own connection, retrying serialization failures. */
export const inTransaction = <T>(driver: SqlTransactor, fn: (sql: Sql) => Promise<T>): Promise<T> => withRetries(() => driver.transaction(fn));
