import type { Principal } from './principal.js';
import type { Db } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import type { AuditStatus } from '../generated/prisma/client.js';
import { inLiveThreadOf, requireAuditReader } from './access.js';
import { auditSummaryColumns, type AuditRow } from './audit-reads.js';
import { badInput, notFound } from './errors.js';
import { boundedText, escapeLike, isUuid, nameFilter, rowId } from './ids.js';
import { recordedWindow, type RecordedWindow } from './recorded-window.js';
import { BELOW_WALK, isPageAnchor, walkFellShort, walkNewestFirst } from './walk.js';

/** What a search answers an `after` that is not one of its hits. */
const AFTER_REFUSED = 'after must be the id of an audit of a previous page';

/** The most hits one search returns. */
export const MAX_SEARCH_HITS = 100;
/** Trigrams need three characters: a shorter text could not use the index. */
export const MIN_SEARCH_TEXT = 3;

/**
 * pg_trgm takes trigrams from words only (runs of letters and digits; anything else separates
 * them), and a LIKE pattern's words shorter than three characters give none. A text without a
 * run of three letters or digits (`%%%`, `___`, `ab cd`) gives the index nothing to narrow, so
 * its search would read every audit of every owner: it is refused. Letters as the database's
 * UTF-8 character type counts them: Unicode's Alphabetic, which holds the vowel marks inside
 * Hebrew, Arabic, Thai or Hindi words (`שָׁלוֹם`, `مُحَمَّد`, `สวัสดี` are one word each to pg_trgm).
 */
const INDEXABLE = /[\p{Alphabetic}\p{Nd}]{3}/u;

/**
 * What a search matches against: the audit's name (tool or model) and the JSON text of its input,
 * output and error. It must stay identical to the expression of the search index, the thread and
 * this text's trigrams (prisma/migrations/20261204000100_audit_search_by_owner), or the planner
 * cannot use that index.
 */
export const AUDIT_SEARCH_TEXT = `(coalesce(m.name, '') || ' ' || coalesce(m.input::text, '') || ' ' || coalesce(m.output::text, '') || ' ' || coalesce(m.error::text, ''))`;

/**
 * The probe of the search index (migration 20261204000100_audit_search_by_owner): the audits as
 * `<> 'chat'`, the thread as text and the owner, as the index holds them. Conditions no other index serves:
 * on a table never analysed, the planner took `message_type IN ('model_audit', 'tool_audit')` to
 * hold one row in a hundred and read every audit through another audit index, and a thread to
 * hold a handful of audits and read all of the thread's through one of its btree indexes, instead
 * of the search index (bench/README.md, G).
 */
export const AUDIT_SEARCH_PROBE = { audits: `m.message_type <> 'chat'`, thread: `(m.thread_id::text)`, owner: `m.owner_id` };

/** Which audits a search reads: model calls, tool executions, or (null) both. */
export type AuditKind = 'MODEL' | 'TOOL';
/** The rows of each kind, as SQL on the row alone (`message_type`, which never changes). */
const KIND_ROWS: Record<AuditKind | 'ANY', string> = {
  MODEL: `m.message_type = 'model_audit'`,
  TOOL: `m.message_type = 'tool_audit'`,
  ANY: `m.message_type IN ('model_audit', 'tool_audit')`,
};

export interface AuditSearch extends RecordedWindow {
  /** A substring (any case) of the name, input, output or error. */
  text?: string | null;
  /** Exactly this tool or model name. */
  name?: string | null;
  status?: AuditStatus | null;
  /** Only model calls, or only tool executions. */
  kind?: AuditKind | null;
  /** Within this thread only; else every thread whose audits the principal may read. */
  threadId?: string | null;
  first?: number | null;
  /** The last hit of the previous page. */
  after?: string | null;
}

/**
 * The forms of a search's text that the searched text may hold it in: as typed (a name, or the
 * stored JSON's own quotes, `"amount": 120`), and as a string's characters are written inside
 * the stored JSON (`C:\Users` as `C:\\Users`, a quote as `\"`, a line break as `\n`): jsonb
 * escapes exactly what JSON.stringify does.
 */
const searchedForms = (text: string) => [...new Set([text, JSON.stringify(text).slice(1, -1)])];

/** `snippet`: the searched text around its first match (see SNIPPET_CHARS); null for a search without text. */
export type AuditHit = AuditRow & { threadTitle: string | null; snippet?: string | null };

