import type { Principal } from './principal.js';
import { insertRow, type Sql } from '../db/sql.js';
import type { Message, MessageRole, Thread } from '../generated/prisma/client.js';
import { canReadEveryThread, loadReadableThread } from './access.js';
import { badInput, conflict } from './errors.js';
import { boundedText, escapeLike, isUuid, newId, nonBlank } from './ids.js';
import { parseInstant } from './instants.js';
import { command, fenced, writtenRows, type DomainDeps } from './command.js';
import { MAX_THREADS_COUNTED } from '../shared/thread-counts.js';
import { assertStorableJson } from './json.js';

/** Titles are listed to others (threads, search hits): bounded, so no one can make every list huge. */
export const MAX_TITLE_LENGTH = 1000;

interface CreateThreadInput {
  title?: string | null;
  /** The creator's idempotency key, unique per creator: sent again, it gets the thread it created. */
  createId?: string | null;
}

/** A new thread owned by the caller; with a createId ($4), only if none of the caller's threads has it yet. */
const CREATE_THREAD = `INSERT INTO thread (id, owner_id, title, create_id)
  SELECT $1::uuid, $2, $3, $4::text
  WHERE $4::text IS NULL OR NOT EXISTS (SELECT 1 FROM thread keyed WHERE keyed.owner_id = $2 AND keyed.create_id = $4::text)
  RETURNING *`;

/**
 * The caller becomes the owner. The same createId again gets the thread it created (a replay),
 * if the title is the same too, else CONFLICT; a deletion frees the key (deletion.ts).
 */
export const createThread = fenced({
  async write(deps: DomainDeps, principal: Principal, input: CreateThreadInput) {
    const createId = input.createId == null ? null : nonBlank(input.createId, 'createId');
    const title = input.title == null ? null : boundedText(input.title, 'title', MAX_TITLE_LENGTH);
    const [thread] = await writtenRows<Thread>(deps.db, CREATE_THREAD, [newId(), principal.sub, title, createId]);
    return thread && { value: thread, changes: [] };
  },
  async explain(sql, principal, input) {
    const [created] = await sql.query<Thread>('SELECT * FROM thread WHERE owner_id = $1 AND create_id = $2', [principal.sub, input.createId]);
    if (!created) return { retry: true };
    const title = input.title ?? null;
    if (created.title !== title) {
      throw conflict(`createId ${input.createId} created thread ${created.id} with another title`);
    }
    return { replay: created };
  },
});

/**
 * When a message appended now goes in its thread's history (oldest first, by this time, then id):
 * read under the thread's lock, after the thread's last message. Stamped at the transaction's
 * start, as a column default is, two appends committing in the other order put the second one
 * committed before the first in the history, where a reader that had paged past the first never saw it.
 */
const NEXT_IN_HISTORY = `SELECT greatest(clock_timestamp(),
  (SELECT created_at + interval '1 millisecond' FROM message WHERE thread_id = $1::uuid AND message_type = 'chat' ORDER BY created_at DESC LIMIT 1)) AS at`;

/** Ordinary history only: audit rows are written by the run lifecycle, never through here. */
export const appendMessage = command(
  async ({ sql, deps }, principal: Principal, input: { threadId: string; role: MessageRole; content?: unknown }) => {
    const thread = await loadReadableThread(sql, principal, input.threadId, true);
    assertStorableJson(input.content, deps.limits.maxJsonBytes, 'content');
    const [next] = await sql.query<{ at: Date }>(NEXT_IN_HISTORY, [thread.id]);
    return insertRow<Message>(sql, 'message', {
      id: newId(),
      threadId: thread.id,
      role: input.role,
      messageType: 'chat',
      content: input.content ?? undefined,
      createdAt: next!.at,
    });
  },
);

export const MAX_THREADS_PAGE = 100;

/** Where a page of threads starts: after the thread with this creation time and id. */
interface ThreadPosition {
  createdAt: Date;
  id: string;
}

/** An opaque, stable position in the newest-first order (creation time, then id). */
export const threadCursor = (thread: ThreadPosition): string =>
  Buffer.from(JSON.stringify([thread.createdAt.toISOString(), thread.id])).toString('base64url');

