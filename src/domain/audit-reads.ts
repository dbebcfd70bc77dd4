import type { Principal } from './principal.js';
import { snake, type Sql } from '../db/sql.js';
import { auditThreadOrNotFound, canReadAudits, requireAuditReader } from './access.js';
import { badInput, notFound } from './errors.js';
import { isUuid, rowId } from './ids.js';
import type { Message, Run, Thread, ToolCall } from '../generated/prisma/client.js';
import { EXECUTION_PAYLOADS, unlessInterrupted } from './tool-call-projection.js';

// The audit timeline and the rows it points to, as plain SQL: each function reads a whole batch
// in one statement (the GraphQL layer's DataLoaders call them once per relation and request).

/** The thread `t` is not marked deleted. */
export const LIVE_THREAD = 't.deleted_at IS NULL';
/**
 * Joins each row to its thread `t` (by `threadIdColumn`) while that thread is not marked deleted.
 * The reads by id below run after the read that found their rows (a request's root, a timeline),
 * while a deletion may be removing the thread's rows batch by batch: read in one statement with
 * the mark, a deleted thread's rows are none at all, never the ones its removal has left so far.
 * The join is on the thread's primary key: one index lookup per row, no scan.
 */
export const ofLiveThread = (threadIdColumn: string) => `JOIN thread t ON t.id = ${threadIdColumn} AND ${LIVE_THREAD}`;

/** The most audits one timeline read returns. */
export const MAX_AUDITS = 500;

/** A thread's newest audits, oldest first, and the cursor of the thread's latest change they include. */
export interface Timeline {
  threadId: string;
  items: AuditRow[];
  /** The thread holds older audits than `items`. */
  truncated: boolean;
  cursor: bigint;
}

/**
 * The newest `limit` audits of a thread the principal may read, with the thread's cursor, without
 * their payloads (auditPayloadsByIds reads those, once their sizes were charged): one
 * statement, so one snapshot, that also reads the thread's owner for the access rule. One more
 * audit than asked tells whether the thread holds more, without a count. With `before` (an audit
 * of this thread, usually the oldest of the previous page) the newest `limit` audits older than it:
 * a thread's audits never move in the order, so paging back returns each exactly once.
 */
export async function readTimeline(
  sql: Sql,
  principal: Principal,
  threadId: string,
  limit: number | null | undefined,
  before?: string | null,
): Promise<Timeline> {
  requireAuditReader(principal);
  if (limit == null || limit < 1 || limit > MAX_AUDITS) throw badInput(`limit must be between 1 and ${MAX_AUDITS}`);
  const id = rowId(threadId, 'Thread');
  if (before != null && !isUuid(before)) throw badInput('before must be the id of an audit of this thread');
  const rows = await sql.query<AuditRow & { timelineOwnerId: string; timelineCursor: string | null; timelineBeforeFound: boolean }>(
    TIMELINE,
    [id, limit + 1, before?.toLowerCase() ?? null],
  );
  const [first] = rows;
  auditThreadOrNotFound(principal, first && { id, ownerId: first.timelineOwnerId }, threadId);
  if (!first!.timelineBeforeFound) throw badInput('before must be the id of an audit of this thread');
  const newestFirst = first!.id === null ? [] : rows;
  return {
    threadId: id,
    items: newestFirst.slice(0, limit).reverse(),
    truncated: newestFirst.length > limit,
    cursor: BigInt(first!.timelineCursor ?? 0),
  };
}

/**
 * What an audit's GraphQL fields show, the only fields reads return: not the clock readings, the
 * change cursor or the row times (a 500-item read then parses and keeps a third fewer values).
 * The type follows this list, so a resolver cannot read a field the reads leave out.
 */
const AUDIT_FIELDS = [
  'id', 'threadId', 'runId', 'role', 'messageType', 'operationId', 'name', 'sequence', 'finishedSequence', 'status',
  'startedAt', 'finishedAt', 'durationMs', 'input', 'output', 'error', 'inputBytes', 'outputBytes', 'errorBytes', 'usage',
  'awaitingRunTerminal', 'toolCallRowId',
] as const satisfies readonly (keyof Message)[];
/**
 * An audit's payloads: up to MAX_JSON_BYTES each, stored out of line (TOAST), read only when asked
 * for, each after its size (PAYLOAD_BYTES) was charged to the answer: a read never holds more of
 * them than its answer may carry.
 */
