import type { Tx } from '../db/transaction.js';

/** Dashboard counts, read from the ToolCall projection only (never from audit rows). */
export async function toolCallStats(tx: Tx, threadId: string) {
  const groups = await tx.toolCall.groupBy({
    by: ['name', 'status'],
    where: { threadId },
    _count: { _all: true },
    orderBy: [{ name: 'asc' }, { status: 'asc' }],
  });
  return groups.map((group) => ({ name: group.name, status: group.status, count: group._count._all }));
}
