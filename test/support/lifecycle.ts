import type { GraphQLResponse, TestApp } from './app.js';

export const AUDIT_FIELDS = `id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs`;
export const TOOL_AUDIT_FIELDS = `${AUDIT_FIELDS} toolCallId name effectiveInput output error awaitingRunTerminal
  toolCall { id toolCallId status effectiveInput output error durationMs }`;
export const MODEL_AUDIT_FIELDS = `${AUDIT_FIELDS} model input output error usage
  toolCalls { id toolCallId name status declaredInput }`;
const WORKER_RUN_FIELDS = `id status leaseOwner leaseEpoch leaseExpiresAt startedAt finishedAt error`;
export const RUN_FIELDS = `${WORKER_RUN_FIELDS}
  resumedFrom { id }`;

const MUTATIONS = {
  claimRun: `mutation($input: ClaimRunInput!) { result: claimRun(input: $input) { runId owner epoch expiresAt } }`,
  renewLease: `mutation($lease: LeaseInput!, $leaseSeconds: Int) { result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { runId owner epoch expiresAt } }`,
  recordModelStarted: `mutation($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { ${MODEL_AUDIT_FIELDS} } }`,
  recordModelFinished: `mutation($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { ${MODEL_AUDIT_FIELDS} } }`,
  recordToolStarted: `mutation($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { ${TOOL_AUDIT_FIELDS} } }`,
  recordToolFinished: `mutation($input: ToolFinishedInput!) { result: recordToolFinished(input: $input) { ${TOOL_AUDIT_FIELDS} } }`,
  recordToolError: `mutation($input: ToolErrorInput!) { result: recordToolError(input: $input) { ${TOOL_AUDIT_FIELDS} } }`,
  // A worker reads its own run only: the run it resumes is another run (SEMANTICS.md "Principals").
  finishRun: `mutation($input: FinishRunInput!) { result: finishRun(input: $input) { ${WORKER_RUN_FIELDS} } }`,
} as const;

export interface Lease {
  runId: string;
  epoch: number;
}

type Input = Record<string, unknown>;

/** A clock reading on a named clock, `ms` milliseconds after its origin. */
export const clockAt = (ms: number, clockId = 'test-clock') => ({ clockId, nanos: String(BigInt(ms) * 1_000_000n) });

/**
 * A worker driving one run through the public API. Each call returns the raw GraphQL response;
 * `sequence` is filled from a per-run counter unless given.
 */
export class WorkerSession {
  private nextSequence = 1;

  constructor(
    readonly t: TestApp,
    readonly token: string,
    public lease: Lease,
  ) {}

  private send(name: keyof typeof MUTATIONS, variables: Input): Promise<GraphQLResponse<{ result: any }>> {
    return this.t.gql(MUTATIONS[name], variables, this.token);
  }

  private observed(input: Input, withSequence: boolean): Input {
    return {
      lease: this.lease,
      observedAt: new Date().toISOString(),
      ...(withSequence ? { sequence: String(this.nextSequence++) } : {}),
      ...input,
    };
  }

  renew(leaseSeconds?: number) {
    return this.send('renewLease', { lease: this.lease, leaseSeconds });
  }
  modelStarted(operationId: string, input: Input = {}) {
    return this.send('recordModelStarted', { input: this.observed({ operationId, ...input }, true) });
  }
  modelFinished(operationId: string, toolCalls: { id: string; name: string; args?: unknown }[] = [], input: Input = {}) {
    return this.send('recordModelFinished', {
      input: this.observed({ operationId, status: 'COMPLETED', toolCalls, ...input }, true),
    });
  }
  toolStarted(toolCallId: string, name: string, input: Input = {}) {
    return this.send('recordToolStarted', { input: this.observed({ toolCallId, name, effectiveInput: {}, ...input }, true) });
  }
  toolFinished(toolCallId: string, output: unknown, input: Input = {}) {
    return this.send('recordToolFinished', { input: this.observed({ toolCallId, output, ...input }, true) });
  }
  toolError(toolCallId: string, error: unknown, input: Input = {}) {
    return this.send('recordToolError', { input: this.observed({ toolCallId, error, ...input }, true) });
  }
  finish(status: 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED', input: Input = {}) {
    return this.send('finishRun', { input: { lease: this.lease, status, ...input } });
  }
  /** A model call that declares `tools`, opened and closed. */
  async declare(operationId: string, tools: { id: string; name: string; args?: unknown }[]) {
    must(await this.modelStarted(operationId));
    return must(await this.modelFinished(operationId, tools));
  }
}

/** The result of a mutation that must succeed; throws with the errors otherwise. */
export function must<T = any>(response: GraphQLResponse<{ result: T }>): T {
  if (response.errors?.length || !response.data) {
    throw new Error(`Expected success, got ${JSON.stringify(response.errors)}`);
  }
  return response.data.result;
}

export interface Actors {
  owner: string;
  ownerSub: string;
  worker: string;
  workerSub: string;
}

let counter = 0;

/** A fresh superadmin owner and worker, with unique subs. */
export async function actors(t: TestApp): Promise<Actors> {
  const n = ++counter;
  const ownerSub = `owner-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const workerSub = `worker-${n}-${Math.random().toString(36).slice(2, 8)}`;
  return { owner: await t.token(ownerSub, 'superadmin'), ownerSub, worker: await t.token(workerSub, 'worker'), workerSub };
}

export async function createThread(t: TestApp, token: string, title = 'test thread'): Promise<string> {
  const response = await t.gql(`mutation($title: String) { result: createThread(input: { title: $title }) { id } }`, { title }, token);
  return must(response).id as string;
}

export async function createRun(t: TestApp, token: string, threadId: string, resumeFromRunId?: string): Promise<string> {
  const response = await t.gql(
    `mutation($input: CreateRunInput!) { result: createRun(input: $input) { id status } }`,
    { input: { threadId, resumeFromRunId } },
    token,
  );
  return must(response).id as string;
}

export async function claim(t: TestApp, workerToken: string, runId: string, leaseSeconds?: number): Promise<WorkerSession> {
  const lease = must(await t.gql(MUTATIONS.claimRun, { input: { runId, leaseSeconds } }, workerToken)) as Lease;
  return new WorkerSession(t, workerToken, { runId: lease.runId, epoch: lease.epoch });
}

export const claimRunMutation = MUTATIONS.claimRun;

/** A new thread owned by a fresh superadmin, a run in it, claimed by a fresh worker. */
export async function runningRun(t: TestApp) {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const runId = await createRun(t, who.owner, threadId);
  const worker = await claim(t, who.worker, runId);
  return { ...who, threadId, runId, session: worker };
}

export const THREAD_AUDITS = `query($threadId: ID!, $limit: Int) {
  threadAudits(threadId: $threadId, limit: $limit) {
    threadId truncated
    items {
      __typename ${AUDIT_FIELDS}
      ... on ToolAudit { toolCallId name effectiveInput output error awaitingRunTerminal toolCall { id status output } declaredBy { id operationId } }
      ... on ModelAudit { model input output error usage toolCalls { id toolCallId status } }
    }
  }
}`;
