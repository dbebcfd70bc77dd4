import type { SqlTransactor } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import type { Message, Run } from '../generated/prisma/client.js';
import { badInput } from './errors.js';
import type { CommittedChange, DomainEvent } from './events.js';

/**
 * Change cursors: every committed change of a thread's runs and audits gets the thread's next
 * counter value. One statement per changed thread, at the end of the command's transaction, bumps
 * `thread.change_cursor` by the number of changed entities and stamps each changed row with
 * consecutive values. The thread row lock it takes is the transaction's last lock (after any run
 * lock, so no deadlock) and is held until commit: cursor order is the thread's commit order, and
 * a rolled-back command gives its values back, so a thread's cursors are contiguous integers and a
 * consumer that sees a gap knows it missed something.
 */
const STAMP = `
WITH bumped AS (
  UPDATE thread SET change_cursor = change_cursor + $2 WHERE id = $1::uuid
  RETURNING change_cursor - $2 AS base, clock_timestamp() AS at
), changed AS (
  SELECT * FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS c(id, kind, position)
), runs AS (
  UPDATE run r SET change_cursor = b.base + c.position, changed_at = b.at FROM bumped b, changed c
  WHERE c.kind = 'run' AND r.id = c.id RETURNING r.id, r.change_cursor, r.changed_at
), audits AS (
  UPDATE message m SET change_cursor = b.base + c.position, changed_at = b.at FROM bumped b, changed c
  WHERE c.kind = 'audit' AND m.id = c.id RETURNING m.id, m.change_cursor, m.changed_at
)
SELECT * FROM runs UNION ALL SELECT * FROM audits`;

/** Stamps the command's changes (one per entity: its last state) and returns them in cursor order. */
export async function stampChanges(sql: Sql, events: DomainEvent[]): Promise<CommittedChange[]> {
  const latest = new Map<string, DomainEvent>();
  for (const event of events) {
    const key = `${event.kind}:${event.row.id}`;
    latest.delete(key); // re-inserted last: an entity's cursor follows its last change in the command
    latest.set(key, event);
  }
  const byThread = new Map<string, DomainEvent[]>();
  for (const event of latest.values()) {
    const list = byThread.get(event.threadId) ?? [];
    list.push(event);
    byThread.set(event.threadId, list);
  }
  const committed: CommittedChange[] = [];
  // Threads in a fixed order: a command touching several threads never deadlocks another.
  for (const threadId of [...byThread.keys()].sort()) {
    const changes = byThread.get(threadId)!;
    const stamped = await sql.query<{ id: string; changeCursor: bigint; changedAt: Date }>(STAMP, [
      threadId,
      changes.length,
      changes.map((change) => change.row.id),
      changes.map((change) => change.kind),
    ]);
    const stampOf = new Map(stamped.map((row) => [row.id, row]));
    for (const change of changes) {
      const { changeCursor, changedAt } = stampOf.get(change.row.id)!;
      const row = { ...change.row, changeCursor, changedAt };
      committed.push({ ...change, row, cursor: changeCursor, committedAt: changedAt } as CommittedChange);
    }
  }
  return committed.sort((a, b) => (a.threadId === b.threadId ? Number(a.cursor - b.cursor) : 0));
}

/**
 * The counter of a thread before its first change (thread.change_cursor starts there): every run and
 * audit change of the thread is after it, so a stream after it copies the whole thread.
 */
export const START_COUNTER = 0n;

/** Digits of a counter in a cursor: every bigint counter fits, so one thread's cursors are one length. */
const COUNTER_DIGITS = 19;

/**
 * A cursor as clients see it: opaque, naming its thread (so a foreign one is refused) and the
 * database that issued it (src/domain/database-identity.ts: so one from before a restore is),
 * then the counter, zero-padded: a thread's cursors compare as strings in commit order, as the
 * contract's "a greater cursor" lets a client compare them.
 */
export function encodeCursor(databaseId: string, threadId: string, cursor: bigint): string {
  return `${Buffer.from(`${threadId}:${databaseId}`).toString('base64url')}.${cursor.toString().padStart(COUNTER_DIGITS, '0')}`;
}

/** The `threadId:counter[:databaseId]` a cursor names; before cursors compared as strings, it was all base64url. */
function cursorText(text: string): string {
  const padded = /^([A-Za-z0-9_-]+)\.([0-9]{19})$/.exec(text);
  if (padded) {
    const named = Buffer.from(padded[1]!, 'base64url').toString().split(':');
    return named.length === 2 ? `${named[0]}:${BigInt(padded[2]!)}:${named[1]}` : '';
  }
  return /^[A-Za-z0-9_-]*$/.test(text) ? Buffer.from(text, 'base64url').toString() : '';
}