/** A hit's snippet: this many characters of the searched text, starting a little before the match. */
export const SNIPPET_CHARS = 60;
const SNIPPET_LEAD = 25;
/** Code points read beyond each end of a snippet, to find where the characters as a reader sees them end. */
const SNIPPET_MARGIN = 16;
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** What the database reads of a hit's searched text around the match (code point offsets in `window`). */
interface SnippetWindow { window: string | null; lead: number; at: number; cutBefore: boolean; cutAfter: boolean }

/**
 * The snippet: at most SNIPPET_CHARS code points of `window` from about `lead`, its ends moved to
 * grapheme boundaries, so that an emoji sequence (👨‍👩‍👧, a flag, a skin tone) or a letter with
 * its marks is never cut in two; "…" where the text goes on. A boundary at an end of the window
 * counts only where the text ends there too.
 */
function snippetOf({ window, lead, at, cutBefore, cutAfter }: SnippetWindow): string | null {
  if (window === null) return null;
  const points = [...window];
  const bounds: number[] = [];
  let offset = 0;
  for (const { segment } of graphemes.segment(window)) {
    if (offset > 0 || !cutBefore) bounds.push(offset);
    offset += [...segment].length;
  }
  if (!cutAfter) bounds.push(offset);
  const start = bounds.find((b) => b >= lead && b <= at) ?? bounds.findLast((b) => b <= lead) ?? lead;
  const end = bounds.findLast((b) => b > start && b <= start + SNIPPET_CHARS) ?? Math.min(points.length, start + SNIPPET_CHARS);
  return `${start > 0 || cutBefore ? '…' : ''}${points.slice(start, end).join('')}${end < points.length || cutAfter ? '…' : ''}`;
}

/**
 * How many audits a search walks newest first before it asks the trigram index instead. A walk
 * reads each audit it passes (its payloads included, as JSON text), so this bounds what a text
 * that is not common costs before the index takes over: with payloads of 100 B–50 kB, 2,000 took
 * ~80 ms, most of a rare text's search at 1,000,000 audits (bench/README.md, Q3). A text one audit
 * in ten holds still fills a page of 50 within it.
 */
export const SEARCH_WALK_BUDGET = 500;

/**
 * How many bytes of payloads (the stored sizes of input, output and error) a search walks at
 * most before it asks the trigram index instead; it reads one audit past them at most. The walk
 * reads whole each audit it passes: the newest 500 audits of a tool returning 1 MB each took
 * 3.7–10 s of PostgreSQL CPU per search that found nothing (~10–20 ms a MB; 70 ms with this
 * budget: bench/search-large-payloads.ts). 4 MiB keep a walk under ~80 ms however large its
 * audits, and never stop one of 500 audits of 8 kB or less.
 */
export const SEARCH_WALK_BYTES = 4 * 1024 * 1024;
/**
 * Within a thread, how many of its newest audits a search walks before it asks the search index
 * whether the thread holds at most a page of matches (then they are the answer, and the walk
 * stops). A text the walk finds among them is common enough to fill its page from the walk: asking
 * the index first took a text every audit of a 100,000-audit thread holds from 63 to 163 ms
 * (bench/README.md, RT2), a bitmap of all of the thread's matches built to return one page.
 */
export const SEARCH_PROBE_AFTER = 50;
/** An audit's weight for SEARCH_WALK_BYTES: its payloads' sizes as stored (read from the row, not the payloads). */
const PAYLOAD_BYTES_OF = `coalesce(m.input_bytes, 0) + coalesce(m.output_bytes, 0) + coalesce(m.error_bytes, 0)`;

