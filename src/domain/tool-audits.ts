import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { insertRow, updateRow } from '../db/sql.js';
import type { Message } from '../generated/prisma/client.js';
import { endColumns, findAudit, requireAudit, sameFinishedSequence, startColumns } from './audit-rows.js';
import { command, type CommandScope } from './command.js';
import { findDeclaringToolCall } from './declaring-model.js';
import { DomainError, badInput, conflict, invalidTransition } from './errors.js';
import { auditChanged } from './events.js';
import { nonBlank } from './ids.js';
import { isJsonObject, jsonEqual, type JsonObject } from './json.js';
import { requireLease, type LeaseProof, type LockedRun } from './lease.js';
import { checkJsonFields, checkObservation, type Observation } from './observation.js';
import { lockToolCall, mirrorOntoToolCall, outputContent } from './tool-call-projection.js';

interface ToolEvent extends Observation {
  lease: LeaseProof;
  toolCallId: string;
  /** The runtime namespace the event came from; only the root (empty) is audited. */
  namespace?: string[] | null;
}

export interface ToolStarted extends ToolEvent {
  name: string;
  effectiveInput?: unknown;
  sequence: bigint;
}

export interface ToolFinished extends ToolEvent {
  /** The raw tool message envelope, e.g. {content, status, id, name, artifact}. */
  output?: unknown;
}

export interface ToolErrored extends ToolEvent {
  error?: unknown;
}

/** Checks shared by every tool event, then the lease; returns the run locked. */
async function admitToolEvent({ sql }: CommandScope, principal: Principal, event: ToolEvent): Promise<LockedRun> {
  nonBlank(event.toolCallId, 'toolCallId');
  checkObservation(event);
  if (event.namespace && event.namespace.length > 0) {
    throw new DomainError('NAMESPACE_REJECTED', `Events from sub-agent namespace "${event.namespace.join('/')}" are not audited`);
  }
  return requireLease(sql, principal, event.lease);
}

function effectiveInputOf(value: unknown): JsonObject {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) throw badInput('effectiveInput must be a JSON object');
  return value;
}

/**
 * Opens the RUNNING tool audit bound to its declaring model call and moves the ToolCall to
 * RUNNING. An identical replay returns the existing row unchanged (first startedAt and
 * monotonic origin kept), whatever its status.
 */
export const recordToolStarted = command(async (scope, principal: Principal, input: ToolStarted) => {
  const { sql, deps, emit } = scope;
  nonBlank(input.name, 'name');
  const effectiveInput = effectiveInputOf(input.effectiveInput);
  checkJsonFields(deps.limits, { effectiveInput });
  const run = await admitToolEvent(scope, principal, input);

  const existing = await findAudit(sql, run.id, 'TOOL', input.toolCallId);
  if (existing) {
    const same = existing.name === input.name && existing.sequence === input.sequence && jsonEqual(existing.input, effectiveInput);
    if (!same) throw conflict(`Tool call ${input.toolCallId} was already started with a different name, input or sequence`);
    return existing;
  }

  const toolCall = await findDeclaringToolCall(sql, run, input.toolCallId);
  // Only the declared intent starts: an ended call never runs again, and a RUNNING one is being
  // executed by another run (a sibling resume of the same ancestor).
  const status = await lockToolCall(sql, toolCall.id);
  if (status !== 'PENDING') {
    throw invalidTransition(
      status === 'RUNNING'
        ? `Tool call ${input.toolCallId} is already running in another run`
        : `Tool call ${input.toolCallId} has already ended (${status})`,
    );
  }
  const audit = await insertRow<Message>(sql, 'message', {
    id: randomUUID(),
    threadId: run.threadId,
    runId: run.id,
    role: 'TOOL',
    messageType: 'tool_audit',
    operationId: input.toolCallId,
    name: input.name,
    status: 'RUNNING',
    input: effectiveInput,
    toolCallRowId: toolCall.id,
    ...startColumns(input),
  });
  await mirrorOntoToolCall(sql, audit);
  emit(auditChanged(audit));
  return audit;
});

/** Terminal replays compare the raw output with the late-filled `id` and `name` ignored. */
function comparableOutput(output: unknown): unknown {
  if (!isJsonObject(output)) return output;
  const { id: _id, name: _name, ...rest } = output;
  return rest;
}

async function close(scope: CommandScope, audit: Message, data: Partial<Message>): Promise<Message> {
  const updated = await updateRow<Message>(scope.sql, 'message', audit.id, data);
  await mirrorOntoToolCall(scope.sql, updated);
  scope.emit(auditChanged(updated));
  return updated;
}

/** Closes the audit: a `status: "error"` envelope (a controlled failure) is FAILED at once, its content the error. */
export const recordToolFinished = command(async (scope, principal: Principal, input: ToolFinished) => {
  if (!isJsonObject(input.output)) throw badInput('output must be the tool message envelope, a JSON object');
  checkJsonFields(scope.deps.limits, { output: input.output });
  const run = await admitToolEvent(scope, principal, input);
  const audit = await requireAudit(scope.sql, run, 'TOOL', input.toolCallId);

  if (audit.status !== 'RUNNING') {
    const same =
      audit.output !== null &&
      sameFinishedSequence(audit, input) &&
      jsonEqual(comparableOutput(audit.output), comparableOutput(input.output));
    if (!same) throw conflict(`Tool call ${input.toolCallId} already ended (${audit.status}) with a different result`);
    return audit;
  }
  const controlledFailure = input.output.status === 'error';
  return close(scope, audit, {
    status: controlledFailure ? 'FAILED' : 'COMPLETED',
    output: input.output,
    // The reason a dashboard shows; a bare error recorded earlier is kept (it came first).
    ...(controlledFailure && audit.error === null ? { error: { message: outputContent(input.output) } } : {}),
    awaitingRunTerminal: false,
    ...endColumns(audit, input),
  });
});

/**
 * A bare error may be an interrupt: the observation is saved and the audit stays RUNNING,
 * awaiting the run's verdict. The same error again is a no-op.
 */
export const recordToolError = command(async (scope, principal: Principal, input: ToolErrored) => {
  checkJsonFields(scope.deps.limits, { error: input.error });
  const run = await admitToolEvent(scope, principal, input);
  const audit = await requireAudit(scope.sql, run, 'TOOL', input.toolCallId);

  if (audit.status !== 'RUNNING') throw conflict(`Tool call ${input.toolCallId} has already ended (${audit.status})`);
  if (audit.awaitingRunTerminal) {
    if (!jsonEqual(audit.error, input.error) || !sameFinishedSequence(audit, input)) {
      throw conflict(`Tool call ${input.toolCallId} already recorded a different error`);
    }
    return audit;
  }
  return close(scope, audit, {
    error: (input.error ?? undefined) as Message['error'] | undefined,
    awaitingRunTerminal: true,
    ...endColumns(audit, input),
  });
});
