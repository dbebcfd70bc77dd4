import type { PrismaClient } from '../generated/prisma/client.js';
import type { SqlTransactor } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { stampChanges } from './change-cursors.js';
import type { CommittedChange, DomainEvent } from './events.js';

export interface Limits {
  leaseMinSeconds: number;
  leaseMaxSeconds: number;
  maxJsonBytes: number;
}

/** What every domain command needs: the database, the event sink, the configured limits. */
export interface DomainDeps {
  /** The read side (Pothos, access checks outside commands). */
  prisma: PrismaClient;
  /** The write path: each command is one transaction of plain SQL on one connection. */
  sql: SqlTransactor;
  /** The timeline and its relations, read as plain SQL (audit-reads.ts). */
  read: Sql;
  /** One statement in autocommit: the fast path of the lifecycle writes (fast-write.ts). */
  statement: Sql;
  /** Called once per committed command with its changes, stamped with their cursors; never for a rolled-back one. */
  publish(changes: CommittedChange[]): void;
  limits: Limits;
  /** Called once a thread is marked deleted (deletion.ts): its open streams end, on every instance. */
  threadDeleted?: (threadId: string) => void;
}

export interface CommandScope {
  /** The transaction's own connection: the write path runs plain SQL, the read side keeps Prisma. */
  sql: Sql;
  deps: DomainDeps;
  emit(event: DomainEvent): void;
}

/**
 * A command's fast path (fast-write.ts): one statement in autocommit that writes only when every
 * rule holds and returns the written rows, already stamped with their change cursors. Undefined
 * when it wrote nothing: the command then runs its transaction, which names the refusal or
 * returns the replay.
 */
export type FastPath<Args extends unknown[], T> = (
  deps: DomainDeps,
  ...args: Args
) => Promise<{ value: T; changes: DomainEvent[] } | undefined>;

/**
 * Wraps a domain operation as one transaction that stamps its changes with the thread's change
 * cursors (last, in the same transaction) and publishes them after commit. A failed command
 * changes nothing and publishes nothing. With a fast path, the transaction runs only when the
 * fast path wrote nothing. `check`, the input checks that need no database, runs once before
 * either: neither path repeats them.
 */
export function command<Args extends unknown[], T>(
  body: (scope: CommandScope, ...args: Args) => Promise<T>,
  fast?: FastPath<Args, T>,
  check?: (deps: DomainDeps, ...args: Args) => void,
): (deps: DomainDeps, ...args: Args) => Promise<T> {
  return async (deps, ...args) => {
    check?.(deps, ...args);
    const done = fast ? await fast(deps, ...args) : undefined;
    if (done) {
      deps.publish(done.changes.map((change) => ({ ...change, cursor: change.row.changeCursor!, committedAt: change.row.changedAt! })));
      return done.value;
    }
    let committed: CommittedChange[] = [];
    const value = await inTransaction(deps.sql, async (sql) => {
      const events: DomainEvent[] = []; // a retried attempt starts afresh
      const result = await body({ sql, deps, emit: (event) => events.push(event) }, ...args);
      committed = events.length > 0 ? await stampChanges(sql, events) : [];
      return result;
    });
    if (committed.length > 0) deps.publish(committed);
    return value;
  };
}
