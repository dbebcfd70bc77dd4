import type { Principal } from '../auth/principal.js';
import { insertRow, insertRows, updateRow } from '../db/sql.js';
import type { Message, ToolCall } from '../generated/prisma/client.js';
import { endColumns, findAudit, requireAudit, sameFinishedSequence, startColumns } from './audit-rows.js';
import { command, type DomainDeps } from './command.js';
import { badInput, conflict } from './errors.js';
import { auditChanged } from './events.js';
import { LEASED_RUN, START_COLUMNS, bump, endParams, endSet, fastRows, jsonParam, openAudit, startParams, startValues } from './fast-write.js';
import { boundedName, newId, nonBlank } from './ids.js';
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

function checkModelStarted(deps: DomainDeps, _principal: Principal, input: ModelStarted): void {
  nonBlank(input.operationId, 'operationId');
  if (input.model != null) boundedName(input.model, 'model');
  checkObservation(input);
  checkJsonFields(deps.limits, { input: input.input });
}

/** The fast path of a first model start (fast-write.ts): a replay meets the unique key and falls back. */
export const START_MODEL = `WITH ${LEASED_RUN}, ${bump('leased')},
started AS (
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, ${START_COLUMNS},
    change_cursor, changed_at)
  SELECT $4::uuid, leased.thread_id, leased.id, 'ASSISTANT'::"MessageRole", 'model_audit'::"MessageType", $5::text, $6::text,
    'RUNNING'::"AuditStatus", $7::jsonb, ${startValues(8)}, bumped.cursor, bumped.at
  FROM leased, bumped
  RETURNING *)
SELECT * FROM started`;

async function startModelFast(deps: DomainDeps, principal: Principal, input: ModelStarted) {
  const [audit] = await fastRows<Message>(deps.statement, principal, input.lease, START_MODEL, [
    newId(),
    input.operationId,
    input.model ?? null,
    jsonParam(input.input),
    ...startParams(input),
  ]);
  return audit && { value: { ...audit, declaredToolCalls: [] as ToolCall[] }, changes: [auditChanged(audit)] };
}

/** Creates the RUNNING model audit; an identical replay returns it, keeping the first observation. */
export const recordModelStarted = command(async ({ sql, emit }, principal: Principal, input: ModelStarted) => {
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
    id: newId(),
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
  return { ...audit, declaredToolCalls: [] as ToolCall[] };
}, startModelFast, checkModelStarted);

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

const TOOL_CALL_COLUMNS = ['id', 'thread_id', 'run_id', 'declared_by_id', 'position', 'tool_call_id', 'name', 'declared_input',
  'effective_input', 'status', 'output', 'error', 'started_at', 'finished_at', 'duration_ms'];
/** Declared ToolCall columns ride on the audit's row under this prefix. */
const DECLARED = 'declared.';

/**
 * The fast path of closing a RUNNING model audit (fast-write.ts): the audit row locked, closed,
 * its tool calls declared; one row per declared call (one with none), the audit's columns on each.
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
  FROM closed, jsonb_array_elements($13::jsonb) WITH ORDINALITY AS call(value, position)
  RETURNING *)
SELECT closed.*, ${TOOL_CALL_COLUMNS.map((column) => `d.${column} AS "${DECLARED}${column}"`).join(', ')}
FROM closed LEFT JOIN declared d ON true ORDER BY d.position`;

async function finishModelFast(deps: DomainDeps, principal: Principal, input: ModelFinished) {
  const toolCalls = input.toolCalls ?? [];
  const rows = await fastRows<Record<string, unknown>>(deps.statement, principal, input.lease, FINISH_MODEL, [
    input.operationId,
    input.status,
    jsonParam(input.output),
    jsonParam(input.error),
    jsonParam(input.usage),
    ...endParams(input),
    JSON.stringify(toolCalls.map((call) => ({ rowId: newId(), id: call.id, name: call.name, args: call.args }))),
  ]);
  if (rows.length === 0) return undefined;
  const declared = rows[0]![`${DECLARED}id`] === null ? [] : rows.map((row) => fieldsUnder(row, DECLARED) as ToolCall);
  const closed = Object.fromEntries(Object.entries(rows[0]!).filter(([field]) => !field.startsWith(DECLARED))) as Message;
  return { value: { ...closed, declaredToolCalls: declared }, changes: [auditChanged(closed)] };
}

const fieldsUnder = (row: Record<string, unknown>, prefix: string) =>
  Object.fromEntries(Object.entries(row).flatMap(([field, value]) => (field.startsWith(prefix) ? [[field.slice(prefix.length), value]] : [])));

/**
 * Closes the model audit and declares its tool calls as PENDING ToolCalls. A replay is a no-op:
 * it never touches a ToolCall, so a started call is never reset to PENDING.
 */
export const recordModelFinished = command(async ({ sql, emit }, principal: Principal, input: ModelFinished) => {
  const toolCalls = input.toolCalls ?? [];
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
      id: newId(),
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
}, finishModelFast, checkModelFinished);