export const PAYLOADS = ['input', 'output', 'error', 'usage'] as const satisfies readonly (typeof AUDIT_FIELDS)[number][];
export type Payload = (typeof PAYLOADS)[number];
/**
 * Each payload's size, read instead of it: the bytes of its JSON text (as the database sends it),
 * null when it is absent. Stored for the input, output and error (generated columns, migration
 * 20261201230000_audit_payload_sizes); the usage, small as a rule, is measured by the database.
 */
export const PAYLOAD_BYTES = { input: 'inputBytes', output: 'outputBytes', error: 'errorBytes', usage: 'usageBytes' } as const satisfies Record<Payload, string>;
/** A read that left a payload out leaves its field undefined (null is a payload that is absent). */
export type AuditRow = Omit<Pick<Message, (typeof AUDIT_FIELDS)[number]>, Payload> & Partial<Pick<Message, Payload>> & { usageBytes?: number | null };
/** The audit columns with only the `payloads` among the payloads, each prefixed with `prefix`; with the usage's size when the usage is left out. */
export const auditColumns = (payloads: ReadonlySet<Payload>, prefix = '') =>
  [
    ...AUDIT_FIELDS.filter((field) => !(PAYLOADS as readonly string[]).includes(field) || payloads.has(field as Payload)).map((field) => prefix + snake(field)),
    ...(payloads.has('usage') ? [] : [`octet_length(${prefix}usage::text) AS usage_bytes`]),
  ].join(', ');
export const NO_PAYLOADS: ReadonlySet<Payload> = new Set();
/** An audit's columns without its payloads, each prefixed with `prefix`: what every read returns. */
export const auditSummaryColumns = (prefix = '') => auditColumns(NO_PAYLOADS, prefix);

/**
 * The thread's runs newest first on their (thread_id, created_order) index, each run's audits
 * beside it: the scan stops once `count` audits are found, so the read costs the same on a
 * thread of 5 k audits as on one of 500 k (bench/results/recorded/HISTORY.md, the read curve). Only a single run
 * holding more audits than that is sorted whole. Newest first: by run creation, then the
 * runtime's sequence (role and id break ties between a model call and a tool sharing a number).
 * A run's audits are its messages but the chat ones, said as `<> 'chat'` and not as the audit
 * indexes' `IN ('model_audit', 'tool_audit')`: then no partial audit index matches, and the run's
 * key is the only index the planner can take. On a table never analysed it otherwise ANDed each
 * run's key with a whole audit index, reading every audit of every thread once per run (3 s at
 * 1,000,000 audits: bench/README.md, growth, run Q3).
 */
const NEWEST_AUDITS = `SELECT r.created_order AS run_order, m.* FROM run r CROSS JOIN LATERAL (
    SELECT ${auditSummaryColumns()} FROM message m WHERE m.run_id = r.id AND m.message_type <> 'chat'
      AND (r.created_order < (SELECT run_order FROM anchor) OR (m.sequence, m.role, m.id) < (SELECT sequence, role, id FROM anchor))
    ORDER BY m.sequence DESC, m.role DESC, m.id DESC LIMIT $2) m
  WHERE r.thread_id = $1 AND r.created_order <= (SELECT run_order FROM anchor)
  ORDER BY r.created_order DESC, m.sequence DESC, m.role DESC, m.id DESC
  LIMIT $2`;

/**
 * Where the read starts: just after the newest audit when $3 is null, else at the audit $3 of this
 * thread (its run's creation order, sequence, role, id: the read's order). An anchor that is not
 * an audit of this thread reads nothing and says so (timeline_before_found).
 */
const ANCHOR = `anchor AS (
    SELECT r.created_order AS run_order, m.sequence, m.role, m.id FROM message m JOIN run r ON r.id = m.run_id
      WHERE m.id = $3::uuid AND m.thread_id = $1 AND m.message_type IN ('model_audit', 'tool_audit')
    UNION ALL SELECT 9223372036854775807, NULL, NULL, NULL WHERE $3::uuid IS NULL)`;

