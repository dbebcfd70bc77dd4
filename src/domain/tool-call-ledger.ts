import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import { auditThreadOrNotFound, findThread, inLiveThreadOf, requireAuditReader } from './access.js';
import { latestExecutionFirst } from './audit-reads.js';
import { badInput } from './errors.js';
import { isUuid, nameFilter } from './ids.js';
import { checkedWindow, recordedWindow, type RecordedWindow } from './recorded-window.js';
import { BELOW_WALK, isPageAnchor, walkFellShort, walkNewestFirst } from './walk.js';

/**
 * The tool-call ledger: every tool call a model call declared, run or not, with the cases a
 * debugger hunts for. Each entry is one ToolCall row and its latest execution (the newest tool
 * audit bound to it: a call interrupted and run again in a resume is the resumed execution).
 */

/** What a ledger read answers an `after` that is not one of its entries. */
const AFTER_REFUSED = 'after must be the cursor of an entry of a previous page';

/** The most entries one page returns. */
export const MAX_LEDGER_PAGE = 100;

export const LEDGER_CASES = ['NEVER_RUN', 'PENDING', 'AWAITING_VERDICT', 'CLOSED_BY_RUN_END', 'RUNNING'] as const;
export type LedgerCase = (typeof LEDGER_CASES)[number];

/** The execution's status once it ran (its audit's), else the declaration's (PENDING). */
export const LEDGER_STATUSES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'] as const;
export type LedgerStatus = (typeof LEDGER_STATUSES)[number];

/**
 * The run that declared the call `tc`, or a resume of it at any depth, is queued or running: the
 * call may still start (a tool start binds through the whole resume ancestry,
 * audit_declaring_tool_call). A going run's resume ancestors are kept in run_resume_ancestor
 * (migration 20261216000000_resume_ancestors; its triggers remove a run's rows in the
 * transaction that ends it), so this is two probes whatever the chain's depth, where a walk down
 * the chain from every call cost the chain's length.
 */
const DECLARING_RUN_GOING = `(EXISTS (SELECT 1 FROM run r WHERE r.id = tc.run_id AND r.status IN ('QUEUED', 'RUNNING'))
       OR EXISTS (SELECT 1 FROM run_resume_ancestor a WHERE a.ancestor_id = tc.run_id))`;

/**
 * The rule of each case, as SQL over `tc` (the ToolCall) and `e` (its latest execution, all
 * NULL when it never ran). `narrowing` is the ToolCall statuses an entry in that case can have
 * (the projection mirrors the audit: INTERRUPTED reads PENDING, ABANDONED reads FAILED), a
 * condition on `tool_call` alone, so the read walks `(owner_id | thread_id, status, id)` newest first for the rare ones.
 */
const CASE_RULES: Record<LedgerCase, { sql: string; narrowing: string }> = {
  // Declared and never started, once nothing can start it any more: its declaring run ended and
  // no resume of it is going. It stays PENDING whatever the run's ending (SEMANTICS.md).
  NEVER_RUN: { sql: `(e.id IS NULL AND NOT ${DECLARING_RUN_GOING})`, narrowing: `tc.status = 'PENDING'` },
  // Declared and not started yet, while its declaring run (or a resume of it) still goes.
  PENDING: { sql: `(e.id IS NULL AND ${DECLARING_RUN_GOING})`, narrowing: `tc.status = 'PENDING'` },
  // A bare error saved; the run's end decides FAILED, ABANDONED, CANCELLED or INTERRUPTED.
  AWAITING_VERDICT: { sql: `coalesce(e.awaiting_run_terminal, false)`, narrowing: `tc.status = 'RUNNING'` },
  // Closed by finishRun, cancelRun or a lease expiry with no terminal event of its own
  // (a FAILED run's closing reason is RUN_FAILED; src/domain/convergence.ts).
  CLOSED_BY_RUN_END: {
    sql: `(e.status IN ('ABANDONED', 'INTERRUPTED', 'CANCELLED') OR (e.status = 'FAILED' AND e.error ->> 'code' = 'RUN_FAILED'))`,
    narrowing: `tc.status IN ('PENDING', 'FAILED', 'CANCELLED')`,
  },
  RUNNING: { sql: `(e.status = 'RUNNING' AND NOT e.awaiting_run_terminal)`, narrowing: `tc.status = 'RUNNING'` },
};

const STATUS_SQL = `coalesce(e.status::text, tc.status::text)`;
/** The ToolCall status an entry of each ledger status has (see CASE_RULES). */
const STATUS_NARROWING: Record<LedgerStatus, string> = {
  PENDING: 'PENDING',
  RUNNING: 'RUNNING',
  COMPLETED: 'COMPLETED',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  INTERRUPTED: 'PENDING',
  ABANDONED: 'FAILED',
};