/**
 * Audits matching every criterion given, newest first (ids are UUIDv7: time order), without their
 * payloads (read when asked for, once their sizes were charged, as a timeline's), from the
 * threads whose audits the principal may read: a superadmin's own threads (SEMANTICS, audits are
 * superadmin-on-own-thread data). One statement, so one snapshot, in up to three steps:
 *
 * 0. Within a thread, once the walk's first SEARCH_PROBE_AFTER audits hold no hit: the thread's
 *    matches through the search index (read lazily, at most `first + 2`); when a page holds them
 *    all, they are the answer, and the walk stops. A rare text in a long thread then reads 50 of
 *    the thread's newest audits and its few matches, not 500 audits and their payloads (0.39–0.59×
 *    the time: bench/README.md, RT1, RT2). Not across threads, where a probe that must find all
 *    the caller's matches before it returns any cost more than the walk (bench/README.md, MT3).
 * 1. Else (and across threads) the walk goes on: the newest `SEARCH_WALK_BUDGET` audits (or fewer, holding `SEARCH_WALK_BYTES` of
 *    payloads) below `after`, recorded within `since` and `until` (recordedWindow), of the thread when one is given,
 *    else of the owner (every audit carries its thread's owner: migration
 *    20261204000000_audit_owner), one index probe each (walkNewestFirst, whatever the statistics say), testing each,
 *    and stop at `first + 1` hits: a text or name most audits hold is found here, after reading
 *    a few hundred rows.
 * 2. Only when the walk read its whole budget (of audits or bytes) without filling the page: the matches found
 *    through the search index (the text, and the name, which an exact name match implies) in the
 *    thread, else the owner's (the index holds the thread and the owner beside the trigrams, so a
 *    probe reads their matches only, however many other threads or owners hold the text); of
 *    which those older than the last audit walked are sorted and the newest `first + 1` kept. A
 *    rare text or name is found here, after reading its few matches, and a common one of which
 *    the caller owns few after reading the caller's. (The matches are
 *    gathered whole first, and only then kept below the walk: given that as a condition it could
 *    use, the planner reads every audit below the walk on the primary key instead of the index.)
 *
 * Steps 1 and 2 cover disjoint id ranges (step 2 reads the rest of step 0's matches, kept below
 * the walk), and step 0 answers alone, so each hit is found once and the order is the ids'.
 * What stays slow is a text search that matches few audits but that the index cannot narrow: a
 * text whose every trigram is common (bench/README.md, search). A search without text takes
 * filterSearch's path instead.
 */
