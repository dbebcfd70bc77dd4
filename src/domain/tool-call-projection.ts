import type { AuditStatus, Message, Prisma, ToolCall, ToolCallStatus } from '../generated/prisma/client.js';
import { updateRow, type Sql } from '../db/sql.js';
import { isJsonObject } from './json.js';

const TOOL_CALL_STATUS: Record<AuditStatus, ToolCallStatus> = {
  RUNNING: 'RUNNING',
  COMPLETED: 'COMPLETED',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  // An interrupted call is the model's intent again: a resume may run it.
  INTERRUPTED: 'PENDING',
  ABANDONED: 'FAILED',
};

type Projection = Pick<ToolCall, 'status' | 'effectiveInput' | 'output' | 'error' | 'startedAt' | 'finishedAt' | 'durationMs'>;

/** The ToolCall sees only the content of the tool output (missing: ""), never the envelope. */
export function outputContent(output: Prisma.JsonValue | null): Prisma.JsonValue | null {
  if (output === null) return null;
  const content = isJsonObject(output) ? output.content : undefined;
  return content ?? '';
}

/**
 * The one-way projection: after a tool starts, only its audit writes the ToolCall's execution
 * fields, always derived from the audit row as a whole. A null JSON field is SQL NULL.
 */
export function projectToolAudit(audit: Message): Projection {
  const status = TOOL_CALL_STATUS[audit.status!];
  if (status === 'PENDING') {
    return { status, effectiveInput: null, output: null, error: null, startedAt: null, finishedAt: null, durationMs: null };
  }
  return {
    status,
    effectiveInput: audit.input,
    output: outputContent(audit.output),
    error: audit.error,
    startedAt: audit.startedAt,
    finishedAt: audit.finishedAt,
    durationMs: audit.durationMs,
  };
}

/**
 * Locks a ToolCall row for the rest of the transaction and returns its current status, so that
 * two runs cannot both take the same declared call.
 */
export async function lockToolCall(sql: Sql, id: string): Promise<ToolCallStatus> {
  const rows = await sql.query<{ status: ToolCallStatus }>('SELECT status::text AS status FROM tool_call WHERE id = $1::uuid FOR UPDATE', [
    id,
  ]);
  return rows[0]!.status;
}

export async function mirrorOntoToolCall(sql: Sql, audit: Message): Promise<void> {
  await updateRow(sql, 'tool_call', audit.toolCallRowId!, projectToolAudit(audit));
}