/** `since` and `until` bound when the server recorded the call's declaration (its model call's finish): the ledger's order. */
export interface LedgerQuery extends RecordedWindow {
  /** Within this thread only; else every thread whose audits the principal may read. */
  threadId?: string | null;
  /** Exactly this tool name. */
  name?: string | null;
  status?: LedgerStatus | null;
  case?: LedgerCase | null;
  first?: number | null;
  /** The cursor of the last entry of the previous page. */
  after?: string | null;
}

export interface LedgerEntry {
  /** The ToolCall's id; also the entry's cursor (UUIDv7: newest first is id order). */
  id: string;
  threadId: string;
  threadTitle: string | null;
  /** The run whose model call declared it. */
  runId: string;
  /** The model audit that declared it. */
  declaredById: string;
  /** The run its latest execution ran in (a resume's, for a call run again); null: never run. */
  executedInRunId: string | null;
  /** The tool audit of its latest execution. */
  auditId: string | null;
  toolCallId: string;
  name: string;
  /**
   * The sizes of the declared arguments and of what the tool ran with (its audit's input), read
   * instead of them (the declared input's measured by the database): a reader charges them to its
   * answer before it reads the payloads. Null when absent (the effective input: never run).
   */
  declaredInputBytes: number | null;
  effectiveInputBytes: number | null;
  /** The effective input differs from the declared arguments; null when it never ran. */
  inputDiffers: boolean | null;
  status: LedgerStatus;
  startedAt: Date | null;
  finishedAt: Date | null;
  durationMs: number | null;
  cases: LedgerCase[];
  /** While it runs: when the lease of the run it runs in expires. */
  leaseExpiresAt: Date | null;
}

const caseArray = `array_remove(ARRAY[${LEDGER_CASES.map((name) => `CASE WHEN ${CASE_RULES[name].sql} THEN '${name}' END`).join(', ')}]::text[], NULL)`;

/**
 * One ledger page, newest first, from the threads whose audits the principal may read (a
 * superadmin's own, SEMANTICS: the ledger shows audit data), `first + 1` entries at most, walked
 * newest first on a composite index (ledgerStatement).
 */
export async function toolCallLedger(sql: Sql, principal: Principal, query: LedgerQuery): Promise<{ entries: LedgerEntry[]; hasMore: boolean }> {
  requireAuditReader(principal);
  const { first } = query;
  if (first == null || first < 1 || first > MAX_LEDGER_PAGE) throw badInput(`first must be between 1 and ${MAX_LEDGER_PAGE}`);
  const name = nameFilter(query.name);
  if (query.after != null && !isUuid(query.after)) throw badInput(AFTER_REFUSED);
  if (query.status != null && !LEDGER_STATUSES.includes(query.status)) throw badInput(`status must be one of ${LEDGER_STATUSES.join(', ')}`);
  if (query.case != null && !LEDGER_CASES.includes(query.case)) throw badInput(`case must be one of ${LEDGER_CASES.join(', ')}`);
  checkedWindow(query);

  const threadId = query.threadId == null ? null : auditThreadOrNotFound(principal, await findThread(sql, query.threadId), query.threadId).id;
  // An entry's cursor is its ToolCall's id: a call of the caller's, in the thread and of the name when given.
  if (query.after != null && !(await isPageAnchor(sql, { table: 'tool_call' }, query.after, { ownerId: principal.sub, threadId, name }))) {
    throw badInput(AFTER_REFUSED);
  }
  const statement = ledgerStatement(principal.sub, { ...query, first, name, threadId });
  const entries = await sql.query<LedgerEntry>(statement.text, statement.params);
  return { entries: entries.slice(0, first), hasMore: entries.length > first };
}

/** A call's latest execution (the newest tool audit bound to it), NULL columns when it never ran. */
const LATEST_EXECUTION = `LEFT JOIN LATERAL (
       SELECT m.id, m.run_id, m.input, m.input_bytes, m.status, m.error, m.awaiting_run_terminal, m.started_at, m.finished_at, m.duration_ms
       FROM message m WHERE m.tool_call_row_id = tc.id ORDER BY ${latestExecutionFirst('m')} LIMIT 1
     ) e ON true`;

/**
 * How many calls a ledger read walks, one index probe each, before it reads the rest of its
 * matches at once: a page of calls that many match (a status, a tool) is found within it; a case
 * few calls are in (calls closed by a run's end, say) is then read in one statement below the
 * walk, instead of a probe for every call of the owner's history.
 */
export const LEDGER_WALK_BUDGET = 2_000;