/** The thread's row (one, with empty audit columns, when it has no audits) joined to its newest audits. */
export const TIMELINE = `WITH ${ANCHOR}
  SELECT t.owner_id AS timeline_owner_id, t.change_cursor AS timeline_cursor,
    EXISTS (SELECT 1 FROM anchor) AS timeline_before_found, a.*
  FROM thread t LEFT JOIN (${NEWEST_AUDITS}) a ON true
  WHERE t.id = $1 AND t.deleted_at IS NULL
  ORDER BY a.run_order DESC, a.sequence DESC, a.role DESC, a.id DESC`;

/**
 * One audit, for the row a debugger opens (its payloads are read as a timeline's are, when asked
 * for). Superadmin-on-own-thread, like the timeline; to anyone
 * else, whatever the role, it is NOT_FOUND, as an unknown id is (the contract's description of
 * `audit(id)`).
 */
export async function readAudit(sql: Sql, principal: Principal, auditId: string): Promise<AuditRow> {
  const id = rowId(auditId, 'Audit');
  const [row] = await sql.query<AuditRow & { auditOwnerId: string }>(
    `SELECT t.owner_id AS audit_owner_id, ${auditSummaryColumns('m.')}
      FROM message m JOIN thread t ON t.id = m.thread_id
      WHERE m.id = $1 AND m.message_type IN ('model_audit', 'tool_audit') AND t.deleted_at IS NULL`,
    [id],
  );
  if (!row || !canReadAudits(principal, { id: row.threadId, ownerId: row.auditOwnerId })) throw notFound('Audit', auditId);
  const { auditOwnerId: _owner, ...audit } = row;
  return audit;
}

/** Audit rows (model or tool) by id, without their payloads (auditPayloadsByIds reads those). */
export const auditsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<AuditRow>(
    `SELECT ${auditSummaryColumns('m.')} FROM message m ${ofLiveThread('m.thread_id')}
      WHERE m.id = ANY($1::uuid[]) AND m.message_type IN ('model_audit', 'tool_audit')`,
    [ids],
  );

/** Which rows, by id, a read of payloads wants each payload of. */
export type WantedPayloads<P extends string> = ReadonlyMap<P, readonly string[]>;

/**
 * The select list of a read of payloads by id ($1, every row asked for, is added to `params`):
 * each wanted payload (`expression`), for the rows that want it. A batch mostly wants the same
 * payloads of every row; a payload fewer rows want is read for those alone, the others' left unread.
 */
function wantedColumns<P extends string>(
  wanted: WantedPayloads<P>,
  idColumn: string,
  expression: (payload: P) => string,
  params: unknown[],
  suffix = '',
): string {
  const ids = [...new Set([...wanted.values()].flat())];
  params.push(ids);
  return [...wanted]
    .map(([payload, some]) => {
      const value = some.length === ids.length ? expression(payload) : `CASE WHEN ${idColumn} = ANY($${params.push(some)}::uuid[]) THEN ${expression(payload)} END`;
      return `${value} AS ${snake(payload)}${suffix}`;
    })
    .join(', ');
}

/** The payloads of audits by id, each for the rows that want it: for the rows a read returned without them. */
export function auditPayloadsByIds(sql: Sql, wanted: WantedPayloads<Payload>) {
  const params: unknown[] = [];
  const columns = wantedColumns(wanted, 'm.id', (payload) => `m.${payload}`, params);
  return sql.query<Pick<AuditRow, 'id' | Payload>>(`SELECT m.id, ${columns} FROM message m ${ofLiveThread('m.thread_id')} WHERE m.id = ANY($1::uuid[])`, params);
}

/** A run as the reads return it: without its error (up to MAX_JSON_BYTES), read when asked for (runErrorsByIds). */
export type RunRow = Omit<Run, 'error'>;
const RUN_COLUMNS = [
  'id', 'threadId', 'status', 'resumedFromId', 'leaseOwner', 'leaseEpoch', 'leaseExpiresAt', 'claimId', 'endedLeaseOwner', 'createdAt', 'createdOrder',
  'startedAt', 'finishedAt', 'changeCursor', 'changedAt',
] as const satisfies readonly (keyof RunRow)[];

const runColumns = (prefix: string) => RUN_COLUMNS.map((column) => prefix + snake(column)).join(', ');

