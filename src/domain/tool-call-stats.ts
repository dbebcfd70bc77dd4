import type { Sql } from '../db/sql.js';

/** Dashboard counts, read from the ToolCall projection only (never from audit rows); statuses in their declared order. */
export function toolCallStats(sql: Sql, threadId: string) {
  return sql.query<{ name: string; status: string; count: number }>(
    `SELECT name, status, count(*)::int AS count FROM tool_call WHERE thread_id = $1::uuid
     GROUP BY name, status ORDER BY name, status`,
    [threadId],
  );
}