/** threadCursor writes 90 characters: a longer text is no cursor, and is not decoded whole to find out. */
const MAX_THREAD_CURSOR_LENGTH = 120;

function parseThreadCursor(cursor: string): ThreadPosition {
  const malformed = () => badInput('after is not a cursor of the threads query');
  if (cursor.length > MAX_THREAD_CURSOR_LENGTH) throw malformed();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw malformed();
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) throw malformed();
  const [createdAt, id] = decoded as unknown[];
  if (typeof createdAt !== 'string' || typeof id !== 'string' || !isUuid(id)) throw malformed();
  const date = parseInstant(createdAt);
  if (!date) throw malformed();
  return { createdAt: date, id: id.toLowerCase() };
}

/** What `threads(title:)` matches, as the trigram index reads it (migration 20261203050000_thread_title_search). */
const THREAD_TITLE_TEXT = `coalesce(title, '')`;

/**
 * Which threads `principal` may read (as `thread(id)`: its own, every thread for admins and
 * superadmins): with `title`, only those whose title holds it (any case); with `ownerId`, only
 * that owner's (an operator erasing one person's threads). Conditions and their parameters, from $1.
 */
function readableThreadsWhere(principal: Principal, filters: { title?: string | null; ownerId?: string | null }) {
  const title = filters.title?.trim() || null;
  if (title !== null) boundedText(title, 'title');
  // A statement per case, not `($1 OR owner_id = $2)`: a condition that may or may not apply
  // hides the index, and the read became a scan of every thread. Each walks its index newest first.
  const params: unknown[] = [];
  const where = ['deleted_at IS NULL'];
  if (!canReadEveryThread(principal)) where.push(`owner_id = $${params.push(principal.sub)}`);
  if (filters.ownerId != null) where.push(`owner_id = $${params.push(boundedText(filters.ownerId, 'ownerId'))}`);
  if (title !== null) where.push(`${THREAD_TITLE_TEXT} ILIKE $${params.push(`%${escapeLike(title)}%`)}`);
  return { where, params };
}

/**
 * A page of the threads `principal` may read (readableThreadsWhere), newest first. The order is
 * total (creation time, then id), so a cursor keeps its place while new threads are created.
 * `count` counts every page's threads when asked (threads.totalCount).
 */
export async function readableThreadsPage(
  sql: Sql,
  principal: Principal,
  page: { first: number; after?: string | null; title?: string | null; ownerId?: string | null },
) {
  if (!Number.isInteger(page.first) || page.first < 1 || page.first > MAX_THREADS_PAGE) {
    throw badInput(`first must be between 1 and ${MAX_THREADS_PAGE}`);
  }
  const { where, params } = readableThreadsWhere(principal, page);
  // Every page's: the position below is the page's alone.
  const [matching, matchingParams] = [[...where], [...params]];
  const count = () => countThreads(sql, matching, [...matchingParams]);
  const position = page.after == null ? null : parseThreadCursor(page.after);
  if (position) where.push(`(created_at, id) < ($${params.push(position.createdAt)}::timestamptz, $${params.push(position.id)}::uuid)`);
  const rows = await sql.query<Thread>(
    `SELECT * FROM thread WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.push(page.first + 1)}`,
    params,
  );
  return { threads: rows.slice(0, page.first), hasNextPage: rows.length > page.first, count };
}

/**
 * How many threads match, up to MAX_THREADS_COUNTED + 1: a count stops there, so it reads at most
 * that many of the index's rows, however many threads the table holds (bench/thread-count.ts).
 * In the page's order, so it walks the page's index and stops: unordered, an owner's count built a
 * bitmap of every one of the owner's threads first (30,000: 17× a page; bench/README.md, TC0).
 */
async function countThreads(sql: Sql, where: string[], params: unknown[]): Promise<number> {
  const [row] = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM thread WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.push(MAX_THREADS_COUNTED + 1)}) counted`,
    params,
  );
  return row!.n;
}
