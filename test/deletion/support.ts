import type { TestApp } from '../support/app.js';

export const DELETE_THREAD = `mutation($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }`;

/**
 * Every row anywhere in the database that names the thread or one of its runs: every table of the
 * schema is asked (its `id`, `thread_id` and `run_id` columns, whichever it has), not a list kept
 * by hand, so a table added later is asked too.
 */
export async function rowsLeft(t: TestApp, threadId: string, runIds: string[]): Promise<Record<string, number>> {
  const sql = t.app.db.sql;
  const columns = await sql.query<{ tableName: string; columnName: string }>(
    `SELECT table_name AS "tableName", column_name AS "columnName" FROM information_schema.columns
     WHERE table_schema = current_schema() AND column_name IN ('id', 'thread_id', 'run_id', 'resumed_from_id') AND data_type = 'uuid'`,
  );
  const ids = [threadId, ...runIds];
  const left: Record<string, number> = {};
  for (const { tableName, columnName } of columns) {
    const [row] = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${tableName}" WHERE "${columnName}" = ANY($1::uuid[])`, [ids]);
    if (row!.n > 0) left[`${tableName}.${columnName}`] = row!.n;
  }
  if (columns.length < 6) throw new Error(`expected the thread, run, message and tool_call tables, found ${JSON.stringify(columns)}`);
  return left;
}