export const runsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<RunRow>(`SELECT ${runColumns('r.')} FROM run r ${ofLiveThread('r.thread_id')} WHERE r.id = ANY($1::uuid[])`, [ids]);

/**
 * A page of a thread's rows: the first `first` in the list's order; with `after` (a row of that
 * list of the thread), those after it, and none for any other `after`.
 */
export interface ThreadPage {
  first: number;
  after: string | null;
}

/**
 * Each thread's page of a list (`rows`, a lateral read of `t`'s rows, `$2` the page's length and
 * `$3` its `after` when it has one), in one statement with the threads' deletion marks: a thread marked deleted
 * is left out of the map, never given the part of its list its removal has left so far (nor its
 * runs as the mark ended them). A live thread's empty page is an empty list.
 */
async function pagesOfLiveThreads<Row extends { id: string }>(sql: Sql, threadIds: readonly string[], page: ThreadPage, rows: string, order: string) {
  const found = await sql.query<Row & { ofThread: string }>(
    `SELECT t.id AS of_thread, x.* FROM thread t LEFT JOIN LATERAL (${rows}) x ON true
      WHERE t.id = ANY($1::uuid[]) AND ${LIVE_THREAD} ORDER BY ${order}`,
    page.after === null ? [threadIds, page.first] : [threadIds, page.first, page.after],
  );
  const pages = new Map<string, Row[]>();
  for (const { ofThread, ...row } of found) {
    const ofThisThread = pages.get(ofThread) ?? pages.set(ofThread, []).get(ofThread)!;
    if (row.id !== null) ofThisThread.push(row as unknown as Row);
  }
  return pages;
}

/** Each thread's runs in creation order (`newestFirst`: the reverse), without their errors (as runsByIds). */
export function runsOfThreads(sql: Sql, threadIds: readonly string[], page: ThreadPage & { newestFirst?: boolean }) {
  const order = page.newestFirst ? 'DESC' : 'ASC';
  const after = page.after === null ? '' : `AND r.created_order ${page.newestFirst ? '<' : '>'} (SELECT a.created_order FROM run a WHERE a.id = $3::uuid AND a.thread_id = t.id)`;
  return pagesOfLiveThreads<RunRow>(sql, threadIds, page,
    `SELECT ${runColumns('r.')} FROM run r WHERE r.thread_id = t.id ${after} ORDER BY r.created_order ${order} LIMIT $2`,
    `x.created_order ${order}`);
}

/** An ordinary message as a history reads it: without its content (messageContentSizesByIds, messageContentsByIds). */
export type ChatMessageRow = Pick<Message, 'id' | 'threadId' | 'role' | 'createdAt'>;

/** Each thread's ordinary history, oldest first (by creation, then id), without the contents. */
export function chatMessagesOfThreads(sql: Sql, threadIds: readonly string[], page: ThreadPage) {
  const after = page.after === null
    ? ''
    : `AND (m.created_at, m.id) > (SELECT a.created_at, a.id FROM message a WHERE a.id = $3::uuid AND a.thread_id = t.id AND a.message_type = 'chat')`;
  return pagesOfLiveThreads<ChatMessageRow>(sql, threadIds, page,
    `SELECT m.id, m.thread_id, m.role, m.created_at FROM message m WHERE m.thread_id = t.id AND m.message_type = 'chat' ${after}
      ORDER BY m.created_at, m.id LIMIT $2`,
    'x.created_at, x.id');
}

/**
 * `answer`, read from the thread's rows by statements of its own, once a read after them finds
 * the thread not marked deleted: a mark is never lifted and the removal begins after it commits,
 * so those statements saw none of the deletion. Else the deletion began before the answer: NOT_FOUND.
 * For a thread's search, ledger and tool-call counts, whose one statement the plan tests measure.
 */
export async function confirmedLive<T>(sql: Sql, threadId: string, answer: T): Promise<T> {
  const [live] = await sql.query(`SELECT 1 FROM thread t WHERE t.id = $1::uuid AND ${LIVE_THREAD}`, [threadId]);
  if (!live) throw notFound('Thread', threadId);
  return answer;
}

/** The sizes of runs' errors by id (the bytes of each one's JSON text, measured by the database), and the errors: charged, then read. */
export const runErrorSizesByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<{ id: string; errorBytes: number | null }>(
    `SELECT r.id, octet_length(r.error::text) AS error_bytes FROM run r ${ofLiveThread('r.thread_id')} WHERE r.id = ANY($1::uuid[])`,
    [ids],
  );

