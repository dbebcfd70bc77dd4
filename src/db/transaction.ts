import type { SqlTransactor } from './database.js';
import type { Sql } from './sql.js';

const MAX_ATTEMPTS = 5;

/** SQLSTATEs of serialization failures and deadlocks: the transaction is safe to run again from the start. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/** Judged by the driver's SQLSTATE alone: message text can carry user input (a toolCallId of "call-40001"). */
const isRetryable = (error: unknown): boolean => RETRYABLE_SQLSTATES.has((error as { code?: unknown } | null)?.code as string);

/** Runs `fn` in one short transaction on the driver's own connection, retrying serialization failures. */
export async function inTransaction<T>(driver: SqlTransactor, fn: (sql: Sql) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await driver.transaction(fn);
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
    }
  }
}
