import type { SqlTransactor } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import { onOneSnapshot } from '../domain/change-cursors.js';
import { isRunEnded } from '../domain/runs.js';
import type { Message, Run, ToolCall } from '../generated/prisma/client.js';

/*
 * The export queue (prisma/migrations/20261201210000_export_queue, docs/export.md "How it keeps
 * its place"). A trigger on thread.change_cursor gives a changed thread a row in export_pending
 * in the changing transaction. An exporter claims rows for a while, reads each claimed thread's
 * changes after its export_position up to the thread's cursor on one snapshot, exports them, then
 * advances the position and deletes the row unless the thread changed meanwhile.
 *
 * Why this is complete: per thread, cursors are contiguous and in commit order, and the snapshot
 * that reads thread.change_cursor = C sees every change up to C committed (the thread row lock is
 * held from the bump to the commit). A late commit is never skipped: its pending row becomes
 * visible when it commits, or the release, which waits for it on the thread row lock, sees its
 * cursor and keeps the row.
 */

export interface ClaimedThread {
  threadId: string;
  /** Pending for longer than the exporter's poll: the export is behind, so it should not pause. */
  behind: boolean;
  /** The database's clock at the claim, the clock the changes' commit times are on. */
  databaseNow: Date;
}

/** One claimed thread's changes read for export: its rows in cursor order, and how far they cover. */
export interface ThreadChanges {
  threadId: string;
  /** Every change up to this cursor is in `runs` and `audits` (folded: each entity in its latest state). */
  coveredTo: bigint;
  /** The page was full: the thread has changes after `coveredTo`. */
  more: boolean;
  runs: Run[];
  audits: Message[];
}

/** What a span needs beyond its own row: a model audit's declared tool calls, a tool audit's declaration, an ended run's audits' times. */
export interface ExportBatch {
  threads: ThreadChanges[];
  declaredBy: Map<string, ToolCall[]>;
  toolCalls: Map<string, ToolCall>;
  /** Per ended run of the batch: the first start and last end of its audits' spans (the worker's clock), which its root span covers. */
  auditTimes: Map<string, AuditTimes>;
}

export interface AuditTimes {
  firstStart: Date;
  lastEnd: Date;
}

/**
 * Claims up to `limit` pending threads no live claim holds, oldest first, for `claimSeconds`;
 * not a thread whose deletion began (its pending row goes with it when its removal ends).
 */
export function claimThreads(sql: Sql, owner: string, limit: number, claimSeconds: number, pollSeconds: number): Promise<ClaimedThread[]> {
  return sql.query<ClaimedThread>(
    `UPDATE export_pending p SET claimed_by = $1, claimed_until = now() + make_interval(secs => $3)
     WHERE p.thread_id IN (
       SELECT q.thread_id FROM export_pending q
       WHERE (q.claimed_until IS NULL OR q.claimed_until < now())
         AND NOT EXISTS (SELECT 1 FROM thread t WHERE t.id = q.thread_id AND t.deleted_at IS NOT NULL)
       ORDER BY q.since LIMIT $2 FOR UPDATE OF q SKIP LOCKED)
     RETURNING p.thread_id, p.since < now() - make_interval(secs => $4) AS behind, clock_timestamp() AS database_now`,
    [owner, limit, claimSeconds, pollSeconds],
  );
}

/**
 * The claimed threads' changes after their export positions, at most `pageSize` per thread, on
 * one snapshot; a thread that no longer exists is left out (its pending row went with it), and
 * so is one whose deletion mark committed since the claim: nothing of it is read from the mark on.
 */
export function readChanges(sql: SqlTransactor, threadIds: string[], pageSize: number): Promise<ExportBatch> {
  return onOneSnapshot(sql, async (tx) => {
    const heads = await tx.query<{ id: string; changeCursor: bigint; exported: string }>(
      `SELECT t.id, t.change_cursor, coalesce(p.exported_cursor, 0)::text AS exported
       FROM thread t LEFT JOIN export_position p ON p.thread_id = t.id WHERE t.id = ANY($1::uuid[]) AND t.deleted_at IS NULL`,
      [threadIds],
    );
    const ids = heads.map((head) => head.id);
    const after = heads.map((head) => head.exported);
    const upTo = heads.map((head) => head.changeCursor);
    const window = `unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS w(thread_id, after, up_to)`;
    const inWindow = `x.thread_id = w.thread_id AND x.change_cursor > w.after AND x.change_cursor <= w.up_to ORDER BY x.change_cursor LIMIT $4`;
    const runs = await tx.query<Run>(`SELECT r.* FROM ${window} CROSS JOIN LATERAL (SELECT * FROM run x WHERE ${inWindow}) r`, [
      ids, after, upTo, pageSize,
    ]);
    const audits = await tx.query<Message>(
      `SELECT m.* FROM ${window} CROSS JOIN LATERAL (SELECT * FROM message x WHERE ${inWindow}) m
       WHERE m.message_type IN ('model_audit', 'tool_audit')`,
      [ids, after, upTo, pageSize],
    );
    const modelIds = audits.filter((audit) => audit.messageType === 'model_audit').map((audit) => audit.id);
    const toolCallRowIds = audits.flatMap((audit) => (audit.toolCallRowId ? [audit.toolCallRowId] : []));
    const toolCalls = await tx.query<ToolCall>(
      'SELECT * FROM tool_call WHERE declared_by_id = ANY($1::uuid[]) OR id = ANY($2::uuid[]) ORDER BY position',
      [modelIds, toolCallRowIds],
    );
    // The times the audit spans carry (spans.ts): start, and end no earlier than the start.
    const endedRunIds = runs.filter((run) => isRunEnded(run.status)).map((run) => run.id);
    const times = endedRunIds.length === 0 ? [] : await tx.query<AuditTimes & { runId: string }>(
      `SELECT run_id, min(coalesce(started_at, created_at)) AS first_start,
         max(greatest(coalesce(finished_at, changed_at, created_at), coalesce(started_at, created_at))) AS last_end
       FROM message WHERE run_id = ANY($1::uuid[]) AND message_type IN ('model_audit', 'tool_audit') GROUP BY run_id`,
      [endedRunIds],
    );
    const batch: ExportBatch = { threads: [], declaredBy: new Map(), toolCalls: new Map(), auditTimes: new Map(times.map(({ runId, ...extent }) => [runId, extent])) };
    for (const call of toolCalls) {
      batch.toolCalls.set(call.id, call);
      batch.declaredBy.set(call.declaredById, [...(batch.declaredBy.get(call.declaredById) ?? []), call]);
    }
    for (const head of heads) {
      const threadRuns = runs.filter((run) => run.threadId === head.id);
      const threadAudits = audits.filter((audit) => audit.threadId === head.id);
      const covered = coveredTo(head.changeCursor, pageSize, threadRuns, threadAudits);
      // Rows beyond what the page covers wait for the next page: a run's changes leave in commit order.
      const within = (row: { changeCursor: bigint | null }) => row.changeCursor! <= covered;
      batch.threads.push({
        threadId: head.id,
        coveredTo: covered,
        more: covered < head.changeCursor,
        runs: threadRuns.filter(within),
        audits: threadAudits.filter(within),
      });
    }
    return batch;
  });
}

