import type { Principal } from './principal.js';
import type { Run } from '../generated/prisma/client.js';
import type { DomainDeps } from './command.js';
import { finishRunEvent, type FinishRunInput } from './convergence.js';
import { badInput, DomainError } from './errors.js';
import { claimEvent, renewalEvent, toLease, type ClaimInput, type RunLease } from './lease.js';
import { applyEvents, Unapplied, type LeaseProof, type SqlEvent } from './lifecycle-events.js';
import { modelFinishedEvent, modelStartedEvent, type ModelAudit, type ModelFinished, type ModelStarted } from './model-audits.js';
import { toolErrorEvent, toolFinishedEvent, toolStartedEvent, type ToolErrored, type ToolFinished, type ToolStarted } from './tool-audits.js';

/** The most events one batch may carry (SEMANTICS.md, "Batches"); more is refused, never cut. */
export const MAX_BATCH_EVENTS = 500;

/** One lifecycle event of a batch: exactly one kind is set (the input is @oneOf). */
export interface LifecycleEvent {
  claimRun?: ClaimInput | null;
  renewLease?: { lease: LeaseProof; leaseSeconds?: number | null } | null;
  modelStarted?: ModelStarted | null;
  modelFinished?: ModelFinished | null;
  toolStarted?: ToolStarted | null;
  toolFinished?: ToolFinished | null;
  toolError?: ToolErrored | null;
  finishRun?: FinishRunInput | null;
}

/** What became of one event: what it wrote or replayed, or (`error`) why it was refused or not applied. */
export interface EventOutcome {
  runId?: string;
  audit?: ModelAudit;
  run?: Run;
  lease?: RunLease;
  error?: unknown;
}

/** The run an event is for: a claim names it, every other kind presents its lease. */
export function runIdOf(event: LifecycleEvent): string | undefined {
  if (event.claimRun) return event.claimRun.runId;
  const proof = Object.values(event).find((value) => value != null) as { lease?: LeaseProof } | undefined;
  return proof?.lease?.runId;
}

/** One event as its function takes it, checked as its own mutation checks it. */
function sqlEvent(deps: DomainDeps, event: LifecycleEvent): SqlEvent {
  if (event.claimRun) return claimEvent(deps.limits, event.claimRun);
  if (event.renewLease) return renewalEvent(deps.limits, event.renewLease.lease, event.renewLease.leaseSeconds);
  if (event.modelStarted) return modelStartedEvent(deps, event.modelStarted);
  if (event.modelFinished) return modelFinishedEvent(deps, event.modelFinished);
  if (event.toolStarted) return toolStartedEvent(deps, event.toolStarted);
  if (event.toolFinished) return toolFinishedEvent(deps, event.toolFinished);
  if (event.toolError) return toolErrorEvent(deps, event.toolError);
  if (event.finishRun) return finishRunEvent(deps, event.finishRun);
  throw badInput('A lifecycle event sets exactly one kind');
}

/**
 * Applies a batch's events in order, each exactly as its own mutation, in one call of the
 * database (lifecycle-events.ts): a later event sees what an earlier one wrote, live changes come
 * in commit order, and a refused one changes nothing and stops nothing. An event its input checks
 * refuse is not sent. Each error is returned in its event's place, for the caller to name as its
 * own mutation would; so is the failure of a call after earlier calls committed (applyEvents), in
 * the place of each event it left unapplied.
 */
export async function recordEvents(deps: DomainDeps, principal: Principal, events: LifecycleEvent[]): Promise<EventOutcome[]> {
  if (events.length < 1 || events.length > MAX_BATCH_EVENTS) {
    throw badInput(`A batch carries 1 to ${MAX_BATCH_EVENTS} events; this one has ${events.length}`);
  }
  // The input is @oneOf: one kind, not null (graphql-js refuses `{renewLease: null, ...}` too);
  // checked here, since the compiled executor does not enforce it.
  const malformed = events.findIndex((event) => Object.keys(event).length !== 1 || Object.values(event)[0] == null);
  if (malformed >= 0) throw badInput(`Event ${malformed} of the batch must set exactly one kind of event`);
  const outcomes: EventOutcome[] = [];
  const sent: { index: number; event: SqlEvent }[] = [];
  events.forEach((event, index) => {
    const runId = runIdOf(event);
    try {
      sent.push({ index, event: sqlEvent(deps, event) });
      outcomes.push({ runId });
    } catch (error) {
      outcomes.push({ runId, error });
    }
  });
  if (sent.length === 0) return outcomes;
  const applied = await applyEvents(deps, principal, sent.map(({ event }) => event));
  sent.forEach(({ index, event }, position) => {
    const result = applied[position]!;
    const outcome = outcomes[index]!;
    if (result instanceof DomainError) outcome.error = result;
    else if (result instanceof Unapplied) outcome.error = result.error;
    else if (event.kind === 'claimRun' || event.kind === 'renewLease') outcome.lease = toLease(result.run!);
    else if (event.kind === 'finishRun') outcome.run = result.run;
    else outcome.audit = result.audit;
  });
  return outcomes;
}
