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
    runId: t.id({ required: true, description: 'The run whose lease the caller holds.' }),
    epoch: t.int({
      required: true,
      description: "The epoch the claim returned (RunLease.epoch), the run's fencing token: a write with another epoch is LEASE_LOST.",
    }),
  }),
});

export const ClockReadingInput = builder.inputType('ClockReadingInput', {
  description: 'One reading of a monotonic clock. Durations are computed only between readings of the same clockId.',
  fields: (t) => ({
    clockId: t.string({
      required: true,
      description: 'Which monotonic clock was read (1 to 256 characters): one per process, e.g. host, pid and a random suffix.',
    }),
    nanos: t.field({ type: 'BigInt', required: true, description: 'The reading in nanoseconds, non-negative (e.g. process.hrtime.bigint()).' }),
  }),
});

const leaseArg = { description: "The caller's current lease of the run (RunLease.runId and epoch)." };
const startSequence = { description: "The runtime's root stream sequence number of the start (non-negative; its order is not checked): it orders the timeline." };
const endSequence = { description: "The runtime's root stream sequence number of this event (non-negative): the audit's finishedSequence." };
const startObservedAt = { description: "When the runtime saw the start, on its wall clock: the audit's startedAt (a replay keeps the first)." };
const endObservedAt = { description: "When the runtime saw this event, on its wall clock: the audit's finishedAt." };
const startClock = { description: 'A monotonic clock reading at the start: durationMs is measured from it to an end read on the same clockId.' };
const endClock = { description: "A monotonic clock reading at this event: durationMs when the start's reading has the same clockId, else null." };

const ClaimRunInput = builder.inputType('ClaimRunInput', {
  description: 'A claim of a QUEUED run: the lease length and an optional idempotency key.',
  fields: (t) => ({
    runId: t.id({ required: true, description: 'The QUEUED run to claim.' }),
    leaseSeconds: t.int({ defaultValue: 30, description: 'Lease length; the server clamps it to its configured bounds.' }),
    claimId: t.string({
      description:
        'The worker\'s idempotency key for this claim (at most 256 characters). A retry by the same\nworker with the same claimId, while the lease it got is still current, returns that same\nlease instead of INVALID_TRANSITION.',
    }),
  }),
});

const FinishRunInput = builder.inputType('FinishRunInput', {
  description: "A run's end, from the worker holding its lease.",
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    status: t.field({
      type: RunTerminalStatusEnum,
      required: true,
      description: 'How the run ended; what is still open in it closes accordingly (docs/semantics.md, "Run terminal convergence").',
    }),
    error: t.field({ type: 'JSON', description: 'Why the run failed or was cancelled (any JSON): the run\'s `error`.' }),
    stateMessages: t.field({
      type: ['JSON'],
      defaultValue: [],
      description: "The final state's messages (the full checkpoint), used only to complete bare tool errors.",
    }),
  }),
});

const DeclaredToolCallInput = builder.inputType('DeclaredToolCallInput', {
  description: "A tool call the model's response declared.",
  fields: (t) => ({
    id: t.string({ required: true, description: 'The id the model gave the call: the toolCallId its recordToolStarted sends.' }),
    name: t.string({ required: true, description: "The tool's name." }),
    args: t.field({ type: 'JSON', description: 'The arguments the model declared: the ToolCall\'s declaredInput.' }),
  }),
});


const ModelStartedInput = builder.inputType('ModelStartedInput', {
  description: 'The start of a model call.',
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    operationId: t.string({ required: true, description: "The model call's id, the runtime's, unique within the run (1 to 256 characters)." }),
    sequence: t.field({ type: 'BigInt', required: true, ...startSequence }),
    model: t.string({ description: "The model's name (at most 256 characters)." }),
    input: t.field({ type: 'JSON', description: 'What was sent to the model (any JSON), e.g. its messages.' }),
    observedAt: t.field({ type: 'DateTime', required: true, ...startObservedAt }),
    clock: t.field({ type: ClockReadingInput, ...startClock }),
  }),
});

