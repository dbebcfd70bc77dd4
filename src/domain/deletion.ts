import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToWrites } from 'node:timers/promises';
import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { assertCanReadThread } from './access.js';
import type { DomainDeps } from './command.js';
import { forbidden, notFound } from './errors.js';
import { rowId } from './ids.js';

/*
 * Deleting a thread (docs/deletion.md). One transaction holding a thread of hundreds of thousands
 * of audits would hold PGlite's only connection for its whole length (every other write waits),
 * and on PostgreSQL keep one long transaction writing on a shared machine. So a deletion is:
 *
 *   1. the mark: one short transaction that locks the thread's runs (the write path's first lock)
 *      and the thread, sets `thread.deleted_at` and revokes the runs' leases. From its commit on,
 *      every read, write and subscription of the thread is NOT_FOUND (the thread is looked up
 *      with `deleted_at IS NULL` everywhere) and no fast path can write to its runs.
 *   2. the removal: bounded batches (sized to take ~20 ms), each one statement in autocommit.
 *   3. the proof: a read after the last batch finds none of the thread's rows; its time is the
 *      receipt's `verifiedAt`.
 */

/** What a deletion removed, and when a read after it found nothing of the thread left. */
export interface DeletionReceipt {
  threadId: string;
  runs: number;
  audits: number;
  toolCalls: number;
  messages: number;
  verifiedAt: Date;
}

export interface DeletionOptions {
  /** Rows removed per statement; default: sized by time, below. */
  batchRows?: number;
}

/**
 * Batches are sized to take about this long: on PGlite every other write waits for the batch in
 * progress (one connection), so a batch's length is what a deletion adds to their latency. The
 * size doubles while batches are quicker and halves while they are slower, within bounds.
 */
export const DELETION_BATCH_MS = 20;
const BATCH_ROWS = { first: 200, min: 20, max: 5000 };

function batchSizer(fixed: number | undefined) {
  let units = fixed ?? BATCH_ROWS.first;
  return {
    units: () => units,
    took(ms: number) {
      if (fixed !== undefined) return;
      if (ms < DELETION_BATCH_MS / 2) units = Math.min(BATCH_ROWS.max, units * 2);
      else if (ms > DELETION_BATCH_MS * 2) units = Math.max(BATCH_ROWS.min, Math.floor(units / 2));
    },
  };
}

/** `deleteThread(id)`: the owner, admin or superadmin; a worker is FORBIDDEN; anyone else gets what `thread(id)` gives. */
export async function deleteThread(deps: DomainDeps, principal: Principal, threadId: string, options: DeletionOptions = {}) {
  if (principal.role === 'worker') throw forbidden('Workers may not delete threads');
  const id = rowId(threadId, 'Thread');
  const marked = await markDeleted(deps, id, (thread) => assertCanReadThread(principal, thread));
  if (!marked) throw notFound('Thread', threadId);
  return removeMarkedThread(deps, id, options);
}

interface MarkableThread {
  id: string;
  ownerId: string;
}

/**
 * Step 1. `admit` throws to refuse (access), or returns false to leave the thread alone (the
 * retention sweep: a change committed since it was chosen). False, too, when there is no such
 * thread or it is already being deleted.
 */
