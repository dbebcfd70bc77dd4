import type { Principal } from './principal.js';
import { prepared, type Sql } from '../db/sql.js';
import { isUuid } from './ids.js';
import type { Observation } from './observation.js';

/*
 * The pieces of the lifecycle statements (command.ts, `fenced`): each lifecycle write is one
 * statement in autocommit that locks the run row only when the lease holds, does the write,
 * mirrors the ToolCall, bumps the thread's change cursor and stamps the written row, and returns
 * it. The statement is the rule: it writes only when every rule holds. When it writes nothing,
 * a read-only explanation names the refusal or returns the replay. Locks are taken in one order
 * everywhere: the run row, then the audit or ToolCall row, the thread row last.
 */

/** What a worker presents on every lifecycle write: the run and the epoch it claimed (the fence's token). */
export interface LeaseProof {
  runId: string;
  epoch: number;
}

/** The run row, locked only when the caller's lease holds (the fence of lease.ts assertLease, in SQL). */
export const LEASED_RUN = `leased AS (
  SELECT id, thread_id FROM run
  WHERE id = $1::uuid AND status = 'RUNNING' AND lease_owner = $2 AND lease_epoch = $3
    AND (lease_expires_at IS NULL OR lease_expires_at > now())
  FOR UPDATE)`;

/** The caller's RUNNING audit of `role` with operation id $4, locked (the recheck sees its newest version). */
export const openAudit = (role: 'ASSISTANT' | 'TOOL', where = '') => `target AS (
  SELECT m.id, m.thread_id FROM message m JOIN leased ON m.run_id = leased.id
  WHERE m.role = '${role}' AND m.operation_id = $4::text AND m.status = 'RUNNING' ${where}
  FOR UPDATE OF m)`;

const bumped = (source: string, condition: string) => `bumped AS (
  UPDATE thread t SET change_cursor = t.change_cursor + 1 FROM ${source} s WHERE t.id = s.thread_id
  ${condition}
  RETURNING t.change_cursor AS cursor, clock_timestamp() AS at)`;

/**
 * The thread's cursor bumped by one for the row of `source` (a CTE with `thread_id`), the
 * statement's last lock (change-cursors.ts).
 */
export const bump = (source: string) => bumped(source, '');

/**
 * `bump`, but only when no change of the thread committed after the statement's snapshot was
 * taken (the recheck of the locked row compares the newest cursor with the snapshot's): for a
 * statement whose reads must not be older than its locks.
 */
export const bumpIfFresh = (source: string) =>
  bumped(source, 'AND t.change_cursor = (SELECT snapshot.change_cursor FROM thread snapshot WHERE snapshot.id = s.thread_id)');

/** The start columns of an INSERT, parameters $first..$first+3 (startParams). */
export const START_COLUMNS = 'sequence, started_at, start_clock_id, start_clock_nanos';
export const startValues = (first: number) => `$${first}::bigint, $${first + 1}::timestamptz, $${first + 2}::text, $${first + 3}::bigint`;
export const startParams = (observation: Observation) => [
  observation.sequence!,
  observation.observedAt,
  observation.clock?.clockId ?? null,
  observation.clock?.nanos ?? null,
];

/**
 * The end columns of an UPDATE of message `m`, parameters $first..$first+3 (endParams). The one
 * duration formula: whole milliseconds between two readings of the same monotonic clock, never
 * negative, at most an int; none across clocks.
 */
export const endSet = (first: number) => `finished_at = $${first}::timestamptz, finished_sequence = $${first + 1}::bigint,
  end_clock_id = $${first + 2}::text, end_clock_nanos = $${first + 3}::bigint,
  duration_ms = CASE WHEN m.start_clock_id = $${first + 2}::text AND m.start_clock_nanos IS NOT NULL
    THEN least(2147483647, greatest(0, ($${first + 3}::bigint - m.start_clock_nanos) / 1000000))::int END`;
export const endParams = (observation: Observation) => [
  observation.observedAt,
  observation.sequence ?? null,
  observation.clock?.clockId ?? null,
  observation.clock?.nanos ?? null,
];

/** A JSON parameter: null and undefined are SQL NULL. */
export const jsonParam = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

/** Failures that mean "a concurrent write got there first": the statement wrote nothing, the explanation decides. */
const WROTE_NOTHING_SQLSTATES = new Set(['23505', '40001', '40P01']);

/**
 * Runs a lifecycle statement with the lease as $1..$3 (the run, the worker, the epoch) and
 * `params` from $4; its rows, or none when it wrote nothing (a run id that is no UUID is not even sent).
 */
export function leasedRows<Row>(sql: Sql, principal: Principal, lease: LeaseProof, text: string, params: unknown[]): Promise<Row[]> {
  if (!isUuid(lease.runId)) return Promise.resolve([]);
  return fencedRows(sql, text, [lease.runId.toLowerCase(), principal.sub, lease.epoch, ...params]);
}

/** Runs a lifecycle statement: its rows, or none when a concurrent write made it fail (the explanation decides). */
export async function fencedRows<Row>(sql: Sql, text: string, params: unknown[]): Promise<Row[]> {
  try {
    return await sql.query<Row>(prepared(text), params);
  } catch (error) {
    if (WROTE_NOTHING_SQLSTATES.has((error as { code?: unknown } | null)?.code as string)) return [];
    throw error;
  }
}
