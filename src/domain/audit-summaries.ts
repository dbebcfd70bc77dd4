import type { Sql } from '../db/sql.js';
import { tokensOf } from '../shared/llm-payloads.js';
import { LIVE_THREAD, ofLiveThread } from './audit-reads.js';

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
 * A run or thread whose thread is deleted (marked, or its rows removed) is left out: its numbers
 * are read in the same statement as its thread's mark, so a deletion that began after the read
 * that found it never shows as numbers of the rows its removal has left so far.
 */

/**
 * Each key of `column` ('run_id' or 'thread_id') whose thread is live, with its messages `m` that
 * match `matching` (none: one row of nulls). The messages are also said to be of the keys ($1):
 * joined to the keys alone, PostgreSQL read a thread's messages by scanning the whole table
 * (a hash join, 10,147 buffers for 50 threads of 400,000 messages) instead of their index.
 */
function liveKeysWithMessages(column: 'run_id' | 'thread_id', matching: string) {
  const { from, key } = column === 'run_id' ? { from: `run r ${ofLiveThread('r.thread_id')}`, key: 'r.id' } : { from: 'thread t', key: 't.id' };
  return {
    key,
    fromWhere: `${from} LEFT JOIN message m ON m.${column} = ${key} AND m.${column} = ANY($1::uuid[]) AND ${matching}
      WHERE ${key} = ANY($1::uuid[]) AND ${LIVE_THREAD}`,
  };
}

const auditCountsBy = (sql: Sql, column: 'run_id' | 'thread_id', keys: readonly string[]) => {
  const { key, fromWhere } = liveKeysWithMessages(column, AUDIT_TYPES);
  return sql.query<AuditCounts>(`SELECT ${key} AS key, ${COUNTS} FROM ${fromWhere} GROUP BY ${key}`, [keys]);
};

/** Each run's counts (zeros for a run without audits); a run whose thread is deleted is left out. */
export const auditCountsOfRuns = (sql: Sql, runIds: readonly string[]) => auditCountsBy(sql, 'run_id', runIds);

/** Each thread's counts (zeros for a thread without audits); a deleted thread is left out. */
export const auditCountsOfThreads = (sql: Sql, threadIds: readonly string[]) => auditCountsBy(sql, 'thread_id', threadIds);

/**
 * Token totals of the model calls of each key ('run_id' or 'thread_id'), summed by the one usage
 * reader (src/shared/llm-payloads.ts): usage is stored as each runtime reported it, in shapes SQL
 * would have to know one by one. Only the usage column is read. A key with no usage carrying
 * counts has null; a key whose thread is deleted is left out.
 */
/** A run's or a thread's tokens summed, exact past 2^53 (a thread's sum passes GraphQL's Int early). */
export interface TokenTotals {
  input: bigint;
  output: bigint;
}

async function tokensBy(sql: Sql, column: 'run_id' | 'thread_id', keys: readonly string[]): Promise<Map<string, TokenTotals | null>> {
  const { key: keyColumn, fromWhere } = liveKeysWithMessages(column, `m.message_type = 'model_audit' AND m.usage IS NOT NULL`);
  const rows = await sql.query<{ key: string; usage: unknown }>(`SELECT ${keyColumn} AS key, m.usage FROM ${fromWhere}`, [keys]);
  const totals = new Map<string, TokenTotals | null>();
  for (const { key, usage } of rows) {
    const tokens = tokensOf(usage);
    const sum = totals.get(key) ?? null;
    if (!tokens) {
      totals.set(key, sum);
      continue;
    }
    totals.set(key, { input: (sum?.input ?? 0n) + BigInt(tokens.input), output: (sum?.output ?? 0n) + BigInt(tokens.output) });
  }
  return totals;
}

export const tokensOfRuns = (sql: Sql, runIds: readonly string[]) => tokensBy(sql, 'run_id', runIds);
export const tokensOfThreads = (sql: Sql, threadIds: readonly string[]) => tokensBy(sql, 'thread_id', threadIds);

/**
 * Each thread's count of runs and of FAILED runs, and its runs' latest change (zeros and null: no
 * runs); a deleted thread is left out. Its runs are said to be of the keys, as liveKeysWithMessages' messages.
 */
export const runCountsOfThreads = (sql: Sql, threadIds: readonly string[]) =>
  sql.query<{ threadId: string; runs: number; failedRuns: number; lastChangedAt: Date | null }>(
    `SELECT t.id AS thread_id, count(r.id)::int AS runs, count(r.id) FILTER (WHERE r.status = 'FAILED')::int AS failed_runs,
      max(r.changed_at) AS last_changed_at FROM thread t LEFT JOIN run r ON r.thread_id = t.id AND r.thread_id = ANY($1::uuid[])
      WHERE t.id = ANY($1::uuid[]) AND ${LIVE_THREAD} GROUP BY t.id`,
    [threadIds],
  );
