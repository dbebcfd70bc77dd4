import { Prisma, type AuditStatus, type Message, type ToolCallStatus } from '../generated/prisma/client.js';
import type { Tx } from '../db/transaction.js';
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

type JsonColumn = Prisma.InputJsonValue | typeof Prisma.DbNull;
const column = (value: Prisma.JsonValue | null): JsonColumn =>
  value === null ? Prisma.DbNull : (value as Prisma.InputJsonValue);

/** The ToolCall sees only the content of the tool output (missing: ""), never the envelope. */
export function outputContent(output: Prisma.JsonValue | null): JsonColumn {
  if (output === null) return Prisma.DbNull;
  const content = isJsonObject(output) ? output.content : undefined;
  return (content ?? '') as Prisma.InputJsonValue;
}

/**
 * The one-way projection: after a tool starts, only its audit writes the ToolCall's execution
 * fields, always derived from the audit row as a whole.
 */
export function projectToolAudit(audit: Message): Prisma.ToolCallUpdateInput {
  const status = TOOL_CALL_STATUS[audit.status!];
  if (status === 'PENDING') {
    return {
      status,
      effectiveInput: Prisma.DbNull,
      output: Prisma.DbNull,
      error: Prisma.DbNull,
      startedAt: null,
      finishedAt: null,
      durationMs: null,
    };
  }
  return {
    status,
    effectiveInput: column(audit.input),
    output: outputContent(audit.output),
    error: column(audit.error),
    startedAt: audit.startedAt,
    finishedAt: audit.finishedAt,
    durationMs: audit.durationMs,
  };
}

/**
 * Locks a ToolCall row for the rest of the transaction and returns its current status, so that
 * two runs cannot both take the same declared call.
 */
export async function lockToolCall(tx: Tx, id: string): Promise<ToolCallStatus> {
  const rows = await tx.$queryRawUnsafe<{ status: ToolCallStatus }[]>(
    'SELECT status::text AS status FROM tool_call WHERE id = $1::uuid FOR UPDATE',
    id,
  );
  return rows[0]!.status;
}

export async function mirrorOntoToolCall(tx: Tx, audit: Message): Promise<void> {
  await tx.toolCall.update({ where: { id: audit.toolCallRowId! }, data: projectToolAudit(audit) });
}