/**
 * The thread's counter value a client's cursor names; BAD_USER_INPUT when malformed, of another
 * thread, issued by another database (a copy, or this one before a restore: its counter values
 * name other changes here), or beyond the thread's counter (read after the client's: no cursor
 * handed out is beyond it, and nothing could ever follow one that is). A cursor without a
 * database id, issued before cursors carried one, is still taken as it was then.
 */
export function decodeCursor(databaseId: string, thread: { id: string; changeCursor: bigint }, text: string): bigint {
  const match = /^([0-9a-f-]{36}):(0|[1-9][0-9]{0,18})(?::([0-9a-f]{16}))?$/.exec(cursorText(text));
  if (!match) throw badInput(`Cursor ${JSON.stringify(text)} is malformed`);
  if (match[1] !== thread.id) throw badInput(`Cursor ${JSON.stringify(text)} belongs to another thread`);
  if (match[3] !== undefined && match[3] !== databaseId) {
    throw badInput(
      `Cursor ${JSON.stringify(text)} comes from another database, or from this one before a restore: read the thread again (threadAudits.cursor) and resume from there`,
    );
  }
  const cursor = BigInt(match[2]!);
  if (cursor > thread.changeCursor) throw badInput(`Cursor ${JSON.stringify(text)} is beyond the thread's latest change`);
  return cursor;
}

/** Runs `read` on one snapshot (a read-only REPEATABLE READ transaction): its statements agree. */
export function onOneSnapshot<T>(sql: SqlTransactor, read: (sql: Sql) => Promise<T>): Promise<T> {
  return sql.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    return read(tx);
  });
}

/** The current cursor of each thread (those that exist). */
export const threadCursors = (sql: Sql, threadIds: readonly string[]) =>
  sql.query<{ id: string; changeCursor: bigint }>('SELECT id, change_cursor FROM thread WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL', [threadIds]);

/** How long the database keeps each change as committed (migration 20261209000000_recent_changes). */
export const RECENT_CHANGES_KEPT = '5 minutes';

/**
 * A catch-up page holds at most this many bytes of audit payloads (input, output and error as
 * stored) before its last change: it ends before the audit that would pass it, never before its
 * first change. The server holds a page in memory while it delivers it, and one audit alone can be
 * 4.5 × MAX_JSON_BYTES: 256 of them would be gigabytes for one stream.
 */
export const CATCH_UP_PAGE_PAYLOAD_BYTES = 16 * 1024 * 1024;

/**
 * The last cursor of a page of changes (the one before the first audit whose payloads, added to
 * those before it, reach $4), null when the page's `limit` ends it first. Reads the stored sizes,
 * never the payloads.
 */
const pageEnd = (changes: string) => `
SELECT min(change_cursor) - 1 AS end FROM (
  SELECT change_cursor, sum(bytes) OVER (ORDER BY change_cursor) - bytes AS before FROM (${changes}) c
) b WHERE before >= $4`;
const PAGE_END = pageEnd(`SELECT change_cursor, coalesce(input_bytes, 0) + coalesce(output_bytes, 0) + coalesce(error_bytes, 0) AS bytes
  FROM message WHERE thread_id = $1::uuid AND change_cursor > $2 ORDER BY change_cursor LIMIT $3`);
const RECENT_PAGE_END = pageEnd(`SELECT change_cursor,
  coalesce((row ->> 'input_bytes')::bigint, 0) + coalesce((row ->> 'output_bytes')::bigint, 0) + coalesce((row ->> 'error_bytes')::bigint, 0) AS bytes
  FROM recent_change WHERE thread_id = $1::uuid AND kind = 'audit' AND change_cursor > $2 AND change_cursor <= $3`);

/** Pages that CATCH_UP_PAGE_PAYLOAD_BYTES ended before their `limit`: changes follow them. */
const pagesCut = new WeakSet<readonly CommittedChange[]>();

/** Whether changes may follow a page of changesAfter: it is full, or its payload bound ended it. */
export const mayHaveMore = (page: readonly CommittedChange[], limit: number) => page.length >= limit || pagesCut.has(page);

const cut = (page: CommittedChange[], end: bigint | null) => {
  if (end !== null && page.length > 0) pagesCut.add(page);
  return page;
};

