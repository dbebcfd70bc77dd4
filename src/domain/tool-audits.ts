import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import type { Message, ToolCall } from '../generated/prisma/client.js';
import { findAudit, requireAudit, sameFinishedSequence } from './audit-rows.js';
import { fenced, type DomainDeps } from './command.js';
import { findDeclaringToolCall } from './declaring-model.js';
import { DomainError, badInput, conflict, invalidTransition } from './errors.js';
import { auditChanged } from './events.js';
import { LEASED_RUN, START_COLUMNS, bump, bumpIfFresh, endParams, endSet, jsonParam, leasedRows, openAudit, startParams, startValues, type LeaseProof } from './fenced-statements.js';
import { newId, nonBlank } from './ids.js';
import { isJsonObject, jsonEqual, type JsonObject } from './json.js';
import { checkLease, lockRunAndThread } from './lease.js';
import { checkJsonFields, checkObservation, type Observation } from './observation.js';
import { MIRROR_ONTO_TOOL_CALL, outputContent } from './tool-call-projection.js';

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
 * A tool start: the declaration it binds to is the newest in the run itself, else the one named
 * by $12 (found through resume ancestry, declaring-model.ts; ended ancestors declare nothing
 * new). It starts only while PENDING (locked): an ended call never runs again, and a RUNNING one
 * is being executed by another run (a sibling resume of the same ancestor). The run's newest
 * declaration is read on a snapshot no change of the thread committed after (`fresh`).
 */
export const START_TOOL = `WITH ${LEASED_RUN},
declaration AS (
  SELECT tc.id, tc.status FROM tool_call tc
  WHERE tc.id = coalesce((
    SELECT newest.id FROM tool_call newest JOIN leased ON newest.run_id = leased.id JOIN message d ON d.id = newest.declared_by_id
    WHERE newest.tool_call_id = $4::text ORDER BY d.sequence DESC, d.created_at DESC LIMIT 1), $12::uuid)
  FOR UPDATE OF tc),
pending AS (SELECT declaration.id, leased.id AS run_id, leased.thread_id FROM declaration, leased WHERE declaration.status = 'PENDING'),
${bumpIfFresh('pending')},
started AS (
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id,
    ${START_COLUMNS}, change_cursor, changed_at)
  SELECT $5::uuid, p.thread_id, p.run_id, 'TOOL'::"MessageRole", 'tool_audit'::"MessageType", $4::text, $6::text,
    'RUNNING'::"AuditStatus", $7::jsonb, p.id, ${startValues(8)}, bumped.cursor, bumped.at
  FROM pending p, bumped
  RETURNING *),
mirrored AS (${MIRROR_ONTO_TOOL_CALL('started')})
SELECT * FROM started`;

/** The declaration a start binds to, PENDING; else the refusal. */
async function pendingDeclaration(sql: Sql, run: Awaited<ReturnType<typeof checkLease>>, toolCallId: string): Promise<ToolCall> {
  const declaration = await findDeclaringToolCall(sql, run, toolCallId);
  if (declaration.status === 'PENDING') return declaration;
  throw invalidTransition(
    declaration.status === 'RUNNING'
      ? `Tool call ${toolCallId} is already running in another run`
      : `Tool call ${toolCallId} has already ended (${declaration.status})`,
  );
}

/**
 * Opens the RUNNING tool audit bound to its declaring model call and moves the ToolCall to
 * RUNNING. An identical replay returns the existing row unchanged (first startedAt and
 * monotonic origin kept), whatever its status.
 */
export const recordToolStarted = fenced({
  check: checkToolStarted,
  serialize: (sql, _principal, input) => lockRunAndThread(sql, input.lease.runId),
  /** `ancestorDeclaration`: the ToolCall row the explanation bound through resume ancestry. */
  async write(deps: DomainDeps, ancestorDeclaration: string | undefined, principal: Principal, input: ToolStarted) {
    const [audit] = await leasedRows<Message>(deps.db, principal, input.lease, START_TOOL, [
      input.toolCallId,
      newId(),
      input.name,
      jsonParam(effectiveInputOf(input.effectiveInput)),
      ...startParams(input),
      ancestorDeclaration ?? null,
    ]);
    return audit && { value: audit, changes: [auditChanged(audit)] };
  },
  async explain(sql, principal, input) {
    const run = await checkLease(sql, principal, input.lease);
    const existing = await findAudit(sql, run.id, 'TOOL', input.toolCallId);
    if (existing) {
      const same =
        existing.name === input.name && existing.sequence === input.sequence && jsonEqual(existing.input, effectiveInputOf(input.effectiveInput));
      if (!same) throw conflict(`Tool call ${input.toolCallId} was already started with a different name, input or sequence`);
      return { replay: existing };
    }
    const declaration = await pendingDeclaration(sql, run, input.toolCallId);
    return { retry: declaration.runId === run.id ? undefined : declaration.id };
  },
});

