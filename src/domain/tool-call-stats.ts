import type { Sql } from '../db/sql.js';

/**
 * Dashboard counts of the ToolCall projection (never of audit rows), read from the counts the
 * database keeps per (tool, status) (tool_call_count): as fast for a thread of a million calls as
 * for ten. Statuses in their declared order; a pair whose calls all moved on is left out.
 */
export function toolCallStats(sql: Sql, threadId: string) {
  return sql.query<{ name: string; status: string; count: number }>(
    `SELECT name, status, count FROM tool_call_count WHERE thread_id = $1::uuid AND count > 0 ORDER BY name, status`,
    [threadId],
  );
}