/**
 * The ledger's read for an owner, its filters checked (`threadId` one the owner's audits may be
 * read in): one statement, `first + 1` entries at most, in two steps, as a text search
 * (src/domain/audit-search.ts):
 *
 * 1. Walk the calls matching the filters on the call alone newest first, one index probe each
 *    (walkNewestFirst), on a composite index that serves that filter and the order together:
 *    within a thread `(thread_id, id)`, `(thread_id, status, id)` or `(thread_id, name, id)`;
 *    across threads the owner's `(owner_id, id)`, `(owner_id, status, id)` or `(owner_id, name,
 *    id)` (migration 20261205000100_tool_call_owner), skipping the calls of the owner's threads
 *    being deleted. Each call walked is tested on its latest execution; the walk stops at
 *    `first + 1` hits or LEDGER_WALK_BUDGET calls. Whatever the statistics say: a plain
 *    `ORDER BY id DESC LIMIT` whose execution test the planner cannot estimate was planned as
 *    reading and sorting every match (bench/README.md, growth, OW1).
 * 2. Only when the walk read its whole budget without filling the page: the matches below it, in
 *    one statement, newest `first + 1` kept.
 *
 * Neither step reads a call of another owner.
 */
export function ledgerStatement(ownerId: string, query: LedgerQuery & { first: number }): { text: string; params: unknown[] } {
  const params: unknown[] = [ownerId];
  const param = (value: unknown) => `$${params.push(value)}`;
  // Conditions on the call alone (an index can serve them), then on its execution.
  const onCall: string[] = [];
  const onExecution: string[] = [];
  if (query.threadId != null) onCall.push(`tc.thread_id = ${param(query.threadId)}`);
  if (query.name != null) onCall.push(`tc.name = ${param(query.name)}`);
  if (query.status != null) {
    onCall.push(`tc.status = ${param(STATUS_NARROWING[query.status])}::"ToolCallStatus"`);
    onExecution.push(`${STATUS_SQL} = ${param(query.status)}`);
  }
  if (query.case != null) {
    // A narrowing to several statuses gives no index order: the walk tests it instead.
    const { narrowing } = CASE_RULES[query.case];
    (narrowing.includes(' IN ') ? onExecution : onCall).push(narrowing);
    onExecution.push(CASE_RULES[query.case].sql);
  }
  onCall.push(...recordedWindow(query, 'tc.id', param));
  if (query.after != null) onCall.push(`tc.id < ${param(query.after.toLowerCase())}::uuid`);
  const limit = param(query.first + 1);
  const all = (conditions: string[]) => (conditions.length ? conditions.join(' AND ') : 'true');
  const scope = query.threadId != null ? [] : ['tc.owner_id = $1', inLiveThreadOf('tc.thread_id', '$1')];
  const budget = LEDGER_WALK_BUDGET;
  // The walk keeps the columns of the call that the tests on its execution read (DECLARING_RUN_GOING, STATUS_SQL).
  const hits = `${walkNewestFirst('walk', 'tool_call', 'tc', all([...scope, ...onCall]), ['status', 'run_id'], budget)},
     walked AS (
       SELECT tc.id, coalesce((SELECT ${all(onExecution)} FROM (SELECT 1) one ${LATEST_EXECUTION}), false) AS hit FROM walk tc
     ), walk_hits AS (
       SELECT id FROM walked WHERE hit LIMIT ${limit}
     ), older_hits AS MATERIALIZED (
       SELECT tc.id FROM tool_call tc ${LATEST_EXECUTION}
       WHERE ${walkFellShort(limit, budget)}
         AND ${all([...scope, ...onCall, ...onExecution])} AND tc.id < ${BELOW_WALK}
       ORDER BY tc.id DESC LIMIT ${limit}
     ), hits AS (
       SELECT id FROM walk_hits UNION ALL SELECT id FROM older_hits
     )`;
  const text = `WITH RECURSIVE ${hits}
     SELECT tc.id, tc.thread_id, t.title AS thread_title, tc.run_id, tc.declared_by_id, e.run_id AS executed_in_run_id, e.id AS audit_id,
       tc.tool_call_id, tc.name, octet_length(tc.declared_input::text) AS declared_input_bytes, e.input_bytes AS effective_input_bytes,
       CASE WHEN e.id IS NULL THEN NULL ELSE e.input IS DISTINCT FROM tc.declared_input END AS input_differs,
       ${STATUS_SQL} AS status, e.started_at, e.finished_at, e.duration_ms, ${caseArray} AS cases,
       CASE WHEN ${CASE_RULES.RUNNING.sql} THEN (SELECT r.lease_expires_at FROM run r WHERE r.id = e.run_id AND r.status = 'RUNNING') END
         AS lease_expires_at
     FROM hits h
     JOIN tool_call tc ON tc.id = h.id
     JOIN thread t ON t.id = tc.thread_id AND t.owner_id = $1 AND t.deleted_at IS NULL
     ${LATEST_EXECUTION}
     ORDER BY tc.id DESC LIMIT ${limit}`;
  return { text, params };
}