export async function markDeleted(
  deps: DomainDeps,
  threadId: string,
  admit: (thread: MarkableThread, sql: Sql) => Promise<boolean | void> | boolean | void,
): Promise<boolean> {
  const [visible] = await deps.db.query<MarkableThread>('SELECT id, owner_id FROM thread WHERE id = $1::uuid AND deleted_at IS NULL', [threadId]);
  if (!visible || (await admit(visible, deps.db)) === false) return false;
  const ownerId = await inTransaction(deps.db, async (sql) => {
    // The write path locks a run, then the thread: the same order here, so a writer in flight
    // finishes first (its rows are then removed with the rest) or finds the thread gone.
    await sql.query('SELECT id FROM run WHERE thread_id = $1::uuid ORDER BY id FOR UPDATE', [threadId]);
    const [thread] = await sql.query<MarkableThread>(
      'SELECT id, owner_id FROM thread WHERE id = $1::uuid AND deleted_at IS NULL FOR UPDATE',
      [threadId],
    );
    if (!thread || (await admit(thread, sql)) === false) return null;
    // Its createId goes with it: from the mark on, the key creates a new thread.
    await sql.query('UPDATE thread SET deleted_at = now(), create_id = NULL WHERE id = $1::uuid', [threadId]);
    await revokeLeases(sql, threadId);
    return thread.ownerId;
  });
  if (ownerId === null) return false;
  deps.threadDeleted?.(threadId, ownerId);
  return true;
}

/** No fast path writes to a run that is not RUNNING or QUEUED with the caller's lease (fast-write.ts). */
const revokeLeases = (sql: Sql, threadId: string) =>
  sql.query(
    `UPDATE run SET status = CASE WHEN status IN ('QUEUED', 'RUNNING') THEN 'CANCELLED'::"RunStatus" ELSE status END,
       lease_owner = NULL, lease_expires_at = NULL, claim_id = NULL
     WHERE thread_id = $1::uuid AND (status IN ('QUEUED', 'RUNNING') OR lease_owner IS NOT NULL)`,
    [threadId],
  );

/**
 * Each batch adds what it removed to the thread row's tally in its own statement: a deletion a
 * crash cut short, finished later by another instance, still has a receipt that counts it all.
 */
const TALLY = `tally AS (UPDATE thread t SET deleted_runs = t.deleted_runs + c.runs, deleted_audits = t.deleted_audits + c.audits,
    deleted_tool_calls = t.deleted_tool_calls + c."toolCalls", deleted_messages = t.deleted_messages + c.messages
    FROM counts c WHERE t.id = $1::uuid)`;

/**
 * One batch: the next `$2` rows of one table of the thread, whatever run they belong to (a run of
 * 100,000 audits is as many batches, not one statement), found on one of the thread's indexes;
 * after `$3` on that index's keyset where it has one, so no batch rescans what earlier ones removed.
 * The steps go in the foreign keys' order: tool audits (they reference their ToolCall), ToolCalls
 * (they reference the model audit that declared them), the other audits, the ordinary messages,
 * then the runs, newest first (a resumed run references the run it resumes).
 */
function batchOf(table: 'message' | 'tool_call' | 'run', only: string, counts: string, keyset: 'id' | 'created_order' | null) {
  // From the keyset's start while `$3` is null, as a bound the index takes (`$3 IS NULL OR …` would only filter).
  const [key, order, past, start] =
    keyset === 'created_order' ? ['created_order', 'DESC', '<', `${2n ** 63n - 1n}::bigint`] : ['id', 'ASC', '>', `'00000000-0000-0000-0000-000000000000'::uuid`];
  const from = keyset === null ? '' : `AND ${key} ${past} coalesce($3, ${start}) ORDER BY ${key} ${order}`;
  const sql = `WITH doomed AS (SELECT id, ${key} AS key FROM ${table} WHERE thread_id = $1::uuid ${only} ${from} LIMIT $2),
    gone AS (DELETE FROM ${table} x USING doomed WHERE x.id = doomed.id RETURNING ${table === 'message' ? 'x.message_type' : '1'}),
    counts AS (SELECT ${counts}),
    ${TALLY}
    SELECT counts.*, (SELECT count(*) FROM doomed)::int AS rows,
      ${keyset === null ? 'NULL' : `(SELECT key FROM doomed ORDER BY key ${order === 'ASC' ? 'DESC' : 'ASC'} LIMIT 1)::text`} AS after FROM counts`;
  return { sql, keyset: keyset !== null };
}