/**
 * How far a page covers: to the thread's cursor when neither table filled its page, else to the
 * last cursor both pages are sure of (the smaller of the two full pages' last cursors), as in
 * change-cursors.ts changesAfter. The rows beyond it are read again by the next page.
 */
function coveredTo(head: bigint, pageSize: number, runs: Run[], audits: Message[]): bigint {
  let covered = head;
  for (const rows of [runs, audits]) {
    if (rows.length >= pageSize) {
      const last = rows[rows.length - 1]!.changeCursor!;
      if (last < covered) covered = last;
    }
  }
  return covered;
}

/**
 * After an export that succeeded, in one statement: each thread's position advances to what was
 * exported, and its pending row is deleted if the thread has no later change, else only unclaimed
 * (exported next). The thread rows are locked FOR SHARE, in id order: a write of the thread that
 * is committing is waited for and its cursor seen (the lock returns the row's newest version), so
 * its pending row is kept.
 */
export async function release(sql: Sql, owner: string, exported: { threadId: string; coveredTo: bigint }[]): Promise<void> {
  await sql.query(
    `WITH w AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS w(id, covered)),
     locked AS (SELECT t.id, t.change_cursor FROM thread t JOIN w ON w.id = t.id ORDER BY t.id FOR SHARE OF t),
     positioned AS (
       INSERT INTO export_position (thread_id, exported_cursor) SELECT w.id, w.covered FROM w JOIN locked l ON l.id = w.id
       ON CONFLICT (thread_id) DO UPDATE SET exported_cursor = greatest(export_position.exported_cursor, EXCLUDED.exported_cursor)),
     done AS (
       DELETE FROM export_pending p USING w, locked l
       WHERE p.thread_id = w.id AND l.id = w.id AND l.change_cursor <= w.covered RETURNING p.thread_id)
     UPDATE export_pending p SET claimed_by = NULL, claimed_until = NULL FROM w
     WHERE p.thread_id = w.id AND p.claimed_by = $3 AND p.thread_id NOT IN (SELECT thread_id FROM done)`,
    [exported.map((thread) => thread.threadId), exported.map((thread) => thread.coveredTo), owner],
  );
}

/**
 * Gives back the claims an earlier start of this instance left (a kill -9): their owner is
 * `<instanceId>/<uuid of that start>`, and that start is over. Other instances' claims wait for
 * their expiry (their owners may be alive).
 */
export async function takeBackEarlierClaims(sql: Sql, instanceId: string, owner: string): Promise<void> {
  await sql.query(
    `UPDATE export_pending SET claimed_by = NULL, claimed_until = NULL
     WHERE claimed_by IS NOT NULL AND left(claimed_by, -37) = $1 AND claimed_by <> $2`,
    [instanceId, owner],
  );
}

/** Gives claimed threads back (an export that failed, or a stop): any exporter may take them again. */
export async function unclaim(sql: Sql, owner: string, threadIds: string[]): Promise<void> {
  await sql.query('UPDATE export_pending SET claimed_by = NULL, claimed_until = NULL WHERE thread_id = ANY($1::uuid[]) AND claimed_by = $2', [
    threadIds,
    owner,
  ]);
}

/** The export's backlog: threads waiting, changes not yet exported, and how long the oldest has waited (not a thread being deleted, which never leaves). */
export async function backlog(sql: Sql): Promise<{ threads: number; changes: number; oldestSeconds: number }> {
  const [row] = await sql.query<{ threads: string; changes: string; oldestSeconds: number | null }>(
    `SELECT count(*)::text AS threads, coalesce(sum(t.change_cursor - coalesce(x.exported_cursor, 0)), 0)::text AS changes,
       extract(epoch FROM now() - min(p.since))::float8 AS oldest_seconds
     FROM export_pending p JOIN thread t ON t.id = p.thread_id AND t.deleted_at IS NULL LEFT JOIN export_position x ON x.thread_id = p.thread_id`,
  );
  return { threads: Number(row?.threads ?? 0), changes: Number(row?.changes ?? 0), oldestSeconds: Math.max(0, row?.oldestSeconds ?? 0) };
}
