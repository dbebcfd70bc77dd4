import type { Principal } from '../auth/principal.js';
import { insertRow, updateRow } from '../db/sql.js';
import type { Message } from '../generated/prisma/client.js';
import { endColumns, findAudit, requireAudit, sameFinishedSequence, startColumns } from './audit-rows.js';
import { command, type CommandScope, type DomainDeps } from './command.js';
import { findDeclaringToolCall } from './declaring-model.js';
import { DomainError, badInput, conflict, invalidTransition } from './errors.js';
import { auditChanged } from './events.js';
import { LEASED_RUN, START_COLUMNS, bump, endParams, endSet, fastRows, jsonParam, openAudit, startParams, startValues } from './fast-write.js';
import { newId, nonBlank } from './ids.js';
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

/** Checks shared by every tool event that need no database. */
function checkToolEvent(event: ToolEvent): void {
  nonBlank(event.toolCallId, 'toolCallId');
  checkObservation(event);
  if (event.namespace && event.namespace.length > 0) {
    throw new DomainError('NAMESPACE_REJECTED', `Events from sub-agent namespace "${event.namespace.join('/')}" are not audited`);
  }
}

/** Checks shared by every tool event, then the lease; returns the run locked. */
async function admitToolEvent({ sql }: CommandScope, principal: Principal, event: ToolEvent): Promise<LockedRun> {
  checkToolEvent(event);
  return requireLease(sql, principal, event.lease);
}

function effectiveInputOf(value: unknown): JsonObject {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) throw badInput('effectiveInput must be a JSON object');
  return value;
}

/** The checks of a tool start that need no database. */
function checkToolStarted(deps: DomainDeps, _principal: Principal, input: ToolStarted): void {
  nonBlank(input.name, 'name');
  checkJsonFields(deps.limits, { effectiveInput: effectiveInputOf(input.effectiveInput) });
  checkToolEvent(input);
}

/**
 * The fast path of a start bound in the run itself (fast-write.ts): the newest declaration in the
 * run, locked and still PENDING, read on a snapshot no change of the thread committed after.
 */
export const START_TOOL = `WITH ${LEASED_RUN},
declaration AS (
  SELECT tc.id, tc.status FROM tool_call tc JOIN leased ON tc.run_id = leased.id JOIN message d ON d.id = tc.declared_by_id
  WHERE tc.tool_call_id = $4::text ORDER BY d.sequence DESC, d.created_at DESC LIMIT 1
  FOR UPDATE OF tc),
pending AS (SELECT declaration.id, leased.id AS run_id, leased.thread_id FROM declaration, leased WHERE declaration.status = 'PENDING'),
${bump('pending', true)},
started AS (
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id,
    ${START_COLUMNS}, change_cursor, changed_at)
  SELECT $5::uuid, p.thread_id, p.run_id, 'TOOL'::"MessageRole", 'tool_audit'::"MessageType", $4::text, $6::text,
    'RUNNING'::"AuditStatus", $7::jsonb, p.id, ${startValues(8)}, bumped.cursor, bumped.at
  FROM pending p, bumped
  RETURNING *),
mirrored AS (
  UPDATE tool_call tc SET status = 'RUNNING', effective_input = started.input, output = NULL, error = NULL,
    started_at = started.started_at, finished_at = NULL, duration_ms = NULL
  FROM started WHERE tc.id = started.tool_call_row_id)
SELECT * FROM started`;

async function startToolFast(deps: DomainDeps, principal: Principal, input: ToolStarted) {
  const effectiveInput = effectiveInputOf(input.effectiveInput);
  const [audit] = await fastRows<Message>(deps.statement, principal, input.lease, START_TOOL, [
    input.toolCallId,
    newId(),
    input.name,
    jsonParam(effectiveInput),
    ...startParams(input),
  ]);
  return audit && { value: audit, changes: [auditChanged(audit)] };
}

/**
 * Opens the RUNNING tool audit bound to its declaring model call and moves the ToolCall to
 * RUNNING. An identical replay returns the existing row unchanged (first startedAt and
 * monotonic origin kept), whatever its status.
 */
export const recordToolStarted = command(async ({ sql, emit }, principal: Principal, input: ToolStarted) => {
  const effectiveInput = effectiveInputOf(input.effectiveInput);
  const run = await requireLease(sql, principal, input.lease);

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
    id: newId(),
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
}, startToolFast, checkToolStarted);

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

function checkToolFinished(deps: DomainDeps, _principal: Principal, input: ToolFinished): void {
  if (!isJsonObject(input.output)) throw badInput('output must be the tool message envelope, a JSON object');
  checkJsonFields(deps.limits, { output: input.output });
  checkToolEvent(input);
}

/** The fast path of closing a RUNNING tool audit (fast-write.ts): the audit row locked, then closed as `close` does. */
export const FINISH_TOOL = `WITH ${LEASED_RUN},
${openAudit('TOOL')},
${bump('target')},
closed AS (
  UPDATE message m SET status = $5::"AuditStatus", output = $6::jsonb,
    error = CASE WHEN $7::jsonb IS NOT NULL AND coalesce(m.error, 'null'::jsonb) = 'null'::jsonb THEN $7::jsonb ELSE m.error END,
    awaiting_run_terminal = false, ${endSet(8)}, change_cursor = bumped.cursor, changed_at = bumped.at
  FROM target, bumped WHERE m.id = target.id
  RETURNING m.*),
mirrored AS (
  UPDATE tool_call tc SET status = closed.status::text::"ToolCallStatus", effective_input = closed.input, output = $12::jsonb,
    error = closed.error, started_at = closed.started_at, finished_at = closed.finished_at, duration_ms = closed.duration_ms
  FROM closed WHERE tc.id = closed.tool_call_row_id)
SELECT * FROM closed`;

async function finishToolFast(deps: DomainDeps, principal: Principal, input: ToolFinished) {
  const output = input.output as JsonObject;
  const controlledFailure = output.status === 'error';
  const [audit] = await fastRows<Message>(deps.statement, principal, input.lease, FINISH_TOOL, [
    input.toolCallId,
    controlledFailure ? 'FAILED' : 'COMPLETED',
    jsonParam(output),
    controlledFailure ? jsonParam({ message: outputContent(output) }) : null,
    ...endParams(input),
    jsonParam(outputContent(output)),
  ]);
  return audit && { value: audit, changes: [auditChanged(audit)] };
}

/** Closes the audit: a `status: "error"` envelope (a controlled failure) is FAILED at once, its content the error. */
export const recordToolFinished = command(async (scope, principal: Principal, input: ToolFinished) => {
  const output = input.output as JsonObject;
  const run = await requireLease(scope.sql, principal, input.lease);
  const audit = await requireAudit(scope.sql, run, 'TOOL', input.toolCallId);

  if (audit.status !== 'RUNNING') {
    const same =
      audit.output !== null &&
      sameFinishedSequence(audit, input) &&
      jsonEqual(comparableOutput(audit.output), comparableOutput(input.output));
    if (!same) throw conflict(`Tool call ${input.toolCallId} already ended (${audit.status}) with a different result`);
    return audit;
  }
  const controlledFailure = output.status === 'error';
  return close(scope, audit, {
    status: controlledFailure ? 'FAILED' : 'COMPLETED',
    output,
    // The reason a dashboard shows; a bare error recorded earlier is kept (it came first).
    ...(controlledFailure && audit.error === null ? { error: { message: outputContent(output) } } : {}),
    awaitingRunTerminal: false,
    ...endColumns(audit, input),
  });
}, finishToolFast, checkToolFinished);

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
