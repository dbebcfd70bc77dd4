import type { Prisma, PrismaClient } from '../generated/prisma/client.js';

export type Tx = Prisma.TransactionClient;

const MAX_ATTEMPTS = 5;

/** Serialization failures and deadlocks are safe to run again from the start. */
function isRetryable(error: unknown): boolean {
  const text = String((error as { code?: string })?.code ?? '') + ' ' + String((error as Error)?.message ?? '');
  return /P2034|40001|40P01|could not serialize|deadlock detected/.test(text);
}

/** Runs `fn` in one short interactive transaction, retrying serialization failures. */
export async function inTransaction<T>(prisma: PrismaClient, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await prisma.$transaction(fn, { maxWait: 10_000, timeout: 30_000 });
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
    }
  }
}