export async function searchAudits(sql: Db, principal: Principal, search: AuditSearch): Promise<{ items: AuditHit[]; hasMore: boolean }> {
  requireAuditReader(principal);
  const { first } = search;
  if (first == null || first < 1 || first > MAX_SEARCH_HITS) throw badInput(`first must be between 1 and ${MAX_SEARCH_HITS}`);
  const text = search.text?.trim() || null;
  if (text !== null && text.length < MIN_SEARCH_TEXT) throw badInput(`text must be at least ${MIN_SEARCH_TEXT} characters`);
  if (text !== null) boundedText(text, 'text');
  if (text !== null && !INDEXABLE.test(text)) {
    throw badInput(`text must hold at least ${MIN_SEARCH_TEXT} letters or digits in a row: the search index is built from words, and "${text}" has none that long`);
  }
  const name = nameFilter(search.name);
  if (search.after != null && !isUuid(search.after)) throw badInput(AFTER_REFUSED);

  const params: unknown[] = [];
  const param = (value: unknown) => `$${params.push(value)}`;
  // Recorded within `since` and `until`: a range of every index the walks and the probe read by id.
  const inWindow = recordedWindow(search, 'm.id', param);
  // What bounds the walk and the probe: the audits (of the kind) of the thread, in the window, below `after`.
  const kindRows = KIND_ROWS[search.kind ?? 'ANY'];
  const range = [kindRows, ...inWindow];
  let threadId: string | null = null;
  if (search.threadId != null) {
    threadId = rowId(search.threadId, 'Thread');
    const [owned] = await sql.query<{ ownerId: string }>('SELECT owner_id FROM thread WHERE id = $1 AND deleted_at IS NULL', [threadId]);
    if (!owned || owned.ownerId !== principal.sub) throw notFound('Thread', search.threadId);
    range.push(`m.thread_id = ${param(threadId)}`);
  }
  // An audit of the caller's, in the thread when one is given, of the name when one is given.
  const anchorRows = { table: 'message', kind: `message_type IN ('model_audit', 'tool_audit')` } as const;
  if (search.after != null && !(await isPageAnchor(sql, anchorRows, search.after, { ownerId: principal.sub, threadId, name }))) {
    throw badInput(AFTER_REFUSED);
  }
  const below = search.after != null ? `m.id < ${param(search.after.toLowerCase())}::uuid` : null;
  if (below !== null) range.push(below);
  if (text === null) return filterSearch(sql, principal.sub, threadId, { ...search, name, first }, range, params);
  // The same bounds for the probe of the search index, as that index holds them.
  const owner = threadId === null ? param(principal.sub) : null;
  const probeRange = [AUDIT_SEARCH_PROBE.audits, ...(search.kind != null ? [kindRows] : [])];
  probeRange.push(threadId !== null ? `${AUDIT_SEARCH_PROBE.thread} = ${param(threadId)}` : `${AUDIT_SEARCH_PROBE.owner} = ${owner}`);
  probeRange.push(...inWindow);
  if (below !== null) probeRange.push(below);
  // What a hit must also meet, cheapest test first (the walk evaluates them in this order).
  // Across threads, that its thread is not deleted (within one, checked above).
  const liveTest = owner === null ? null : inLiveThreadOf('m.thread_id', owner);
  const filters: string[] = [];
  if (name !== null) filters.push(`m.name = ${param(name)}`);
  if (search.status != null) filters.push(`m.status = ${param(search.status)}::"AuditStatus"`);
  // The index's terms: an exact name is also a substring of the searched text.
  const indexed = [text, name].filter((term): term is string => term !== null && term.length >= MIN_SEARCH_TEXT);
  const textForms = text === null ? [] : searchedForms(text);
  const containsAny = (forms: string[]) => `(${forms.map((form) => `${AUDIT_SEARCH_TEXT} ILIKE ${param(`%${escapeLike(form)}%`)}`).join(' OR ')})`;
  const textTests = indexed.map((term) => containsAny(term === text ? textForms : [term]));
  // The name's substring test is implied by `m.name = …`: the walk skips it, the index uses it.
  const walkTests = [...(liveTest === null ? [] : [liveTest]), ...filters, ...(text !== null ? [textTests[0]!] : [])];
  const budget = SEARCH_WALK_BUDGET;
  const bytes = { of: PAYLOAD_BYTES_OF, budget: SEARCH_WALK_BYTES };
  const limit = param(first + 1);
  const columns = auditSummaryColumns('m.');
  const hit = walkTests.length ? walkTests.join(' AND ') : 'true';
  const at = (form: string) => `strpos(lower(${AUDIT_SEARCH_TEXT}), lower(${param(form)}))`;
  const textAt = textForms.length === 1 ? at(text) : `coalesce(nullif(${at(textForms[1]!)}, 0), ${at(text)})`;
  // The search index's matches: in the thread, or the owner's (still live).
  const matches = `matches AS MATERIALIZED (
       SELECT m.id FROM message m WHERE ${[...probeRange, ...filters, ...textTests, ...(liveTest === null ? [] : [liveTest])].join(' AND ')}
     )`;
  // Within a thread, when the walk's first SEARCH_PROBE_AFTER audits hold no hit (and were as many:
  // a shorter walk read the whole thread, or its byte budget): whether the index's matches fit a
  // page (read lazily, at most `first + 2` of them).
  const fewMatches = threadId === null
    ? 'false'
    : `CASE WHEN (SELECT count(*) = ${SEARCH_PROBE_AFTER} AND count(*) FILTER (WHERE hit) = 0 FROM (SELECT hit FROM walked LIMIT ${SEARCH_PROBE_AFTER}) x)
         THEN (SELECT count(*) <= ${limit} FROM (SELECT FROM matches LIMIT ${limit} + 1) y) ELSE false END`;
  const few = `(SELECT few FROM few_matches)`;
  // Across threads the walk goes back on `(owner_id, id)`.
  const walkRange = threadId === null ? [`m.owner_id = ${owner}`, ...range] : range;
  const rows = await sql.transaction(async (tx) => {
    // The planner costs a sequential scan by the table's own pages, not by the payloads stored out
    // of line that the text test reads: on a table of a few hundred large audits it read every
    // payload (~10 s of CPU for 500 of 1 MB) rather than probe the search index.
    await tx.query('SET LOCAL enable_seqscan = off');
    return tx.query<AuditHit & { snippetWindow: string | null; snippetLead: number; snippetAt: number; snippetCutBefore: boolean; snippetCutAfter: boolean }>(
    `WITH RECURSIVE ${walkNewestFirst('walk', 'message', 'm', walkRange.join(' AND '), ['thread_id', 'name', 'status', 'input', 'output', 'error'], budget, bytes)}, walked AS (
       SELECT m.id, m.bytes, ${hit} AS hit FROM walk m
     ), ${matches}, few_matches AS MATERIALIZED (
       SELECT ${fewMatches} AS few
     ), walk_hits AS (
       SELECT id FROM walked WHERE NOT ${few} AND hit LIMIT ${limit}
     ), hits AS (
       SELECT id FROM matches WHERE ${few}
       UNION ALL SELECT id FROM walk_hits
       UNION ALL (SELECT m.id FROM matches m WHERE (SELECT CASE WHEN ${few} THEN false ELSE ${walkFellShort(limit, budget, bytes.budget)} END) AND m.id < ${BELOW_WALK} ORDER BY m.id DESC LIMIT ${limit})
     )
     SELECT ${columns}, t.title AS thread_title,
       CASE WHEN s.at > 0 THEN substr(s.searched, s.win, ${SNIPPET_CHARS + 2 * SNIPPET_MARGIN}) END AS snippet_window,
       s.start - s.win AS snippet_lead, s.at - s.win AS snippet_at, s.win > 1 AS snippet_cut_before,
       s.win + ${SNIPPET_CHARS + 2 * SNIPPET_MARGIN} <= length(s.searched) AS snippet_cut_after
     FROM hits h JOIN message m ON m.id = h.id JOIN thread t ON t.id = m.thread_id
     CROSS JOIN LATERAL (
       SELECT y.*, greatest(1, y.start - ${SNIPPET_MARGIN}) AS win FROM (
         SELECT x.searched, x.at, greatest(1, x.at - ${SNIPPET_LEAD}) AS start
         FROM (SELECT ${AUDIT_SEARCH_TEXT} AS searched, ${textAt} AS at) x
       ) y
     ) s
     ORDER BY m.id DESC LIMIT ${limit}`,
    params,
  );
  });
  const items = rows.slice(0, first).map(({ snippetWindow, snippetLead, snippetAt, snippetCutBefore, snippetCutAfter, ...hit }) => ({
    ...hit,
    snippet: snippetOf({ window: snippetWindow, lead: snippetLead, at: snippetAt, cutBefore: snippetCutBefore, cutAfter: snippetCutAfter }),
  }));
  return { items, hasMore: rows.length > first };
}

