import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { insertRow, insertRows, updateRow } from '../db/sql.js';
import type { Message, ToolCall } from '../generated/prisma/client.js';
import { endColumns, findAudit, requireAudit, sameFinishedSequence, startColumns } from './audit-rows.js';
import { command } from './command.js';
import { badInput, conflict } from './errors.js';
import { auditChanged } from './events.js';
import { boundedName, nonBlank } from './ids.js';
import { jsonEqual } from './json.js';
import { requireLease, type LeaseProof } from './lease.js';
import { checkJsonFields, checkObservation, type Observation } from './observation.js';

export interface ModelStarted extends Observation {
  lease: LeaseProof;
  operationId: string;
  sequence: bigint;
  model?: string | null;
  input?: unknown;
}

export interface DeclaredToolCall {
  id: string;
  name: string;
  args?: unknown;
}

export interface ModelFinished extends Observation {
  lease: LeaseProof;
  operationId: string;
  status: string;
  output?: unknown;
  error?: unknown;
  usage?: unknown;
  toolCalls?: DeclaredToolCall[] | null;
}

/** Creates the RUNNING model audit; an identical replay returns it, keeping the first observation. */
export const recordModelStarted = command(async ({ sql, deps, emit }, principal: Principal, input: ModelStarted) => {
  nonBlank(input.operationId, 'operationId');
  if (input.model != null) boundedName(input.model, 'model');
  checkObservation(input);
  checkJsonFields(deps.limits, { input: input.input });
  const run = await requireLease(sql, principal, input.lease);

  const existing = await findAudit(sql, run.id, 'ASSISTANT', input.operationId);
  if (existing) {
    const same =
      existing.sequence === input.sequence &&
      jsonEqual(existing.input, input.input) &&
      (existing.name ?? null) === (input.model ?? null);
    if (!same) throw conflict(`Model call ${input.operationId} was already started with a different sequence, model or input`);
    return existing;
  }
  const audit = await insertRow<Message>(sql, 'message', {
    id: randomUUID(),
    threadId: run.threadId,
    runId: run.id,
    role: 'ASSISTANT',
    messageType: 'model_audit',
    operationId: input.operationId,
    name: input.model ?? null,
    status: 'RUNNING',
    input: input.input ?? null,
    ...startColumns(input),
  });
  emit(auditChanged(audit));
  // A just-started model call has declared nothing yet.
  return { ...audit, declaredToolCalls: [] };
});

/** Far more than any model declares at once, and few enough to insert in one statement; query costs count on it. */
export const MAX_DECLARED_TOOL_CALLS = 1000;

function checkDeclaredToolCalls(toolCalls: DeclaredToolCall[]): void {
  if (toolCalls.length > MAX_DECLARED_TOOL_CALLS) {
    throw badInput(`A model response declares ${toolCalls.length} tool calls; the limit is ${MAX_DECLARED_TOOL_CALLS}`);
  }
  const seen = new Set<string>();
  for (const call of toolCalls) {
    nonBlank(call.id, 'toolCalls.id');
    nonBlank(call.name, 'toolCalls.name');
    if (seen.has(call.id)) throw badInput(`Tool call ${call.id} is declared twice in one model response`);
    seen.add(call.id);
  }
}

/**
 * Closes the model audit and declares its tool calls as PENDING ToolCalls. A replay is a no-op:
 * it never touches a ToolCall, so a started call is never reset to PENDING.
 */
export const recordModelFinished = command(async ({ sql, deps, emit }, principal: Principal, input: ModelFinished) => {
  nonBlank(input.operationId, 'operationId');
  if (input.status !== 'COMPLETED' && input.status !== 'FAILED') {
    throw badInput('recordModelFinished status must be COMPLETED or FAILED');
  }
  checkObservation(input);
  const toolCalls = input.toolCalls ?? [];
  checkDeclaredToolCalls(toolCalls);
  checkJsonFields(deps.limits, {
    output: input.output,
    error: input.error,
    usage: input.usage,
    ...Object.fromEntries(toolCalls.map((call, index) => [`toolCalls[${index}].args`, call.args])),
  });
  const run = await requireLease(sql, principal, input.lease);
  const audit = await requireAudit(sql, run, 'ASSISTANT', input.operationId);

  if (audit.status !== 'RUNNING') {
    const declared = await sql.query<ToolCall>('SELECT * FROM tool_call WHERE declared_by_id = $1 ORDER BY position', [audit.id]);
    const same =
      audit.status === input.status &&
      sameFinishedSequence(audit, input) &&
      jsonEqual(audit.output, input.output) &&
      jsonEqual(audit.error, input.error) &&
      jsonEqual(audit.usage, input.usage) &&
      declared.length === toolCalls.length &&
      declared.every(
        (row, index) =>
          row.toolCallId === toolCalls[index]!.id &&
          row.name === toolCalls[index]!.name &&
          jsonEqual(row.declaredInput, toolCalls[index]!.args),
      );
    if (!same) throw conflict(`Model call ${input.operationId} already ended differently`);
    return { ...audit, declaredToolCalls: declared };
  }

  const closed = await updateRow<Message>(sql, 'message', audit.id, {
    status: input.status,
    output: input.output ?? undefined,
    error: input.error ?? undefined,
    usage: input.usage ?? undefined,
    ...endColumns(audit, input),
  });
  const declared = await insertRows<ToolCall>(
    sql,
    'tool_call',
    toolCalls.map((call, position) => ({
      id: randomUUID(),
      threadId: run.threadId,
      runId: run.id,
      declaredById: audit.id,
      position,
      toolCallId: call.id,
      name: call.name,
      declaredInput: call.args ?? null,
    })),
  );
  emit(auditChanged(closed));
  // Returned with the audit, so that the response needs no re-read.
  return { ...closed, declaredToolCalls: declared.sort((a, b) => a.position - b.position) };
});