/** Terminal replays compare the raw output with the late-filled `id` and `name` ignored. */
function comparableOutput(output: unknown): unknown {
  if (!isJsonObject(output)) return output;
  const { id: _id, name: _name, ...rest } = output;
  return rest;
}

function checkToolFinished(deps: DomainDeps, _principal: Principal, input: ToolFinished): void {
  if (!isJsonObject(input.output)) throw badInput('output must be the tool message envelope, a JSON object');
  checkJsonFields(deps.limits, { output: input.output });
  checkToolEvent(input);
}

/**
 * Closes the caller's RUNNING tool audit with the envelope $5: a `status: "error"` envelope (a
 * controlled failure) is FAILED at once, its content the error, unless a bare error recorded
 * earlier is kept (it came first and explains better).
 */
export const FINISH_TOOL = `WITH ${LEASED_RUN},
${openAudit('TOOL')},
${bump('target')},
closed AS (
  UPDATE message m SET status = CASE WHEN $5::jsonb ->> 'status' = 'error' THEN 'FAILED' ELSE 'COMPLETED' END::"AuditStatus",
    output = $5::jsonb,
    error = CASE WHEN $5::jsonb ->> 'status' = 'error' AND coalesce(m.error, 'null'::jsonb) = 'null'::jsonb THEN jsonb_build_object('message', ${outputContent('$5::jsonb')})
      ELSE m.error END,
    awaiting_run_terminal = false, ${endSet(6)}, change_cursor = bumped.cursor, changed_at = bumped.at
  FROM target, bumped WHERE m.id = target.id
  RETURNING m.*),
mirrored AS (${MIRROR_ONTO_TOOL_CALL('closed')})
SELECT * FROM closed`;

/** Runs a statement that ends the caller's tool audit ($4 the toolCallId, $5 the JSON it records, $6.. the end's observation). */
async function endToolAudit(deps: DomainDeps, principal: Principal, input: ToolEvent, statement: string, recorded: unknown) {
  const [audit] = await leasedRows<Message>(deps.db, principal, input.lease, statement, [input.toolCallId, jsonParam(recorded), ...endParams(input)]);
  return audit && { value: audit, changes: [auditChanged(audit)] };
}

/** Closes the audit: a `status: "error"` envelope (a controlled failure) is FAILED at once, its content the error. */
export const recordToolFinished = fenced({
  check: checkToolFinished,
  write: (deps: DomainDeps, _hint, principal: Principal, input: ToolFinished) => endToolAudit(deps, principal, input, FINISH_TOOL, input.output),
  async explain(sql, principal, input) {
    const run = await checkLease(sql, principal, input.lease);
    const audit = await requireAudit(sql, run, 'TOOL', input.toolCallId);
    if (audit.status === 'RUNNING') return { retry: undefined };
    const same =
      audit.output !== null &&
      sameFinishedSequence(audit, input) &&
      jsonEqual(comparableOutput(audit.output), comparableOutput(input.output));
    if (!same) throw conflict(`Tool call ${input.toolCallId} already ended (${audit.status}) with a different result`);
    return { replay: audit };
  },
});

function checkToolError(deps: DomainDeps, _principal: Principal, input: ToolErrored): void {
  checkJsonFields(deps.limits, { error: input.error });
  checkToolEvent(input);
}

/** Saves a bare error on the caller's RUNNING tool audit that holds none yet; the audit stays RUNNING. */
export const RECORD_TOOL_ERROR = `WITH ${LEASED_RUN},
${openAudit('TOOL', 'AND NOT m.awaiting_run_terminal')},
${bump('target')},
closed AS (
  UPDATE message m SET error = coalesce($5::jsonb, m.error), awaiting_run_terminal = true, ${endSet(6)},
    change_cursor = bumped.cursor, changed_at = bumped.at
  FROM target, bumped WHERE m.id = target.id
  RETURNING m.*),
mirrored AS (${MIRROR_ONTO_TOOL_CALL('closed')})
SELECT * FROM closed`;

/**
 * A bare error may be an interrupt: the observation is saved and the audit stays RUNNING,
 * awaiting the run's verdict. The same error again is a no-op.
 */
export const recordToolError = fenced({
  check: checkToolError,
  write: (deps: DomainDeps, _hint, principal: Principal, input: ToolErrored) => endToolAudit(deps, principal, input, RECORD_TOOL_ERROR, input.error),
  async explain(sql, principal, input) {
    const run = await checkLease(sql, principal, input.lease);
    const audit = await requireAudit(sql, run, 'TOOL', input.toolCallId);
    if (audit.status !== 'RUNNING') throw conflict(`Tool call ${input.toolCallId} has already ended (${audit.status})`);
    if (!audit.awaitingRunTerminal) return { retry: undefined };
    if (!jsonEqual(audit.error, input.error) || !sameFinishedSequence(audit, input)) {
      throw conflict(`Tool call ${input.toolCallId} already recorded a different error`);
    }
    return { replay: audit };
  },
});
