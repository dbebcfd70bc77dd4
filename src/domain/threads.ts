import type { Principal } from './principal.js';
import { insertRow, type Sql } from '../db/sql.js';
import type { Message, MessageRole, Thread } from '../generated/prisma/client.js';
import { canReadEveryThread, loadReadableThread } from './access.js';
import { badInput } from './errors.js';
import { boundedText, escapeLike, isUuid, newId } from './ids.js';
import { parseInstant } from './instants.js';
import { command } from './command.js';
import { assertStorableJson } from './json.js';

/** Titles are listed to others (threads, search hits): bounded, so no one can make every list huge. */
export const MAX_TITLE_LENGTH = 1000;

export const createThread = command(async ({ sql }, principal: Principal, input: { title?: string | null }) =>
  insertRow<Thread>(sql, 'thread', {
    id: newId(),
    ownerId: principal.sub,
    title: input.title == null ? null : boundedText(input.title, 'title', MAX_TITLE_LENGTH),
  }),
);

/** Ordinary history only: audit rows are written by the run lifecycle, never through here. */
export const appendMessage = command(
  async ({ sql, deps }, principal: Principal, input: { threadId: string; role: MessageRole; content?: unknown }) => {
    const thread = await loadReadableThread(sql, principal, input.threadId);
    assertStorableJson(input.content, deps.limits.maxJsonBytes, 'content');
    return insertRow<Message>(sql, 'message', {
      id: newId(),
      threadId: thread.id,
      role: input.role,
      messageType: 'chat',
      content: input.content ?? undefined,
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

function parseThreadCursor(cursor: string): ThreadPosition {
  const malformed = () => badInput('after is not a cursor of the threads query');
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
 * A page of the threads `principal` may read (as `thread(id)`: its own, every thread for admins
 * and superadmins), newest first; with `title`, only those whose title holds it (any case); with
 * `ownerId`, only that owner's (an operator erasing one person's threads). The order is total
 * (creation time, then id), so a cursor keeps its place while new threads are created.
 */
export async function readableThreadsPage(
  sql: Sql,
  principal: Principal,
  page: { first: number; after?: string | null; title?: string | null; ownerId?: string | null },
) {
  if (!Number.isInteger(page.first) || page.first < 1 || page.first > MAX_THREADS_PAGE) {
    throw badInput(`first must be between 1 and ${MAX_THREADS_PAGE}`);
  }
  const title = page.title?.trim() || null;
  if (title !== null) boundedText(title, 'title');
  const position = page.after == null ? null : parseThreadCursor(page.after);
  // A statement per case, not `($1 OR owner_id = $2)`: a condition that may or may not apply
  // hides the index, and the read became a scan of every thread. Each walks its index newest first.
  const params: unknown[] = [page.first + 1];
  const where = ['deleted_at IS NULL'];
  if (!canReadEveryThread(principal)) where.push(`owner_id = $${params.push(principal.sub)}`);
  if (page.ownerId != null) where.push(`owner_id = $${params.push(boundedText(page.ownerId, 'ownerId'))}`);
  if (position) where.push(`(created_at, id) < ($${params.push(position.createdAt)}::timestamptz, $${params.push(position.id)}::uuid)`);
  if (title !== null) where.push(`${THREAD_TITLE_TEXT} ILIKE $${params.push(`%${escapeLike(title)}%`)}`);
  const rows = await sql.query<Thread>(
    `SELECT * FROM thread WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $1`,
    params,
  );
  return { threads: rows.slice(0, page.first), hasNextPage: rows.length > page.first };
}
