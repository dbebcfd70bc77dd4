import type { GraphQLResolveInfo } from 'graphql';
import { requirePrincipal } from '../../domain/access.js';
import { finishRun } from '../../domain/convergence.js';
import { recordEvents, type EventOutcome } from '../../domain/batch.js';
import { claimRun, renewLease } from '../../domain/lease.js';
import { recordModelFinished, recordModelStarted } from '../../domain/model-audits.js';
import { recordToolError, recordToolFinished, recordToolStarted } from '../../domain/tool-audits.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { eventError, type EventError } from '../errors.js';
import { lifecycleEvents } from '../../metrics.js';
import { scopeToLeasedRun } from './audit-access.js';
import { AuditRef, ModelAuditRef, ToolAuditRef } from './audit.js';
import { AuditStatusEnum, RunStatusEnum, RunTerminalStatusEnum } from './enums.js';
import { RunLeaseRef, RunRef } from './run.js';

// The agent runtime's write path: every mutation here is for workers and fenced by the lease.
export const LeaseInput = builder.inputType('LeaseInput', {
  description: 'Proof that the caller holds the run\'s current lease. The owner is the authenticated worker.',
  fields: (t) => ({
    runId: t.id({ required: true }),
    epoch: t.int({ required: true }),
  }),
});

export const ClockReadingInput = builder.inputType('ClockReadingInput', {
  description: 'One reading of a monotonic clock. Durations are computed only between readings of the same clockId.',
  fields: (t) => ({
    clockId: t.string({ required: true }),
    nanos: t.field({ type: 'BigInt', required: true }),
  }),
});

const ClaimRunInput = builder.inputType('ClaimRunInput', {
  fields: (t) => ({
    runId: t.id({ required: true }),
    leaseSeconds: t.int({ defaultValue: 30, description: 'Lease length; the server clamps it to its configured bounds.' }),
    claimId: t.string({
      description:
        'The worker\'s idempotency key for this claim (at most 256 characters). A retry by the same\nworker with the same claimId, while the lease it got is still current, returns that same\nlease instead of INVALID_TRANSITION.',
    }),
  }),
});

const FinishRunInput = builder.inputType('FinishRunInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    status: t.field({ type: RunTerminalStatusEnum, required: true }),
    error: t.field({ type: 'JSON' }),
    stateMessages: t.field({
      type: ['JSON'],
      defaultValue: [],
      description: "The final state's messages (the full checkpoint), used only to complete bare tool errors.",
    }),
  }),
});

const DeclaredToolCallInput = builder.inputType('DeclaredToolCallInput', {
  fields: (t) => ({
    id: t.string({ required: true }),
    name: t.string({ required: true }),
    args: t.field({ type: 'JSON' }),
  }),
});


const ModelStartedInput = builder.inputType('ModelStartedInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    operationId: t.string({ required: true }),
    sequence: t.field({ type: 'BigInt', required: true }),
    model: t.string(),
    input: t.field({ type: 'JSON' }),
    observedAt: t.field({ type: 'DateTime', required: true }),
    clock: t.field({ type: ClockReadingInput }),
  }),
});

const ModelFinishedInput = builder.inputType('ModelFinishedInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    operationId: t.string({ required: true }),
    status: t.field({ type: AuditStatusEnum, required: true, description: 'COMPLETED or FAILED.' }),
    output: t.field({ type: 'JSON' }),
    error: t.field({ type: 'JSON' }),
    usage: t.field({ type: 'JSON' }),
    toolCalls: t.field({
      type: [DeclaredToolCallInput],
      defaultValue: [],
      description: 'The tool calls the model declared; each becomes a PENDING ToolCall.',
    }),
    sequence: t.field({ type: 'BigInt' }),
    observedAt: t.field({ type: 'DateTime', required: true }),
    clock: t.field({ type: ClockReadingInput }),
  }),
});

const namespaceArg = { description: 'The runtime namespace the event came from; only the root namespace (empty) is accepted.' };

