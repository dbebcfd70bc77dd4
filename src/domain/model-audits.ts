import type { Principal } from './principal.js';
import type { Message } from '../generated/prisma/client.js';
import type { DomainDeps } from './command.js';
import { badInput } from './errors.js';
import { boundedName, newId, nonBlank } from './ids.js';
import type { ToolCallRow } from './audit-reads.js';
import { applyEvent, leased, type LeaseProof, type SqlEvent } from './lifecycle-events.js';
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

function checkModelStarted(deps: DomainDeps, input: ModelStarted): void {
  nonBlank(input.operationId, 'operationId');
  if (input.model != null) boundedName(input.model, 'model');
  checkObservation(input);
  checkJsonFields(deps.limits, { input: input.input });
}

/** The model start as an event (audit_model_started); its input checked. */
export function modelStartedEvent(deps: DomainDeps, input: ModelStarted): SqlEvent {
  checkModelStarted(deps, input);
  const { lease, ...fields } = input;
  return { ...leased('modelStarted', lease), ...fields, rowId: newId() };
}

/** Creates the RUNNING model audit; an identical replay returns it, keeping the first observation. */
export async function recordModelStarted(deps: DomainDeps, principal: Principal, input: ModelStarted): Promise<ModelAudit> {
  return (await applyEvent(deps, principal, modelStartedEvent(deps, input))).audit!;
}

/** Far more than any model declares at once, and few enough to insert in one statement; query costs count on it. */
export const MAX_DECLARED_TOOL_CALLS = 1000;

function checkDeclaredToolCalls(toolCalls: DeclaredToolCall[]): void {
  if (toolCalls.length > MAX_DECLARED_TOOL_CALLS) {
    throw badInput(`A model response declares ${toolCalls.length} tool calls; the limit is ${MAX_DECLARED_TOOL_CALLS}`);
  }
  const seen = new Set<string>();
  for (const [index, call] of toolCalls.entries()) {
    nonBlank(call.id, `toolCalls[${index}].id`);
    nonBlank(call.name, `toolCalls[${index}].name`);
    if (seen.has(call.id)) throw badInput(`Tool call ${call.id} is declared twice in one model response`);
    seen.add(call.id);
  }
}

function checkModelFinished(deps: DomainDeps, input: ModelFinished): void {
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

/** The model finish as an event (audit_model_finished); its input checked, each declared call given its row id. */
export function modelFinishedEvent(deps: DomainDeps, input: ModelFinished): SqlEvent {
  checkModelFinished(deps, input);
  const { lease, toolCalls, ...fields } = input;
  const calls = (toolCalls ?? []).map((call) => ({ rowId: newId(), id: call.id, name: call.name, args: call.args }));
  return { ...leased('modelFinished', lease), ...fields, toolCalls: calls };
}

/**
 * Closes the model audit and declares its tool calls as PENDING ToolCalls, returned with it. A
 * replay is a no-op: it never touches a ToolCall, so a started call is never reset to PENDING.
 */
export async function recordModelFinished(deps: DomainDeps, principal: Principal, input: ModelFinished): Promise<ModelAudit> {
  return (await applyEvent(deps, principal, modelFinishedEvent(deps, input))).audit!;
}
