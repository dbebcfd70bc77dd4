import type { Principal } from '../auth/principal.js';
import type { Sql } from '../db/sql.js';
import type { AuditStatus } from '../generated/prisma/client.js';
import { requireAuditReader } from './access.js';
import { AUDIT_COLUMNS, type AuditRow } from './audit-reads.js';
import { badInput, notFound } from './errors.js';
import { isUuid, MAX_ID_LENGTH, rowId } from './ids.js';

/** The most hits one search returns. */
export const MAX_SEARCH_HITS = 100;
/** Trigrams need three characters: a shorter text could not use the index. */
export const MIN_SEARCH_TEXT = 3;

/**
 * What a search matches against: the audit's name (tool or model) and the JSON text of its input,
 * output and error. It must stay identical to the expression of the trigram index
 * (prisma/migrations/20261201200000_audit_search), or the planner cannot use that index.
 */
export const AUDIT_SEARCH_TEXT = `(coalesce(m.name, '') || ' ' || coalesce(m.input::text, '') || ' ' || coalesce(m.output::text, '') || ' ' || coalesce(m.error::text, ''))`;

export interface AuditSearch {
  /** A substring (any case) of the name, input, output or error. */
  text?: string | null;
  /** Exactly this tool or model name. */
  name?: string | null;
  status?: AuditStatus | null;
  /** Within this thread only; else every thread whose audits the principal may read. */
  threadId?: string | null;
  first?: number | null;
  /** The last hit of the previous page. */
  after?: string | null;
}

export type AuditHit = AuditRow & { threadTitle: string | null };

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Audits matching every criterion given, newest first (ids are UUIDv7: time order), from the
 * threads whose audits the principal may read: a superadmin's own threads (SEMANTICS, audits are
 * superadmin-on-own-thread data). A text is matched through the trigram index; a thread through
 * its index. A text most audits hold costs a recheck of each (bench/README.md).
 */
export async function searchAudits(sql: Sql, principal: Principal, search: AuditSearch): Promise<{ items: AuditHit[]; hasMore: boolean }> {
  requireAuditReader(principal);
  const { first } = search;
  if (first == null || first < 1 || first > MAX_SEARCH_HITS) throw badInput(`first must be between 1 and ${MAX_SEARCH_HITS}`);
  const text = search.text?.trim() || null;
  if (text !== null && text.length < MIN_SEARCH_TEXT) throw badInput(`text must be at least ${MIN_SEARCH_TEXT} characters`);
  if (text !== null && text.length > MAX_ID_LENGTH) throw badInput(`text is ${text.length} characters long; the limit is ${MAX_ID_LENGTH}`);
  const name = search.name?.trim() || null;
  if (name !== null && name.length > MAX_ID_LENGTH) throw badInput(`name is ${name.length} characters long; the limit is ${MAX_ID_LENGTH}`);
  if (search.after != null && !isUuid(search.after)) throw badInput('after must be the id of an audit of a previous page');

  const params: unknown[] = [principal.sub];
  const where = [`m.message_type IN ('model_audit', 'tool_audit')`, `t.owner_id = $1`];
  const param = (value: unknown) => `$${params.push(value)}`;
  if (search.threadId != null) {
    const threadId = rowId(search.threadId, 'Thread');
    const [owned] = await sql.query<{ ownerId: string }>('SELECT owner_id FROM thread WHERE id = $1', [threadId]);
    if (!owned || owned.ownerId !== principal.sub) throw notFound('Thread', search.threadId);
    where.push(`m.thread_id = ${param(threadId)}`);
  }
  if (text !== null) where.push(`${AUDIT_SEARCH_TEXT} ILIKE ${param(`%${escapeLike(text)}%`)}`);
  if (name !== null) where.push(`m.name = ${param(name)}`);
  if (search.status != null) where.push(`m.status = ${param(search.status)}::"AuditStatus"`);
  if (search.after != null) where.push(`m.id < ${param(search.after.toLowerCase())}::uuid`);
  const limit = param(first + 1);
  const columns = AUDIT_COLUMNS.split(', ').map((column) => `m.${column}`).join(', ');
  const select = `SELECT ${columns}, t.title AS thread_title FROM message m JOIN thread t ON t.id = m.thread_id WHERE ${where.join(' AND ')}`;
  // With a text, the matches are found first (the trigram index), then ordered: left to itself the
  // planner walks every audit newest first and tests each, since it cannot tell how rare a text is
  // (bench/README.md, search: 0.3 s at 50 k audits for a rare text, seconds at 500 k).
  const rows = await sql.query<AuditHit>(
    text !== null
      ? `WITH hits AS MATERIALIZED (${select}) SELECT * FROM hits ORDER BY id DESC LIMIT ${limit}`
      : `${select} ORDER BY m.id DESC LIMIT ${limit}`,
    params,
  );
  return { items: rows.slice(0, first), hasMore: rows.length > first };
}