const ToolStartedInput = builder.inputType('ToolStartedInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    toolCallId: t.string({ required: true }),
    name: t.string({ required: true }),
    effectiveInput: t.field({ type: 'JSON' }),
    sequence: t.field({ type: 'BigInt', required: true }),
    observedAt: t.field({ type: 'DateTime', required: true }),
    clock: t.field({ type: ClockReadingInput }),
    namespace: t.stringList({ defaultValue: [], ...namespaceArg }),
  }),
});

const ToolFinishedInput = builder.inputType('ToolFinishedInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    toolCallId: t.string({ required: true }),
    output: t.field({
      type: 'JSON',
      required: true,
      description: 'The raw tool message envelope, e.g. {content, status, id, name, artifact}.',
    }),
    sequence: t.field({ type: 'BigInt' }),
    observedAt: t.field({ type: 'DateTime', required: true }),
    clock: t.field({ type: ClockReadingInput }),
    namespace: t.stringList({ defaultValue: [] }),
  }),
});

const ToolErrorInput = builder.inputType('ToolErrorInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    toolCallId: t.string({ required: true }),
    error: t.field({ type: 'JSON', required: true }),
    sequence: t.field({ type: 'BigInt' }),
    observedAt: t.field({ type: 'DateTime', required: true }),
    clock: t.field({ type: ClockReadingInput }),
    namespace: t.stringList({ defaultValue: [] }),
  }),
});

const RenewLeaseInput = builder.inputType('RenewLeaseInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    leaseSeconds: t.int({ defaultValue: 30 }),
  }),
});

const LifecycleEventInput = builder.inputType('LifecycleEventInput', {
  description:
    'One lifecycle event of a batch (`recordEvents`): exactly one field is set. A claimRun is claimed\nexactly as the claimRun mutation claims; the events that its lease fences need the epoch it\nreturns, so a client sends them in a later batch (docs/runtime-authors.md, "Batches").',
  isOneOf: true,
  fields: (t) => ({
    claimRun: t.field({ type: ClaimRunInput }),
    renewLease: t.field({ type: RenewLeaseInput }),
    modelStarted: t.field({ type: ModelStartedInput }),
    modelFinished: t.field({ type: ModelFinishedInput }),
    toolStarted: t.field({ type: ToolStartedInput }),
    toolFinished: t.field({ type: ToolFinishedInput }),
    toolError: t.field({ type: ToolErrorInput }),
    finishRun: t.field({ type: FinishRunInput }),
  }),
});

const LifecycleEventErrorRef = builder.objectRef<EventError>('LifecycleEventError').implement({
  fields: (t) => ({
    code: t.exposeString('code', {
      description: 'The `extensions.code` its own mutation would have answered (LEASE_LOST, CONFLICT, INVALID_TRANSITION, ...).',
    }),
    message: t.exposeString('message'),
    runStatus: t.field({
      type: RunStatusEnum,
      nullable: true,
      description:
        "A LEASE_LOST refusal because the run has ended: how it ended (its own mutation's `extensions.runStatus`). Null for every other refusal.",
      resolve: (error) => error.runStatus ?? null,
    }),
  }),
});

interface EventResult {
  index: number;
  audit?: EventOutcome['audit'];
  run?: EventOutcome['run'];
  lease?: EventOutcome['lease'];
  error?: EventError;
}

const LifecycleEventResultRef = builder.objectRef<EventResult>('LifecycleEventResult').implement({
  description: 'What became of one event of a batch.',
  fields: (t) => ({
    index: t.exposeInt('index', { description: "The event's position in the batch, from 0." }),
    audit: t.field({
      type: AuditRef,
      nullable: true,
      description: 'The model or tool audit a model or tool event wrote or replayed.',
      resolve: (result) => result.audit ?? null,
    }),
    run: t.field({
      type: RunRef,
      nullable: true,
      description: 'The run a finishRun ended or replayed.',
      resolve: (result) => result.run ?? null,
    }),
    lease: t.field({
      type: RunLeaseRef,
      nullable: true,
      description: 'The lease a claimRun took (or its retry got back) or a renewLease extended.',
      resolve: (result) => result.lease ?? null,
    }),
    error: t.field({
      type: LifecycleEventErrorRef,
      nullable: true,
      description: 'Why the event was refused; null when it was applied or replayed.',
      resolve: (result) => result.error ?? null,
    }),
  }),
});

