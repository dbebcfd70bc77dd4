import type { GraphQLResponse, TestApp } from '../support/app.js';
import { AUDIT_FRAGMENT, WORKER_RUN_FRAGMENT, type Lease } from '../support/lifecycle.js';

/** recordEvents, selecting what each single mutation's test selects. */
export const RECORD_EVENTS = `mutation($events: [LifecycleEventInput!]!) {
  result: recordEvents(events: $events) {
    index
    error { code message runStatus }
    lease { runId owner epoch }
    run { ...WorkerRunFields }
    audit {
      __typename ...LifecycleAuditFields
      ... on ToolAudit { toolCallId name effectiveInput output error awaitingRunTerminal }
      ... on ModelAudit { model input output error usage }
    }
  }
}
${AUDIT_FRAGMENT}
${WORKER_RUN_FRAGMENT}`;

export type Event = Record<string, Record<string, unknown>>;

export interface EventResult {
  index: number;
  error: { code: string; message: string; runStatus: string | null } | null;
  lease: Record<string, unknown> | null;
  run: Record<string, unknown> | null;
  audit: Record<string, unknown> | null;
}

export const sendBatch = (t: TestApp, token: string, events: Event[]): Promise<GraphQLResponse<{ result: EventResult[] }>> =>
  t.gql(RECORD_EVENTS, { events }, token);

/** A fixed observation instant, so that replays are exact. */
const at = (second: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, second % 60)).toISOString();

/** Lifecycle events of one run, as a batch carries them; `sequence` from a per-run counter. */
export class RunEvents {
  private sequence = 1;
  constructor(public lease: Lease) {}

  private observed(input: Record<string, unknown>, withSequence = true) {
    const sequence = this.sequence++;
    return { lease: this.lease, observedAt: at(sequence), ...(withSequence ? { sequence: String(sequence) } : {}), ...input };
  }
  renew(leaseSeconds = 30): Event {
    return { renewLease: { lease: this.lease, leaseSeconds } };
  }
  modelStarted(operationId: string, input: Record<string, unknown> = {}): Event {
    return { modelStarted: this.observed({ operationId, model: 'm', input: { prompt: operationId }, ...input }) };
  }
  modelFinished(operationId: string, toolCalls: { id: string; name: string; args?: unknown }[] = [], input: Record<string, unknown> = {}): Event {
    return { modelFinished: this.observed({ operationId, status: 'COMPLETED', toolCalls, output: { text: operationId }, ...input }) };
  }
  toolStarted(toolCallId: string, name = 'search', input: Record<string, unknown> = {}): Event {
    return { toolStarted: this.observed({ toolCallId, name, effectiveInput: { q: toolCallId }, ...input }) };
  }
  toolFinished(toolCallId: string, input: Record<string, unknown> = {}): Event {
    return { toolFinished: this.observed({ toolCallId, output: { content: `done ${toolCallId}`, status: 'success' }, ...input }) };
  }
  toolError(toolCallId: string, input: Record<string, unknown> = {}): Event {
    return { toolError: this.observed({ toolCallId, error: { message: `boom ${toolCallId}` }, ...input }) };
  }
  finish(status: 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED' = 'COMPLETED', input: Record<string, unknown> = {}): Event {
    return { finishRun: { lease: this.lease, status, ...input } };
  }
}

/** A claim as a batch carries it: the claimRun mutation's input. */
export const claimEvent = (runId: string, claimId?: string, leaseSeconds = 60): Event => ({ claimRun: { runId, claimId, leaseSeconds } });

/** The one mutation each kind of event stands for, with its document. */
const SINGLE: Record<string, { field: string; args: (input: Record<string, unknown>) => Record<string, unknown>; signature: string }> = {
  claimRun: { field: 'claimRun', args: (input) => ({ input }), signature: '($input: ClaimRunInput!) { result: claimRun(input: $input)' },
  renewLease: { field: 'renewLease', args: (input) => input, signature: '($lease: LeaseInput!, $leaseSeconds: Int) { result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds)' },
  modelStarted: { field: 'recordModelStarted', args: (input) => ({ input }), signature: '($input: ModelStartedInput!) { result: recordModelStarted(input: $input)' },
  modelFinished: { field: 'recordModelFinished', args: (input) => ({ input }), signature: '($input: ModelFinishedInput!) { result: recordModelFinished(input: $input)' },
  toolStarted: { field: 'recordToolStarted', args: (input) => ({ input }), signature: '($input: ToolStartedInput!) { result: recordToolStarted(input: $input)' },
  toolFinished: { field: 'recordToolFinished', args: (input) => ({ input }), signature: '($input: ToolFinishedInput!) { result: recordToolFinished(input: $input)' },
  toolError: { field: 'recordToolError', args: (input) => ({ input }), signature: '($input: ToolErrorInput!) { result: recordToolError(input: $input)' },
  finishRun: { field: 'finishRun', args: (input) => ({ input }), signature: '($input: FinishRunInput!) { result: finishRun(input: $input)' },
};

const TOOL_SELECTION = `{ __typename ...LifecycleAuditFields toolCallId name effectiveInput output error awaitingRunTerminal }`;
const MODEL_SELECTION = `{ __typename ...LifecycleAuditFields model input output error usage }`;

/**
 * An event sent alone, as its own mutation, answered in the shape of a batch's result: what the
 * property test compares with the batch's answer.
 */
export async function sendAlone(t: TestApp, token: string, event: Event, index = 0): Promise<EventResult> {
  const [kind, input] = Object.entries(event)[0]!;
  const single = SINGLE[kind]!;
  const leaseResult = kind === 'claimRun' || kind === 'renewLease';
  const selection =
    leaseResult
      ? '{ runId owner epoch }'
      : kind === 'finishRun'
        ? '{ ...WorkerRunFields }'
        : kind.startsWith('model')
          ? MODEL_SELECTION
          : TOOL_SELECTION;
  const fragment = leaseResult ? '' : kind === 'finishRun' ? WORKER_RUN_FRAGMENT.toString() : AUDIT_FRAGMENT.toString();
  const response = await t.gql(`mutation${single.signature} ${selection} }\n${fragment}`, single.args(input), token);
  const error = response.errors?.[0];
  const value = response.data?.result ?? null;
  return {
    index,
    error: error ? { code: String(error.extensions?.code), message: error.message, runStatus: (error.extensions?.runStatus as string | undefined) ?? null } : null,
    lease: leaseResult ? value : null,
    run: kind === 'finishRun' ? value : null,
    audit: !leaseResult && kind !== 'finishRun' ? value : null,
  };
}