export const runErrorsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Pick<Run, 'id' | 'error'>>(`SELECT r.id, r.error FROM run r ${ofLiveThread('r.thread_id')} WHERE r.id = ANY($1::uuid[])`, [ids]);

export const threadsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Thread>(`SELECT t.* FROM thread t WHERE t.id = ANY($1::uuid[]) AND ${LIVE_THREAD}`, [ids]);

/**
 * The sizes of ordinary messages' contents by id (the bytes of each one's JSON text, measured by
 * the database, which sends only the size), and the contents: a read charges the first to its
 * answer before it reads the second.
 */
export const messageContentSizesByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<{ id: string; contentBytes: number | null }>(
    `SELECT m.id, octet_length(m.content::text) AS content_bytes FROM message m ${ofLiveThread('m.thread_id')} WHERE m.id = ANY($1::uuid[])`,
    [ids],
  );

export const messageContentsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Pick<Message, 'id' | 'content'>>(`SELECT m.id, m.content FROM message m ${ofLiveThread('m.thread_id')} WHERE m.id = ANY($1::uuid[])`, [ids]);

/** Each thread's count of ordinary history messages (audit rows are never counted); a deleted thread is left out. */
export const chatMessageCounts = async (sql: Sql, threadIds: readonly string[]) =>
  new Map(
    (await sql.query<{ threadId: string; count: number }>(
      `SELECT t.id AS thread_id, count(m.id)::int AS count FROM thread t
        LEFT JOIN message m ON m.thread_id = t.id AND m.thread_id = ANY($1::uuid[]) AND m.message_type = 'chat'
        WHERE t.id = ANY($1::uuid[]) AND ${LIVE_THREAD} GROUP BY t.id`,
      [threadIds],
    )).map((group) => [group.threadId, group.count]),
  );

/** A tool call's payloads (its projection's copies of its audits' values), read only when asked for. */
export const TOOL_CALL_PAYLOADS = ['declaredInput', 'effectiveInput', 'output', 'error'] as const satisfies readonly (keyof ToolCall)[];
export type ToolCallPayload = (typeof TOOL_CALL_PAYLOADS)[number];
/** A tool call as the timeline's links read it: its payloads undefined unless the read selected them. */
export type ToolCallRow = Omit<ToolCall, ToolCallPayload> & Partial<Pick<ToolCall, ToolCallPayload>>;
const TOOL_CALL_COLUMNS = [
  'id', 'threadId', 'runId', 'declaredById', 'position', 'toolCallId', 'name', 'status', 'startedAt', 'finishedAt', 'durationMs',
] as const satisfies readonly (keyof ToolCall)[];
export const toolCallColumns = (prefix: string) => TOOL_CALL_COLUMNS.map((field) => prefix + snake(field)).join(', ');

/**
 * Tool calls by id, and those each of `declarers` declared (in declaration order), in one
 * statement; without payloads. Each live declarer has a row (`ofDeclarer`, with no call's columns
 * when it declared none); one whose thread is deleted has none, never an empty list.
 */
export const toolCallsByIdsOrDeclarers = (sql: Sql, ids: readonly string[], declarers: readonly string[]) =>
  sql.query<ToolCallRow & { ofDeclarer: string | null }>(
    `SELECT NULL::uuid AS of_declarer, ${toolCallColumns('tc.')} FROM tool_call tc ${ofLiveThread('tc.thread_id')} WHERE tc.id = ANY($1::uuid[])
      UNION ALL
      SELECT d.id, ${toolCallColumns('tc.')} FROM message d ${ofLiveThread('d.thread_id')} LEFT JOIN tool_call tc ON tc.declared_by_id = d.id
      WHERE d.id = ANY($2::uuid[])
      ORDER BY position`,
    [ids, declarers],
  );

/**
 * The order of a call's executions (audits of `alias`), the latest first: by when each started, on
 * the database's clock. Not by id alone: a UUIDv7 carries the clock of the instance that wrote it,
 * and instances' clocks differ, so a resume's execution could sort before the one it follows.
 */
export const latestExecutionFirst = (alias: string) => `${alias}.created_at DESC, ${alias}.id DESC`;

