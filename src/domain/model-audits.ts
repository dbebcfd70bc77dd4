import type { Principal } from '../auth/principal.js';
import type { Prisma } from '../generated/prisma/client.js';
import { endColumns, findAudit, requireAudit, sameFinishedSequence, startColumns } from './audit-rows.js';
import { command } from './command.js';
import { badInput, conflict } from './errors.js';
import { auditChanged } from './events.js';
import { nonBlank } from './ids.js';
import { assertStorableText, jsonEqual } from './json.js';
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

const json = (value: unknown) => (value ?? undefined) as Prisma.InputJsonValue | undefined;

/** Creates the RUNNING model audit; an identical replay returns it, keeping the first observation. */
export const recordModelStarted = command(async ({ tx, deps, emit }, principal: Principal, input: ModelStarted) => {
  nonBlank(input.operationId, 'operationId');
  if (input.model != null) assertStorableText(input.model, 'model');
  checkObservation(input);
  checkJsonFields(deps.limits, { input: input.input });
  const run = await requireLease(tx, principal, input.lease);

  const existing = await findAudit(tx, run.id, 'ASSISTANT', input.operationId);
  if (existing) {
    const same =
      existing.sequence === input.sequence &&
      jsonEqual(existing.input, input.input) &&
      (existing.name ?? null) === (input.model ?? null);
    if (!same) throw conflict(`Model call ${input.operationId} was already started with a different sequence, model or input`);
    return existing;
  }
  const audit = await tx.message.create({
    data: {
      threadId: run.threadId,
      runId: run.id,
      role: 'ASSISTANT',
      messageType: 'model_audit',
      operationId: input.operationId,
      name: input.model ?? null,
      status: 'RUNNING',
      input: json(input.input),
      ...startColumns(input),
    },
  });
  emit(auditChanged(audit));
  // A just-started model call has declared nothing yet.
  return { ...audit, declaredToolCalls: [] };
});

function checkDeclaredToolCalls(toolCalls: DeclaredToolCall[]): void {
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
export const recordModelFinished = command(async ({ tx, deps, emit }, principal: Principal, input: ModelFinished) => {
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
  const run = await requireLease(tx, principal, input.lease);
  const audit = await requireAudit(tx, run, 'ASSISTANT', input.operationId);

  if (audit.status !== 'RUNNING') {
    const declared = await tx.toolCall.findMany({ where: { declaredById: audit.id }, orderBy: { position: 'asc' } });
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

  const closed = await tx.message.update({
    where: { id: audit.id },
    data: {
      status: input.status,
      output: json(input.output),
      error: json(input.error),
      usage: json(input.usage),
      ...endColumns(audit, input),
    },
  });
  const declared = toolCalls.length === 0 ? [] : await tx.toolCall.createManyAndReturn({
      data: toolCalls.map((call, position) => ({
        threadId: run.threadId,
        runId: run.id,
        declaredById: audit.id,
        position,
        toolCallId: call.id,
        name: call.name,
        declaredInput: json(call.args),
      })),
    });
  emit(auditChanged(closed));
  // Returned with the audit, so that the response needs no re-read.
  return { ...closed, declaredToolCalls: declared.sort((a, b) => a.position - b.position) };
});
