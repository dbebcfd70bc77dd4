import type { Db } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { onOneSnapshot, stampChanges } from './change-cursors.js';
import type { CommittedChange, DomainEvent } from './events.js';

export interface Limits {
  leaseMinSeconds: number;
  leaseMaxSeconds: number;
  maxJsonBytes: number;
}

/** What every domain command needs: the database, the event sink, the configured limits. */
export interface DomainDeps {
  /** The domain's database: `query` runs one statement in autocommit, `transaction` a transaction. */
  db: Db;
  /** Called once per committed command with its changes, stamped with their cursors; never for a rolled-back one. */
  publish(changes: CommittedChange[]): void;
  limits: Limits;
  /**
   * How many calls of single lifecycle events may be under way at once; the events that come
   * beyond wait and share the next call (lifecycle-events.ts). 1 when not given.
   */
  writeCalls?: number;
  /** The id of the database, carried in every change cursor (database-identity.ts). */
  databaseId: string;
  /**
   * Called once a thread is marked deleted (deletion.ts): its open streams end, and its owner's
   * dashboards read a view without it, on every instance.
   */
  threadDeleted?: (threadId: string, ownerId: string) => void;
}

export interface CommandScope {
  /** The transaction's own connection. */
  sql: Sql;
  deps: DomainDeps;
  emit(event: DomainEvent): void;
}

/**
 * Wraps a rule that needs several statements (a run's end and its convergence) as one transaction
 * that stamps its changes with the thread's change cursors (last, in the same transaction) and
 * publishes them after commit. A failed command changes nothing and publishes nothing. `check`,
 * the input checks that need no database, runs first.
 */
export function command<Args extends unknown[], T>(
  body: (scope: CommandScope, ...args: Args) => Promise<T>,
  check?: (deps: DomainDeps, ...args: Args) => void,
): (deps: DomainDeps, ...args: Args) => Promise<T> {
  return async (deps, ...args) => {
    check?.(deps, ...args);
    let committed: CommittedChange[] = [];
    const value = await inTransaction(deps.db, async (sql) => {
      const events: DomainEvent[] = []; // a retried attempt starts afresh
      const result = await body({ sql, deps, emit: (event) => events.push(event) }, ...args);
      committed = events.length > 0 ? await stampChanges(sql, events) : [];
      return result;
    });
    if (committed.length > 0) deps.publish(committed);
    return value;
  };
}

/** What a fenced statement wrote: the value and the changed rows, already stamped with their cursors. */
export interface Written<T> {
  value: T;
  changes: DomainEvent[];
}

/** Publishes the changes a statement wrote, stamped with their cursors by the statement itself. */
export function publishWritten(deps: DomainDeps, changes: DomainEvent[]): void {
  if (changes.length === 0) return;
  deps.publish(changes.map((change) => ({ ...change, cursor: change.row.changeCursor!, committedAt: change.row.changedAt! })));
}

/**
 * What the read-only explanation of a statement that wrote nothing found, when no rule refuses
 * the write (a refusal is thrown): the identical write already done (`replay`), or a state in
 * which the statement would now write (a concurrent change came between), so it runs again.
 */
export type Explanation<T> = { replay: T } | { retry: true };

/** Failures that mean "a concurrent write got there first": the statement wrote nothing, the explanation decides. */
const WROTE_NOTHING_SQLSTATES = new Set(['23505', '40001', '40P01']);

/**
 * The rows a fenced command's statement wrote; none when a concurrent write got there first (a
 * unique key it took, a serialization failure, a deadlock), for the explanation to decide.
 */
export async function writtenRows<Row>(sql: Sql, text: string, params: unknown[]): Promise<Row[]> {
  try {
    return await sql.query<Row>(text, params);
  } catch (error) {
    if (WROTE_NOTHING_SQLSTATES.has((error as { code?: unknown } | null)?.code as string)) return [];
    throw error;
  }
}

/** A statement that keeps losing to concurrent changes of its thread gives up after this many runs. */
const MAX_STATEMENT_RUNS = 8;

export interface FencedCommand<Args extends unknown[], T> {
  /** The rule as one statement in autocommit: it writes only when every rule holds; undefined when it wrote nothing. */
  write: (deps: DomainDeps, ...args: Args) => Promise<Written<T> | undefined>;
  /** Read-only, on one snapshot taken after the statement: throws the refusal, or says what it found. */
  explain: (sql: Sql, ...args: NoInfer<Args>) => Promise<Explanation<NoInfer<T>>>;
}

/**
 * An owner's command as one fenced statement (createThread, createRun; the lifecycle events are functions of
 * the database, lifecycle-events.ts). Only when it wrote nothing does a read-only step run, which
 * names the refusal or returns the replay and never writes; when that state would let the
 * statement write, it runs again.
 */
export function fenced<Args extends unknown[], T>(spec: FencedCommand<Args, T>): (deps: DomainDeps, ...args: Args) => Promise<T> {
  return async (deps, ...args) => {
    for (let run = 1; ; run++) {
      const written = await spec.write(deps, ...args);
      if (written) {
        publishWritten(deps, written.changes);
        return written.value;
      }
      const explained = await onOneSnapshot(deps.db, (sql) => spec.explain(sql, ...args));
      if ('replay' in explained) return explained.replay;
      if (run >= MAX_STATEMENT_RUNS) throw new Error(`A statement wrote nothing ${run} times, though no rule refused it`);
    }
  };
}
