import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import type { Message, ToolCall } from '../generated/prisma/client.js';
import { findAudit, requireAudit, sameFinishedSequence } from './audit-rows.js';
import { fenced, type DomainDeps, type Written } from './command.js';
import { badInput, conflict } from './errors.js';
import { auditChanged } from './events.js';
import { LEASED_RUN, START_COLUMNS, bump, endParams, endSet, jsonParam, leasedRows, openAudit, startParams, startValues, type LeaseProof } from './fenced-statements.js';
import { boundedName, newId, nonBlank } from './ids.js';
import { toolCallColumns, type ToolCallRow } from './audit-reads.js';
import { jsonEqual } from './json.js';
import { checkLease } from './lease.js';
import { checkJsonFields, checkObservation, type Observation } from './observation.js';

export interface ModelStarted extends Observation {
  lease: LeaseProof;
  operationId: string;
  sequence: bigint;
  model?: string | null;
  input?: unknown;
}

/** A model audit as a command returns it: with the ToolCalls it declared when the command has them at hand. */
export type ModelAudit = Message & { declaredToolCalls?: ToolCallRow[] };

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

function checkModelStarted(deps: DomainDeps, _principal: Principal, input: ModelStarted): void {
  nonBlank(input.operationId, 'operationId');
  if (input.model != null) boundedName(input.model, 'model');
  checkObservation(input);
  checkJsonFields(deps.limits, { input: input.input });
}

/** A first model start; a replay meets the unique key (run, role, operation id) and writes nothing. */
export const START_MODEL = `WITH ${LEASED_RUN}, ${bump('leased')},
started AS (
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, ${START_COLUMNS},
    change_cursor, changed_at)
  SELECT $4::uuid, leased.thread_id, leased.id, 'ASSISTANT'::"MessageRole", 'model_audit'::"MessageType", $5::text, $6::text,
    'RUNNING'::"AuditStatus", $7::jsonb, ${startValues(8)}, bumped.cursor, bumped.at
  FROM leased, bumped
  RETURNING *)
SELECT * FROM started`;

/** Creates the RUNNING model audit; an identical replay returns it, keeping the first observation. */
export const recordModelStarted = fenced({
  check: checkModelStarted,
  async write(deps: DomainDeps, _hint, principal: Principal, input: ModelStarted): Promise<Written<ModelAudit> | undefined> {
    const [audit] = await leasedRows<Message>(deps.db, principal, input.lease, START_MODEL, [
      newId(),
      input.operationId,
      input.model ?? null,
      jsonParam(input.input),
      ...startParams(input),
    ]);
    // A just-started model call has declared nothing yet.
    return audit && { value: { ...audit, declaredToolCalls: [] as ToolCall[] }, changes: [auditChanged(audit)] };
  },
  async explain(sql, principal, input) {
    const run = await checkLease(sql, principal, input.lease);
    const existing = await findAudit(sql, run.id, 'ASSISTANT', input.operationId);
    if (!existing) return { retry: undefined };
    const same =
      existing.sequence === input.sequence &&
      jsonEqual(existing.input, input.input) &&
      (existing.name ?? null) === (input.model ?? null);
    if (!same) throw conflict(`Model call ${input.operationId} was already started with a different sequence, model or input`);
    return { replay: existing };
  },
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

function checkModelFinished(deps: DomainDeps, _principal: Principal, input: ModelFinished): void {
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
}

/**
 * Closes the caller's RUNNING model audit and declares its tool calls ($13: their row ids, ids,
 * names and args, in order) as PENDING ToolCalls, in one statement.
 */
export const FINISH_MODEL = `WITH ${LEASED_RUN},
${openAudit('ASSISTANT')},
${bump('target')},
closed AS (
  UPDATE message m SET status = $5::"AuditStatus", output = coalesce($6::jsonb, m.output), error = coalesce($7::jsonb, m.error),
    usage = coalesce($8::jsonb, m.usage), ${endSet(9)}, change_cursor = bumped.cursor, changed_at = bumped.at
  FROM target, bumped WHERE m.id = target.id
  RETURNING m.*),
declared AS (
  INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input)
  SELECT (call.value ->> 'rowId')::uuid, closed.thread_id, closed.run_id, closed.id, (call.position - 1)::int, call.value ->> 'id',
    call.value ->> 'name', nullif(call.value -> 'args', 'null'::jsonb)
  FROM closed, jsonb_array_elements($13::jsonb) WITH ORDINALITY AS call(value, position))
SELECT * FROM closed`;

/** The ToolCalls `audit` declared, in declaration order. */
const declaredBy = (sql: Sql, auditId: string) =>
  sql.query<ToolCallRow & Pick<ToolCall, 'declaredInput'>>(
    `SELECT ${toolCallColumns('')}, declared_input FROM tool_call WHERE declared_by_id = $1 ORDER BY position`,
    [auditId],
  );

/** The PENDING ToolCalls FINISH_MODEL inserted for `calls`, as it inserted them (a ToolCall's other fields start empty). */
const pendingToolCalls = (closed: Message, calls: (DeclaredToolCall & { rowId: string })[]): ToolCall[] =>
  calls.map((call, position) => ({
    id: call.rowId,
    threadId: closed.threadId,
    runId: closed.runId!,
    declaredById: closed.id,
    position,
    toolCallId: call.id,
    name: call.name,
    declaredInput: (call.args ?? null) as ToolCall['declaredInput'],
    effectiveInput: null,
    status: 'PENDING',
    output: null,
    error: null,
    startedAt: null,
    finishedAt: null,
    durationMs: null,
  }));

/**
 * Closes the model audit and declares its tool calls as PENDING ToolCalls. A replay is a no-op:
 * it never touches a ToolCall, so a started call is never reset to PENDING.
 */
export const recordModelFinished = fenced({
  check: checkModelFinished,
  async write(deps: DomainDeps, _hint, principal: Principal, input: ModelFinished): Promise<Written<ModelAudit> | undefined> {
    const calls = (input.toolCalls ?? []).map((call) => ({ rowId: newId(), id: call.id, name: call.name, args: call.args }));
    const [closed] = await leasedRows<Message>(deps.db, principal, input.lease, FINISH_MODEL, [
      input.operationId,
      input.status,
      jsonParam(input.output),
      jsonParam(input.error),
      jsonParam(input.usage),
      ...endParams(input),
      JSON.stringify(calls),
    ]);
    // Returned with the audit, so that the response needs no re-read.
    return closed && { value: { ...closed, declaredToolCalls: pendingToolCalls(closed, calls) }, changes: [auditChanged(closed)] };
  },
  async explain(sql, principal, input) {
    const toolCalls = input.toolCalls ?? [];
    const run = await checkLease(sql, principal, input.lease);
    const audit = await requireAudit(sql, run, 'ASSISTANT', input.operationId);
    if (audit.status === 'RUNNING') return { retry: undefined };
    const declared = await declaredBy(sql, audit.id);
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
    return { replay: { ...audit, declaredToolCalls: declared } };
  },
});
