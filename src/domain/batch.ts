import type { Principal } from './principal.js';
import type { Run } from '../generated/prisma/client.js';
import type { DomainDeps } from './command.js';
import { finishRun, type FinishRunInput } from './convergence.js';
import { badInput } from './errors.js';
import type { LeaseProof } from './fenced-statements.js';
import { renewLease, type RunLease } from './lease.js';
import { recordModelFinished, recordModelStarted, type ModelAudit, type ModelFinished, type ModelStarted } from './model-audits.js';
import { recordToolError, recordToolFinished, recordToolStarted, type ToolErrored, type ToolFinished, type ToolStarted } from './tool-audits.js';

/** The most events one batch may carry (SEMANTICS.md, "Batches"); more is refused, never cut. */
export const MAX_BATCH_EVENTS = 500;

/** One lifecycle event of a batch: exactly one kind is set (the input is @oneOf). */
export interface LifecycleEvent {
  renewLease?: { lease: LeaseProof; leaseSeconds?: number | null } | null;
  modelStarted?: ModelStarted | null;
  modelFinished?: ModelFinished | null;
  toolStarted?: ToolStarted | null;
  toolFinished?: ToolFinished | null;
  toolError?: ToolErrored | null;
  finishRun?: FinishRunInput | null;
}

/** What became of one event: what it wrote or replayed, or (`error`) why it was refused. */
export interface EventOutcome {
  runId?: string;
  audit?: ModelAudit;
  run?: Run;
  lease?: RunLease;
  error?: unknown;
}

/** The run an event is fenced by: every kind presents its lease. */
export function runIdOf(event: LifecycleEvent): string | undefined {
  const proof = Object.values(event).find((value) => value != null) as { lease?: LeaseProof } | undefined;
  return proof?.lease?.runId;
}

/** One event, by the very command its own mutation calls. */
async function apply(deps: DomainDeps, principal: Principal, event: LifecycleEvent): Promise<Omit<EventOutcome, 'runId' | 'error'>> {
  if (event.renewLease) return { lease: await renewLease(deps, principal, event.renewLease.lease, event.renewLease.leaseSeconds) };
  if (event.modelStarted) return { audit: await recordModelStarted(deps, principal, event.modelStarted) };
  if (event.modelFinished) return { audit: await recordModelFinished(deps, principal, event.modelFinished) };
  if (event.toolStarted) return { audit: await recordToolStarted(deps, principal, event.toolStarted) };
  if (event.toolFinished) return { audit: await recordToolFinished(deps, principal, event.toolFinished) };
  if (event.toolError) return { audit: await recordToolError(deps, principal, event.toolError) };
  if (event.finishRun) return { run: await finishRun(deps, principal, event.finishRun) };
  throw badInput('A lifecycle event sets exactly one kind');
}

/**
 * Applies a batch's events in order, each exactly as its own mutation: it commits and publishes
 * its changes before the next one starts (so a later event sees what an earlier one wrote, and
 * live changes come in commit order), and a refused one changes nothing and stops nothing. Its
 * error is returned in its place, for the caller to name as its own mutation would.
 */
export async function recordEvents(deps: DomainDeps, principal: Principal, events: LifecycleEvent[]): Promise<EventOutcome[]> {
  if (events.length < 1 || events.length > MAX_BATCH_EVENTS) {
    throw badInput(`A batch carries 1 to ${MAX_BATCH_EVENTS} events; this one has ${events.length}`);
  }
  // The input is @oneOf; checked here too, since the compiled executor does not enforce it.
  const malformed = events.findIndex((event) => Object.values(event).filter((value) => value != null).length !== 1);
  if (malformed >= 0) throw badInput(`Event ${malformed} of the batch must set exactly one kind of event`);
  const outcomes: EventOutcome[] = [];
  for (const event of events) {
    const runId = runIdOf(event);
    try {
      outcomes.push({ runId, ...(await apply(deps, principal, event)) });
    } catch (error) {
      outcomes.push({ runId, error });
    }
  }
  return outcomes;
}
