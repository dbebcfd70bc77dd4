import type { Principal } from './principal.js';
import type { Message } from '../generated/prisma/client.js';
import type { DomainDeps } from './command.js';
import { DomainError, badInput } from './errors.js';
import { newId, nonBlank } from './ids.js';
import { isJsonObject, type JsonObject } from './json.js';
import { applyEvent, leased, type EventKind, type LeaseProof, type SqlEvent } from './lifecycle-events.js';
import { checkJsonFields, checkObservation, type Observation } from './observation.js';

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
function checkToolStarted(deps: DomainDeps, input: ToolStarted): void {
  nonBlank(input.name, 'name');
  checkJsonFields(deps.limits, { effectiveInput: effectiveInputOf(input.effectiveInput) });
  checkToolEvent(input);
}

function checkToolFinished(deps: DomainDeps, input: ToolFinished): void {
  if (!isJsonObject(input.output)) throw badInput('output must be the tool message envelope, a JSON object');
  checkJsonFields(deps.limits, { output: input.output });
  checkToolEvent(input);
}

function checkToolError(deps: DomainDeps, input: ToolErrored): void {
  checkJsonFields(deps.limits, { error: input.error });
  checkToolEvent(input);
}

/** A tool event as its function takes it (the namespace checked, so not sent). */
function toolEvent<Event extends ToolEvent>(kind: EventKind, { lease, namespace: _namespace, ...fields }: Event): SqlEvent {
  return { ...leased(kind, lease), ...fields };
}

/** The tool start as an event (audit_tool_started); its input checked. */
export function toolStartedEvent(deps: DomainDeps, input: ToolStarted): SqlEvent {
  checkToolStarted(deps, input);
  return { ...toolEvent('toolStarted', input), effectiveInput: effectiveInputOf(input.effectiveInput), rowId: newId() };
}

/** The tool finish as an event (audit_tool_finished); its input checked. */
export function toolFinishedEvent(deps: DomainDeps, input: ToolFinished): SqlEvent {
  checkToolFinished(deps, input);
  return toolEvent('toolFinished', input);
}

/** The bare tool error as an event (audit_tool_error); its input checked. */
export function toolErrorEvent(deps: DomainDeps, input: ToolErrored): SqlEvent {
  checkToolError(deps, input);
  return toolEvent('toolError', input);
}

/**
 * Opens the RUNNING tool audit bound to the model call that declared it (in the run or its resume
 * ancestry) and moves the ToolCall to RUNNING. An identical replay returns the existing row
 * unchanged (first startedAt and monotonic origin kept), whatever its status.
 */
export async function recordToolStarted(deps: DomainDeps, principal: Principal, input: ToolStarted): Promise<Message> {
  return (await applyEvent(deps, principal, toolStartedEvent(deps, input))).audit!;
}

/** Closes the audit: a `status: "error"` envelope (a controlled failure) is FAILED at once, its content the error. */
export async function recordToolFinished(deps: DomainDeps, principal: Principal, input: ToolFinished): Promise<Message> {
  return (await applyEvent(deps, principal, toolFinishedEvent(deps, input))).audit!;
}

/**
 * A bare error may be an interrupt: the observation is saved and the audit stays RUNNING,
 * awaiting the run's verdict. The same error again is a no-op.
 */
export async function recordToolError(deps: DomainDeps, principal: Principal, input: ToolErrored): Promise<Message> {
  return (await applyEvent(deps, principal, toolErrorEvent(deps, input))).audit!;
}