const recentOf = (kind: 'run' | 'audit') => `
SELECT c.lease_only, r.* FROM recent_change c CROSS JOIN LATERAL jsonb_populate_record(NULL::${kind === 'run' ? 'run' : 'message'}, c.row) r
WHERE c.thread_id = $1::uuid AND c.kind = '${kind}' AND c.change_cursor > $2 AND c.change_cursor <= $3`;
const RECENT_RUNS = recentOf('run');
const RECENT_AUDITS = recentOf('audit');

/**
 * The changes after `after` as each was committed, from the database's recent changes: the
 * unbroken run of them from `after + 1` (cursors are contiguous), at most `limit`; none when the
 * next one is not kept (written without `audit.recent_changes`, or pruned).
 */
async function recentChangesAfter(tx: Sql, threadId: string, after: bigint, limit: number): Promise<CommittedChange[]> {
  const [{ end }] = (await tx.query<{ end: bigint | null }>(RECENT_PAGE_END, [threadId, after, after + BigInt(limit), CATCH_UP_PAGE_PAYLOAD_BYTES])) as [{ end: bigint | null }];
  const upTo = end ?? after + BigInt(limit);
  const runs = await tx.query<Run & { leaseOnly: boolean }>(RECENT_RUNS, [threadId, after, upTo]);
  const audits = await tx.query<Message & { leaseOnly: boolean }>(RECENT_AUDITS, [threadId, after, upTo]);
  const changes: CommittedChange[] = [
    ...runs.map(({ leaseOnly, ...row }) => ({ kind: 'run' as const, threadId, row, cursor: row.changeCursor!, committedAt: row.changedAt!, ...(leaseOnly && { leaseOnly }) })),
    ...audits.map(({ leaseOnly: _, ...row }) => ({ kind: 'audit' as const, threadId, row, cursor: row.changeCursor!, committedAt: row.changedAt! })),
  ].sort((a, b) => (a.cursor < b.cursor ? -1 : 1));
  const unbroken = changes.findIndex((change, i) => change.cursor !== after + BigInt(i + 1));
  return unbroken === -1 ? cut(changes, end) : changes.slice(0, unbroken);
}

/** Deletes the recent changes older than RECENT_CHANGES_KEPT. */
export async function pruneRecentChanges(sql: Sql): Promise<void> {
  await sql.query(`DELETE FROM recent_change WHERE logged_at < now() - interval '${RECENT_CHANGES_KEPT}'`);
}

/**
 * Catch-up: the thread's changes after `after`, in cursor order, at most `limit` of them. With
 * `recent` (the database keeps recent changes: PostgreSQL without Redis), each as it was
 * committed while they are kept; else, and beyond them, the runs and audits whose latest change
 * is after `after`, each in its latest state, with its latest cursor (several changes of one
 * entity fold into one). Every change up to the last one returned is covered, so the next page
 * starts after it. Indexed range reads, on one snapshot. None of a thread marked deleted.
 */
export function changesAfter(sql: SqlTransactor, threadId: string, after: bigint, limit: number, recent = false): Promise<CommittedChange[]> {
  return onOneSnapshot(sql, async (tx) => {
    // A thread whose deletion mark committed is gone, though its rows may still be there: its
    // streams end at the deletion's signal, or at their poll where that signal did not arrive.
    const [live] = await tx.query('SELECT 1 FROM thread WHERE id = $1::uuid AND deleted_at IS NULL', [threadId]);
    if (!live) return [];
    if (recent) {
      const kept = await recentChangesAfter(tx, threadId, after, limit);
      if (kept.length > 0) return kept;
    }
    const [{ end }] = (await tx.query<{ end: bigint | null }>(PAGE_END, [threadId, after, limit, CATCH_UP_PAGE_PAYLOAD_BYTES])) as [{ end: bigint | null }];
    const within = [threadId, after, limit, end];
    const [runs, audits] = [
      await tx.query<Run>('SELECT * FROM run WHERE thread_id = $1::uuid AND change_cursor > $2 AND change_cursor <= coalesce($4, change_cursor) ORDER BY change_cursor LIMIT $3', within),
      await tx.query<Message>('SELECT * FROM message WHERE thread_id = $1::uuid AND change_cursor > $2 AND change_cursor <= coalesce($4, change_cursor) ORDER BY change_cursor LIMIT $3', within),
    ];
    const changes: CommittedChange[] = [
      ...runs.map((row) => ({ kind: 'run' as const, threadId, row, cursor: row.changeCursor!, committedAt: row.changedAt! })),
      ...audits.map((row) => ({ kind: 'audit' as const, threadId, row, cursor: row.changeCursor!, committedAt: row.changedAt! })),
    ];
    return cut(changes.sort((a, b) => (a.cursor < b.cursor ? -1 : 1)).slice(0, limit), end);
  });
}