/** As the audit indexes on (thread_id, id) are partial. */
const AUDITS = `AND message_type IN ('model_audit', 'tool_audit')`;
const REMOVAL_STEPS = [
  batchOf('message', `${AUDITS} AND tool_call_row_id IS NOT NULL`, `0 AS runs, (SELECT count(*) FROM gone)::int AS audits, 0 AS messages, 0 AS "toolCalls"`, 'id'),
  batchOf('tool_call', '', `0 AS runs, 0 AS audits, 0 AS messages, (SELECT count(*) FROM gone)::int AS "toolCalls"`, 'id'),
  batchOf('message', AUDITS, `0 AS runs, (SELECT count(*) FROM gone)::int AS audits, 0 AS messages, 0 AS "toolCalls"`, 'id'),
  batchOf('message', '', `0 AS runs, 0 AS audits, (SELECT count(*) FROM gone)::int AS messages, 0 AS "toolCalls"`, null),
  batchOf('run', '', `(SELECT count(*) FROM gone)::int AS runs, 0 AS audits, 0 AS messages, 0 AS "toolCalls"`, 'created_order'),
];

type Counts = Omit<DeletionReceipt, 'threadId' | 'verifiedAt'>;

/** Steps 2 and 3 for a thread already marked. */
export async function removeMarkedThread(deps: DomainDeps, threadId: string, options: DeletionOptions = {}): Promise<DeletionReceipt> {
  const counts: Counts = { runs: 0, audits: 0, toolCalls: 0, messages: 0 };
  const size = batchSizer(options.batchRows);
  for (const step of REMOVAL_STEPS) {
    let after: string | null = null;
    for (;;) {
      const rows = size.units();
      const began = performance.now();
      const [batch]: (Counts & { rows: number; after: string | null })[] = await deps.db.query(step.sql, step.keyset ? [threadId, rows, after] : [threadId, rows]);
      size.took(performance.now() - began);
      add(counts, batch!);
      if (batch!.rows < rows) break;
      after = batch!.after;
      // Writes to other threads that queued behind this batch go first (PGlite has one connection).
      await yieldToWrites();
    }
  }
  // The tally counts the batches of every instance that worked on this deletion; if another one
  // removed the thread row first, its receipt has them, and this one says what this one removed.
  const [tally] = await deps.db.query<Counts>(
    `DELETE FROM thread WHERE id = $1::uuid AND deleted_at IS NOT NULL
     RETURNING deleted_runs AS runs, deleted_audits AS audits, deleted_tool_calls AS "toolCalls", deleted_messages AS messages`,
    [threadId],
  );
  return { threadId, ...(tally ?? counts), verifiedAt: await verifiedGone(deps.db, threadId) };
}

function add(counts: Counts, batch: Counts): void {
  for (const kind of ['runs', 'audits', 'toolCalls', 'messages'] as const) counts[kind] += Number(batch[kind]);
}

/** Step 3: the database's time of a read that found none of the thread's rows in any table. */
async function verifiedGone(sql: Sql, threadId: string): Promise<Date> {
  const [check] = await sql.query<{ left: number; at: Date }>(
    `SELECT ((SELECT count(*) FROM thread WHERE id = $1::uuid) + (SELECT count(*) FROM run WHERE thread_id = $1::uuid)
      + (SELECT count(*) FROM message WHERE thread_id = $1::uuid) + (SELECT count(*) FROM tool_call WHERE thread_id = $1::uuid)
      + (SELECT count(*) FROM recent_change WHERE thread_id = $1::uuid))::int AS left,
      clock_timestamp() AS at`,
    [threadId],
  );
  if (check!.left !== 0) throw new Error(`Thread ${threadId}: ${check!.left} rows remain after its deletion`);
  return check!.at;
}

/** A deletion a crashed instance left half done: marked this long ago and still there. */
const ABANDONED_AFTER = "interval '10 minutes'";