const ModelFinishedInput = builder.inputType('ModelFinishedInput', {
  description: 'The end of a model call, with the tool calls it declared.',
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    operationId: t.string({ required: true, description: "The model call's id, as its start sent it." }),
    status: t.field({ type: AuditStatusEnum, required: true, description: 'COMPLETED or FAILED.' }),
    output: t.field({ type: 'JSON', description: "The model's response (any JSON)." }),
    error: t.field({ type: 'JSON', description: 'Why it failed (any JSON).' }),
    usage: t.field({ type: 'JSON', description: "The token usage as the runtime reports it (any JSON); auditSummary reads its token counts." }),
    toolCalls: t.field({
      type: [DeclaredToolCallInput],
      defaultValue: [],
      description: 'The tool calls the model declared; each becomes a PENDING ToolCall.',
    }),
    sequence: t.field({ type: 'BigInt', ...endSequence }),
    observedAt: t.field({ type: 'DateTime', required: true, ...endObservedAt }),
    clock: t.field({ type: ClockReadingInput, ...endClock }),
  }),
});

const namespaceArg = { description: 'The runtime namespace the event came from; only the root namespace (empty) is accepted.' };

const ToolStartedInput = builder.inputType('ToolStartedInput', {
  description: "The start of a declared tool call's execution in this run.",
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    toolCallId: t.string({
      required: true,
      description: 'The id the model gave the call: it binds to the newest model call that declared it, in this run or a run it resumes (none: MODEL_NOT_FOUND).',
    }),
    name: t.string({ required: true, description: "The tool's name (1 to 256 characters)." }),
    effectiveInput: t.field({ type: 'JSON', description: 'What the tool actually runs with: a JSON object (null is taken as {}).' }),
    sequence: t.field({ type: 'BigInt', required: true, ...startSequence }),
    observedAt: t.field({ type: 'DateTime', required: true, ...startObservedAt }),
    clock: t.field({ type: ClockReadingInput, ...startClock }),
    namespace: t.stringList({ defaultValue: [], ...namespaceArg }),
  }),
});

const ToolFinishedInput = builder.inputType('ToolFinishedInput', {
  description: 'The result of a tool\'s execution: FAILED when its output has `status: "error"`, else COMPLETED.',
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    toolCallId: t.string({ required: true, description: 'The tool call whose audit in this run it closes (never started here: INVALID_TRANSITION).' }),
    output: t.field({
      type: 'JSON',
      required: true,
      description: 'The raw tool message envelope, e.g. {content, status, id, name, artifact}.',
    }),
    sequence: t.field({ type: 'BigInt', ...endSequence }),
    observedAt: t.field({ type: 'DateTime', required: true, ...endObservedAt }),
    clock: t.field({ type: ClockReadingInput, ...endClock }),
    namespace: t.stringList({ defaultValue: [], ...namespaceArg }),
  }),
});

const ToolErrorInput = builder.inputType('ToolErrorInput', {
  description: "A bare error of a running tool (an exception, a timeout, an interrupt): recorded, while the audit stays RUNNING until the run's verdict.",
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    toolCallId: t.string({ required: true, description: 'The tool call whose RUNNING audit in this run it concerns.' }),
    error: t.field({ type: 'JSON', required: true, description: 'The error (any JSON): the audit\'s `error`.' }),
    sequence: t.field({ type: 'BigInt', ...endSequence }),
    observedAt: t.field({ type: 'DateTime', required: true, ...endObservedAt }),
    clock: t.field({ type: ClockReadingInput, ...endClock }),
    namespace: t.stringList({ defaultValue: [], ...namespaceArg }),
  }),
});

const renewalSeconds = { description: 'The lease lasts this long from now (a shorter one shortens it); the server clamps it to its configured bounds.' };

const RenewLeaseInput = builder.inputType('RenewLeaseInput', {
  description: 'A renewal of the caller\'s unexpired lease, as the renewLease mutation takes it.',
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true, ...leaseArg }),
    leaseSeconds: t.int({ defaultValue: 30, ...renewalSeconds }),
  }),
});

const LifecycleEventInput = builder.inputType('LifecycleEventInput', {
  description:
    'One lifecycle event of a batch (`recordEvents`): exactly one field is set. A claimRun is claimed\nexactly as the claimRun mutation claims; the events that its lease fences need the epoch it\nreturns, so a client sends them in a later batch (docs/runtime-authors.md, "Batches").',
  isOneOf: true,
  fields: (t) => ({
    claimRun: t.field({ type: ClaimRunInput, description: 'A claimRun mutation.' }),
    renewLease: t.field({ type: RenewLeaseInput, description: 'A renewLease mutation.' }),
    modelStarted: t.field({ type: ModelStartedInput, description: 'A recordModelStarted mutation.' }),
    modelFinished: t.field({ type: ModelFinishedInput, description: 'A recordModelFinished mutation.' }),
    toolStarted: t.field({ type: ToolStartedInput, description: 'A recordToolStarted mutation.' }),
    toolFinished: t.field({ type: ToolFinishedInput, description: 'A recordToolFinished mutation.' }),
    toolError: t.field({ type: ToolErrorInput, description: 'A recordToolError mutation.' }),
    finishRun: t.field({ type: FinishRunInput, description: 'A finishRun mutation.' }),
  }),
});

