import type { Sql } from '../db/sql.js';
import type { Message, Run, Thread, ToolCall } from '../generated/prisma/client.js';

// The audit timeline and the rows it points to, as plain SQL: each function reads a whole batch
// in one statement (the GraphQL layer's DataLoaders call them once per relation and request).

/**
 * The newest `count` audit rows of a thread, newest first: by run creation, then the runtime's
 * sequence (role and id break ties between a model call and a tool sharing a sequence number).
 */
export function newestAudits(sql: Sql, threadId: string, count: number): Promise<Message[]> {
  return sql.query<Message>(NEWEST_AUDITS, [threadId, count]);
}

/**
 * The thread's runs newest first on their (thread_id, created_order) index, each run's audits
 * beside it: the scan stops once `count` audits are found, so the read costs the same on a
 * thread of 5 k audits as on one of 500 k (bench/README.md, the read curve). Only a single run
 * holding more audits than that is sorted whole.
 */
export const NEWEST_AUDITS = `SELECT m.* FROM run r CROSS JOIN LATERAL (
    SELECT * FROM message m WHERE m.run_id = r.id AND m.message_type IN ('model_audit', 'tool_audit')
    ORDER BY m.sequence DESC, m.role DESC, m.id DESC LIMIT $2) m
  WHERE r.thread_id = $1
  ORDER BY r.created_order DESC, m.sequence DESC, m.role DESC, m.id DESC
  LIMIT $2`;

/** Audit rows (model or tool) by id. */
export const auditsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Message>(`SELECT * FROM message WHERE id = ANY($1::uuid[]) AND message_type IN ('model_audit', 'tool_audit')`, [ids]);

export const runsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Run>(`SELECT * FROM run WHERE id = ANY($1::uuid[])`, [ids]);

export const threadsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<Thread>(`SELECT * FROM thread WHERE id = ANY($1::uuid[])`, [ids]);

/** The model audit that declared each tool call, with the tool call's id as `declaredToolCallId`. */
export const declaringAudits = (sql: Sql, toolCallIds: readonly string[]) =>
  sql.query<Message & { declaredToolCallId: string }>(
    `SELECT m.*, tc.id AS declared_tool_call_id FROM tool_call tc JOIN message m ON m.id = tc.declared_by_id
      WHERE tc.id = ANY($1::uuid[])`,
    [toolCallIds],
  );

export const toolCallsByIds = (sql: Sql, ids: readonly string[]) =>
  sql.query<ToolCall>(`SELECT * FROM tool_call WHERE id = ANY($1::uuid[])`, [ids]);

/** The tool calls each model audit declared, in declaration order. */
export const toolCallsDeclaredBy = (sql: Sql, auditIds: readonly string[]) =>
  sql.query<ToolCall>(`SELECT * FROM tool_call WHERE declared_by_id = ANY($1::uuid[]) ORDER BY position`, [auditIds]);

/** Each run's tool calls in declaration order: by the declaring model call (its sequence, then id), then position. */
export const toolCallsOfRuns = (sql: Sql, runIds: readonly string[]) =>
  sql.query<ToolCall>(
    `SELECT tc.* FROM tool_call tc JOIN message m ON m.id = tc.declared_by_id
      WHERE tc.run_id = ANY($1::uuid[]) ORDER BY m.sequence, m.id, tc.position`,
    [runIds],
  );