const worker = { role: 'worker' } as const;

/** A lifecycle mutation's result, read in the scope of the run whose lease it used (audit-access.ts). */
async function leasedResult<T>(context: GraphQLContext, info: GraphQLResolveInfo, runId: string, result: Promise<T>): Promise<T> {
  const value = await result;
  scopeToLeasedRun(context, info, runId);
  return value;
}

builder.mutationFields((t) => ({
  claimRun: t.field({
    type: RunLeaseRef,
    description: 'Workers only. QUEUED -> RUNNING with the caller as owner and a new epoch.',
    authScopes: worker,
    args: { input: t.arg({ type: ClaimRunInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.runId, claimRun(context.deps, requirePrincipal(context.principal), input)),
  }),
  renewLease: t.field({
    type: RunLeaseRef,
    authScopes: worker,
    args: {
      lease: t.arg({ type: LeaseInput, required: true }),
      leaseSeconds: t.arg.int({ defaultValue: 30 }),
    },
    resolve: (_root, { lease, leaseSeconds }, context, info) =>
      leasedResult(context, info, lease.runId, renewLease(context.deps, requirePrincipal(context.principal), lease, leaseSeconds)),
  }),
  finishRun: t.field({
    type: RunRef,
    authScopes: worker,
    args: { input: t.arg({ type: FinishRunInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, finishRun(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordModelStarted: t.field({
    type: ModelAuditRef,
    authScopes: worker,
    args: { input: t.arg({ type: ModelStartedInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordModelStarted(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordModelFinished: t.field({
    type: ModelAuditRef,
    authScopes: worker,
    args: { input: t.arg({ type: ModelFinishedInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordModelFinished(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolStarted: t.field({
    type: ToolAuditRef,
    authScopes: worker,
    args: { input: t.arg({ type: ToolStartedInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolStarted(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolFinished: t.field({
    type: ToolAuditRef,
    authScopes: worker,
    args: { input: t.arg({ type: ToolFinishedInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolFinished(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolError: t.field({
    type: ToolAuditRef,
    authScopes: worker,
    args: { input: t.arg({ type: ToolErrorInput, required: true }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolError(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordEvents: t.field({
    type: [LifecycleEventResultRef],
    description:
      'Workers only. Applies 1 to 500 lifecycle events in order, each fenced and checked as its own\nmutation would be; a refused event does not stop the ones after it (docs/semantics.md,\n"Batches").',
    authScopes: worker,
    args: { events: t.arg({ type: [LifecycleEventInput], required: true }) },
    resolve: async (_root, { events }, context, info) => {
      const outcomes = await recordEvents(context.deps, requirePrincipal(context.principal), events);
      // A failure that left several events unapplied is mapped (and logged) once.
      const mapped = new Map<unknown, EventError>();
      const errorOf = (error: unknown) => mapped.get(error) ?? mapped.set(error, eventError(error, () => context.requestId)).get(error)!;
      return outcomes.map(({ runId, error, ...result }, index): EventResult => {
        // A batch answers without an error when some of its events are refused: they are counted here.
        const event = Object.entries(events[index]!).find(([, input]) => input != null)?.[0] ?? 'unknown';
        lifecycleEvents.inc({ event, outcome: error === undefined ? 'OK' : errorOf(error).code });
        if (error !== undefined) return { index, error: errorOf(error) };
        if (runId) scopeToLeasedRun(context, info, runId, index);
        return { index, ...result };
      });
    },
  }),
}));
