import type { Message, Run } from '../generated/prisma/client.js';

/**
 * What a write changed, for live subscribers: the changed row as the command left it. Commands
 * emit these; command() stamps them with the thread's next change cursors in the same
 * transaction (src/domain/change-cursors.ts) and publishes them only after the commit.
 */
export type DomainEvent =
  | { kind: 'audit'; threadId: string; row: Message }
  | { kind: 'run'; threadId: string; row: Run; leaseOnly?: boolean };

/** A committed change: its row carries the change's cursor and commit time. */
export type CommittedChange = DomainEvent & { cursor: bigint; committedAt: Date };

export const auditChanged = (row: Message): DomainEvent => ({ kind: 'audit', threadId: row.threadId, row });

export const runChanged = (row: Run): DomainEvent => ({ kind: 'run', threadId: row.threadId, row });

/** A renewal changes the run's lease expiry, not its status: threadChanges shows it, runChanged does not. */
export const leaseRenewed = (row: Run): DomainEvent => ({ kind: 'run', threadId: row.threadId, row, leaseOnly: true });