const LifecycleEventErrorRef = builder.objectRef<EventError>('LifecycleEventError').implement({
  description: 'Why one event of a batch was refused: what its own mutation would have answered.',
  fields: (t) => ({
    code: t.exposeString('code', {
      description: 'The `extensions.code` its own mutation would have answered (LEASE_LOST, CONFLICT, INVALID_TRANSITION, ...).',
    }),
    message: t.exposeString('message', { description: "The message its own mutation's error would have carried." }),
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
    args: { input: t.arg({ type: ClaimRunInput, required: true, description: 'The run, the lease length and the idempotency key.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.runId, claimRun(context.deps, requirePrincipal(context.principal), input)),
  }),
  renewLease: t.field({
    type: RunLeaseRef,
    description: "Workers only. Sets the caller's unexpired lease to expire leaseSeconds from now; the epoch stays.",
    authScopes: worker,
    args: {
      lease: t.arg({ type: LeaseInput, required: true, ...leaseArg }),
      leaseSeconds: t.arg.int({ defaultValue: 30, ...renewalSeconds }),
    },
    resolve: (_root, { lease, leaseSeconds }, context, info) =>
      leasedResult(context, info, lease.runId, renewLease(context.deps, requirePrincipal(context.principal), lease, leaseSeconds)),
  }),
  finishRun: t.field({
    type: RunRef,
    description:
      'Workers only. Ends the run and, in the same transaction, closes everything still open in it (docs/semantics.md, "Run terminal convergence").',
    authScopes: worker,
    args: { input: t.arg({ type: FinishRunInput, required: true, description: 'The lease, the ending and the final state.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, finishRun(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordModelStarted: t.field({
    type: ModelAuditRef,
    description: 'Workers only. Opens a RUNNING model audit; the same start again returns it, a different one is CONFLICT.',
    authScopes: worker,
    args: { input: t.arg({ type: ModelStartedInput, required: true, description: 'The start event.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordModelStarted(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordModelFinished: t.field({
    type: ModelAuditRef,
    description: 'Workers only. Closes the model audit COMPLETED or FAILED and declares its tool calls as PENDING ToolCalls.',
    authScopes: worker,
    args: { input: t.arg({ type: ModelFinishedInput, required: true, description: 'The finish event.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordModelFinished(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolStarted: t.field({
    type: ToolAuditRef,
    description: 'Workers only. Opens a RUNNING tool audit bound to the model call that declared it, and moves its ToolCall to RUNNING.',
    authScopes: worker,
    args: { input: t.arg({ type: ToolStartedInput, required: true, description: 'The start event.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolStarted(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolFinished: t.field({
    type: ToolAuditRef,
    description: 'Workers only. Closes the tool audit with its raw output (FAILED for `status: "error"`, else COMPLETED); its ToolCall mirrors it.',
    authScopes: worker,
    args: { input: t.arg({ type: ToolFinishedInput, required: true, description: 'The finish event.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolFinished(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordToolError: t.field({
    type: ToolAuditRef,
    description:
      "Workers only. Records a bare error, with finishedAt and durationMs; the audit stays RUNNING (awaitingRunTerminal) until the run's end decides how it closes.",
    authScopes: worker,
    args: { input: t.arg({ type: ToolErrorInput, required: true, description: 'The error event.' }) },
    resolve: (_root, { input }, context, info) =>
      leasedResult(context, info, input.lease.runId, recordToolError(context.deps, requirePrincipal(context.principal), input)),
  }),
  recordEvents: t.field({
    type: [LifecycleEventResultRef],
    description:
      'Workers only. Applies 1 to 500 lifecycle events in order, each fenced and checked as its own\nmutation would be; a refused event does not stop the ones after it (docs/semantics.md,\n"Batches").',
    authScopes: worker,
    args: { events: t.arg({ type: [LifecycleEventInput], required: true, description: 'The events, 1 to 500, applied in this order.' }) },
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