/** Finishes deletions whose instance stopped before their last batch (no receipt: nobody waits for it). */
export async function finishAbandonedDeletions(deps: DomainDeps, options: DeletionOptions = {}): Promise<DeletionReceipt[]> {
  const abandoned = await deps.db.query<{ id: string }>(
    `SELECT id FROM thread WHERE deleted_at < now() - ${ABANDONED_AFTER} ORDER BY deleted_at LIMIT 100`,
  );
  const receipts: DeletionReceipt[] = [];
  for (const { id } of abandoned) receipts.push(await removeMarkedThread(deps, id, options));
  return receipts;
}

/**
 * The time of a thread's latest change: its creation, its newest chat message, and the commit
 * times of its latest run and audit changes (each the row with the highest change cursor, found
 * on the (thread_id, change_cursor) indexes, not by scanning the thread).
 */
export const LATEST_CHANGE = (thread: string) => `greatest(${thread}.created_at,
  (SELECT r.changed_at FROM run r WHERE r.thread_id = ${thread}.id AND r.change_cursor IS NOT NULL ORDER BY r.change_cursor DESC LIMIT 1),
  (SELECT m.changed_at FROM message m WHERE m.thread_id = ${thread}.id AND m.change_cursor IS NOT NULL ORDER BY m.change_cursor DESC LIMIT 1),
  (SELECT m.created_at FROM message m WHERE m.thread_id = ${thread}.id AND m.message_type = 'chat' ORDER BY m.created_at DESC LIMIT 1))`;

export interface RetentionSweep {
  /** Threads whose latest change is before this are deleted. */
  olderThan: Date;
  /** Threads looked at per query. */
  batchThreads?: number;
  batchRows?: number;
  /** Each receipt, as it is issued. */
  onReceipt: (receipt: DeletionReceipt) => void;
}

/**
 * Deletes, by the rule of deleteThread, every thread whose latest change is before `olderThan`,
 * a page of threads at a time and each in bounded batches. A thread written to after it was
 * chosen is rechecked under its lock and kept.
 */
export async function sweepRetention(deps: DomainDeps, sweep: RetentionSweep): Promise<number> {
  const isDue = async (thread: MarkableThread, sql: Sql) => {
    const [due] = await sql.query<{ due: boolean }>(
      `SELECT ${LATEST_CHANGE('t')} < $2::timestamptz AS due FROM thread t WHERE t.id = $1::uuid`,
      [thread.id, sweep.olderThan],
    );
    return due?.due === true;
  };
  const pageSize = sweep.batchThreads ?? 100;
  let deleted = 0;
  let after: { createdAt: Date; id: string } | null = null;
  for (;;) {
    // A page of the threads created before the cut-off, each asked for its latest change: at most
    // `pageSize` asked per statement, however many old threads are still in use (none of them due).
    const page: { id: string; createdAt: Date; due: boolean }[] = await deps.db.query(
      `SELECT t.id, t.created_at, ${LATEST_CHANGE('t')} < $1::timestamptz AS due
       FROM (SELECT * FROM thread WHERE created_at < $1::timestamptz AND deleted_at IS NULL
               AND (created_at, id) > (coalesce($3::timestamptz, '-infinity'), coalesce($4::uuid, '00000000-0000-0000-0000-000000000000'))
             ORDER BY created_at, id LIMIT $2) t
       ORDER BY t.created_at, t.id`,
      [sweep.olderThan, pageSize, after?.createdAt ?? null, after?.id ?? null],
    );
    for (const { id, due } of page) {
      // Rechecked inside the mark's transaction, after its locks: a write that got in first keeps the thread.
      if (!due || !(await markDeleted(deps, id, isDue))) continue;
      sweep.onReceipt(await removeMarkedThread(deps, id, { batchRows: sweep.batchRows }));
      deleted++;
    }
    if (page.length < pageSize) return deleted;
    after = page.at(-1)!;
  }
}