/**
 * A search without text: by name, by status, both or neither. Its terms are equalities that a
 * composite index serves with the order, so it reads no payload and no audit it does not return:
 * the newest `first + 1` audits matching the terms, on `(thread_id, name | status, id)` within a
 * thread (migration 20261202100000_flat_read_indexes), on `(owner_id, name | status, id)` or
 * `(owner_id, id)` across the owner's threads (20261205000000_audit_filters_by_owner,
 * 20261204000100_audit_search_by_owner), skipping the audits of the owner's threads being deleted
 * (a few, on their own index: 20261205000000_audit_filters_by_owner). Given both
 * a name and a status, the planner keys on one and tests the other on each audit it reads.
 * The matches are walked one index probe each (walkNewestFirst): left to choose, PostgreSQL read
 * every match of the owner on a bitmap and sorted them whenever its sample put their number
 * low, a plan whose cost grows with the owner's history (test/reads/flat-reads-plan.int.test.ts).
 */
async function filterSearch(
  sql: Sql,
  ownerId: string,
  threadId: string | null,
  search: { name: string | null; status?: AuditStatus | null; first: number },
  range: string[],
  params: unknown[],
): Promise<{ items: AuditHit[]; hasMore: boolean }> {
  const param = (value: unknown) => `$${params.push(value)}`;
  if (threadId === null) {
    const owner = param(ownerId);
    range.push(`m.owner_id = ${owner}`, inLiveThreadOf('m.thread_id', owner));
  }
  if (search.name !== null) range.push(`m.name = ${param(search.name)}`);
  if (search.status != null) range.push(`m.status = ${param(search.status)}::"AuditStatus"`);
  const limit = `${param(search.first + 1)}::int`;
  const columns = auditSummaryColumns('m.');
  const rows = await sql.query<AuditHit>(
    `WITH RECURSIVE ${walkNewestFirst('hits', 'message', 'm', range.join(' AND '), [], limit)}
     SELECT ${columns}, t.title AS thread_title FROM hits h JOIN message m ON m.id = h.id JOIN thread t ON t.id = m.thread_id
     ORDER BY m.id DESC`,
    params,
  );
  return { items: rows.slice(0, search.first), hasMore: rows.length > search.first };
}
