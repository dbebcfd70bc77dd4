import type { Sql } from '../db/sql.js';
import { tokensOf } from '../shared/llm-payloads.js';

// Per-run and per-thread numbers over ALL their audits, whatever a timeline has loaded: what
// ended badly, how many calls, the span of their times, the tokens. Each function reads a whole
// batch of runs or threads in one statement (the GraphQL layer's DataLoaders call them once per
// field and request).

/** What the audits of one run or one thread add up to. */
export interface AuditCounts {
  key: string;
  audits: number;
  modelCalls: number;
  toolCalls: number;
  modelsFailed: number;
  toolsFailed: number;
  toolsAbandoned: number;
  toolsCancelled: number;
  toolsInterrupted: number;
  running: number;
  firstStartedAt: Date | null;
  lastFinishedAt: Date | null;
  lastChangedAt: Date | null;
}

/** The counts over the audit rows `m` joined to each key (none: no row with every column null). */
const COUNTS = `count(m.id)::int AS audits,
    count(*) FILTER (WHERE m.message_type = 'model_audit')::int AS model_calls,
    count(*) FILTER (WHERE m.message_type = 'tool_audit')::int AS tool_calls,
    count(*) FILTER (WHERE m.message_type = 'model_audit' AND m.status = 'FAILED')::int AS models_failed,
    count(*) FILTER (WHERE m.message_type = 'tool_audit' AND m.status = 'FAILED')::int AS tools_failed,
    count(*) FILTER (WHERE m.message_type = 'tool_audit' AND m.status = 'ABANDONED')::int AS tools_abandoned,
    count(*) FILTER (WHERE m.message_type = 'tool_audit' AND m.status = 'CANCELLED')::int AS tools_cancelled,
    count(*) FILTER (WHERE m.message_type = 'tool_audit' AND m.status = 'INTERRUPTED')::int AS tools_interrupted,
    count(*) FILTER (WHERE m.status = 'RUNNING')::int AS running,
    min(m.started_at) AS first_started_at, max(m.finished_at) AS last_finished_at, max(m.changed_at) AS last_changed_at`;

const AUDIT_TYPES = `m.message_type IN ('model_audit', 'tool_audit')`;

/*
 * A run or thread whose thread is deleted (marked, or its rows removed) is left out: its counts are
 * read in the same statement as its thread's mark, so a deletion that began after the read that
 * found it never shows as counts of the rows its removal has left so far.
 */

/** Each run's counts (zeros for a run without audits); a run whose thread is deleted is left out. */
export const auditCountsOfRuns = (sql: Sql, runIds: readonly string[]) =>
  sql.query<AuditCounts>(
    `SELECT r.id AS key, ${COUNTS} FROM run r JOIN thread t ON t.id = r.thread_id AND t.deleted_at IS NULL
    LEFT JOIN message m ON m.run_id = r.id AND ${AUDIT_TYPES} WHERE r.id = ANY($1::uuid[]) GROUP BY r.id`,
    [runIds],
  );

/** Each thread's counts (zeros for a thread without audits); a deleted thread is left out. */
export const auditCountsOfThreads = (sql: Sql, threadIds: readonly string[]) =>
  sql.query<AuditCounts>(
    `SELECT t.id AS key, ${COUNTS} FROM thread t LEFT JOIN message m ON m.thread_id = t.id AND ${AUDIT_TYPES}
    WHERE t.id = ANY($1::uuid[]) AND t.deleted_at IS NULL GROUP BY t.id`,
    [threadIds],
  );

/**
 * Token totals of the model calls of each key ('run_id' or 'thread_id'), summed by the one usage
 * reader (src/shared/llm-payloads.ts): usage is stored as each runtime reported it, in shapes SQL
 * would have to know one by one. Only the usage column is read. A key with no usage carrying
 * counts is left out.
 */
/** A run's or a thread's tokens summed, exact past 2^53 (a thread's sum passes GraphQL's Int early). */
export interface TokenTotals {
  input: bigint;
  output: bigint;
}

async function tokensBy(sql: Sql, column: 'run_id' | 'thread_id', keys: readonly string[]): Promise<Map<string, TokenTotals>> {
  const rows = await sql.query<{ key: string; usage: unknown }>(
    `SELECT ${column} AS key, usage FROM message WHERE ${column} = ANY($1::uuid[]) AND message_type = 'model_audit' AND usage IS NOT NULL`,
    [keys],
  );
  const totals = new Map<string, TokenTotals>();
  for (const { key, usage } of rows) {
    const tokens = tokensOf(usage);
    if (!tokens) continue;
    const sum = totals.get(key) ?? { input: 0n, output: 0n };
    totals.set(key, { input: sum.input + BigInt(tokens.input), output: sum.output + BigInt(tokens.output) });
  }
  return totals;
}

export const tokensOfRuns = (sql: Sql, runIds: readonly string[]) => tokensBy(sql, 'run_id', runIds);
export const tokensOfThreads = (sql: Sql, threadIds: readonly string[]) => tokensBy(sql, 'thread_id', threadIds);

/** Each thread's count of runs and of FAILED runs, and its runs' latest change; a thread without runs is left out. */
export const runCountsOfThreads = (sql: Sql, threadIds: readonly string[]) =>
  sql.query<{ threadId: string; runs: number; failedRuns: number; lastChangedAt: Date | null }>(
    `SELECT thread_id, count(*)::int AS runs, count(*) FILTER (WHERE status = 'FAILED')::int AS failed_runs,
      max(changed_at) AS last_changed_at FROM run WHERE thread_id = ANY($1::uuid[]) GROUP BY thread_id`,
    [threadIds],
  );
