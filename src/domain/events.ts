/**
 * What a committed write changed, for live subscribers. Domain operations return these next to
 * their result; they are published only after the transaction committed (src/db/transaction.ts),
 * and carry ids only: subscribers re-read the rows on delivery.
 */
export type DomainEvent =
  | { kind: 'audit'; threadId: string; runId: string; auditId: string; role: 'ASSISTANT' | 'TOOL' }
  | { kind: 'run'; threadId: string; runId: string };

export const auditChanged = (
  row: { id: string; threadId: string; runId: string | null; role: string },
): DomainEvent => ({
  kind: 'audit',
  threadId: row.threadId,
  runId: row.runId!,
  auditId: row.id,
  role: row.role === 'TOOL' ? 'TOOL' : 'ASSISTANT',
});

export const runChanged = (run: { id: string; threadId: string }): DomainEvent => ({
  kind: 'run',
  threadId: run.threadId,
  runId: run.id,
});