/** A call's latest execution `e` (the newest audit bound to it), with its status and `columns`; NULL ones when it never ran. */
const latestExecution = (columns: readonly string[]) =>
  `LEFT JOIN LATERAL (SELECT ${['status', ...new Set(columns)].map((column) => `x.${column}`).join(', ')} FROM message x
      WHERE x.tool_call_row_id = tc.id ORDER BY ${latestExecutionFirst('x')} LIMIT 1) e ON true`;

/** What a read of tool calls' payloads (or of their sizes) by id reads, for the `wanted` ones. */
function toolCallPayloadsStatement(wanted: WantedPayloads<ToolCallPayload>, read: 'value' | 'bytes') {
  const params: unknown[] = [];
  const executionColumns: string[] = [];
  const columns = wantedColumns(wanted, 'tc.id', (payload) => {
    if (payload === 'declaredInput') return read === 'value' ? 'tc.declared_input' : 'octet_length(tc.declared_input::text)';
    const source = EXECUTION_PAYLOADS[payload];
    executionColumns.push(...(read === 'value' ? source.columns : source.sizeColumns));
    return unlessInterrupted('e', source[read]('e'));
  }, params, read === 'bytes' ? '_bytes' : '');
  return { text: `SELECT tc.id, ${columns} FROM tool_call tc ${ofLiveThread('tc.thread_id')} ${latestExecution(executionColumns)} WHERE tc.id = ANY($1::uuid[])`, params };
}

/** A tool call payload's size, read instead of it (as an audit's, PAYLOAD_BYTES). */
export const TOOL_CALL_PAYLOAD_BYTES = {
  declaredInput: 'declaredInputBytes', effectiveInput: 'effectiveInputBytes', output: 'outputBytes', error: 'errorBytes',
} as const satisfies Record<ToolCallPayload, string>;

/**
 * The sizes of tool calls' payloads by id (TOOL_CALL_PAYLOAD_BYTES), each for the calls that want
 * it: what a read charges before it reads them. The declared input's and the output content's
 * are measured by the database, which reads them there and sends only their sizes.
 */
export function toolCallPayloadSizesByIds(sql: Sql, wanted: WantedPayloads<ToolCallPayload>) {
  const { text, params } = toolCallPayloadsStatement(wanted, 'bytes');
  return sql.query<{ id: string } & Partial<Record<(typeof TOOL_CALL_PAYLOAD_BYTES)[ToolCallPayload], number | null>>>(text, params);
}

/**
 * The payloads of tool calls by id, each for the calls that want it, for the rows read without
 * them: the declared input from the ToolCall, the rest from its latest execution as the
 * projection derives them (tool-call-projection.ts), so the ToolCall keeps no copy of its audit's payloads.
 */
export function toolCallPayloadsByIds(sql: Sql, wanted: WantedPayloads<ToolCallPayload>) {
  const { text, params } = toolCallPayloadsStatement(wanted, 'value');
  return sql.query<Pick<ToolCallRow, 'id' | ToolCallPayload>>(text, params);
}

/**
 * Each run's tool calls in declaration order: by the declaring model call (its sequence, then id),
 * then position; without payloads. A finish's result lists them in the same order
 * (audit_apply_event, migration 20261219000000_answers_show_their_run). A run whose thread is
 * deleted is left out (a run without tool calls has an empty list).
 */
export async function toolCallsOfRuns(sql: Sql, runIds: readonly string[]): Promise<Map<string, ToolCallRow[]>> {
  const rows = await sql.query<ToolCallRow & { ofRun: string }>(
    `SELECT r.id AS of_run, ${toolCallColumns('tc.')} FROM run r ${ofLiveThread('r.thread_id')}
      LEFT JOIN (tool_call tc JOIN message m ON m.id = tc.declared_by_id) ON tc.run_id = r.id
      WHERE r.id = ANY($1::uuid[]) ORDER BY m.sequence, m.id, tc.position`,
    [runIds],
  );
  const calls = new Map<string, ToolCallRow[]>();
  for (const { ofRun, ...call } of rows) {
    const ofThisRun = calls.get(ofRun) ?? calls.set(ofRun, []).get(ofRun)!;
    if (call.id !== null) ofThisRun.push(call);
  }
  return calls;
}
