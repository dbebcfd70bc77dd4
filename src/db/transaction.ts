import type { Prisma } from '../generated/prisma/client.js';
import type { SqlTransactor } from './database.js';
import type { Sql } from './sql.js';

export type Tx = Prisma.TransactionClient;

const MAX_ATTEMPTS = 5;

/** Serialization failures and deadlocks are safe to run again from the start. */
function isRetryable(error: unknown): boolean {
  const text = String((error as { code?: string })?.code ?? '') + ' ' + String((error as Error)?.message ?? '');
  return /40001|40P01|could not serialize|deadlock detected/.test(text);
}

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
