import type { SqlDriver } from '../../src/db/database.js';
import type { GraphQLResponse, TestApp } from './app.js';

import { graphql } from '../generated/graphql/index.js';

// The lifecycle documents, typed and checked against schema.graphql by codegen.ts (npm run
// codegen): a schema change they depend on fails the codegen sync test, not a test run.
export const AUDIT_FRAGMENT = graphql(`
  fragment LifecycleAuditFields on Audit { id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs }`);
export const TOOL_AUDIT_FRAGMENT = graphql(`
  fragment LifecycleToolAuditFields on ToolAudit {
    ...LifecycleAuditFields
    toolCallId name effectiveInput output error awaitingRunTerminal
    toolCall { id toolCallId status effectiveInput output error durationMs }
  }`);
export const MODEL_AUDIT_FRAGMENT = graphql(`
  fragment LifecycleModelAuditFields on ModelAudit {
    ...LifecycleAuditFields
    model input output error usage
    toolCalls { id toolCallId name status declaredInput }
  }`);
/** The run's fields a worker may read in its own mutation's result. */
export const WORKER_RUN_FRAGMENT = graphql(`
  fragment WorkerRunFields on Run { id status leaseOwner leaseEpoch leaseExpiresAt startedAt finishedAt error }`);

const MUTATIONS = {
  claimRun: graphql(`mutation LifecycleClaimRun($input: ClaimRunInput!) { result: claimRun(input: $input) { runId owner epoch expiresAt } }`),
  renewLease: graphql(`mutation LifecycleRenewLease($lease: LeaseInput!, $leaseSeconds: Int) {
    result: renewLease(lease: $lease, leaseSeconds: $leaseSeconds) { runId owner epoch expiresAt }
  }`),
  recordModelStarted: graphql(`mutation LifecycleModelStarted($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { ...LifecycleModelAuditFields } }`),
  recordModelFinished: graphql(`mutation LifecycleModelFinished($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { ...LifecycleModelAuditFields } }`),
  recordToolStarted: graphql(`mutation LifecycleToolStarted($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { ...LifecycleToolAuditFields } }`),
  recordToolFinished: graphql(`mutation LifecycleToolFinished($input: ToolFinishedInput!) { result: recordToolFinished(input: $input) { ...LifecycleToolAuditFields } }`),
  recordToolError: graphql(`mutation LifecycleToolError($input: ToolErrorInput!) { result: recordToolError(input: $input) { ...LifecycleToolAuditFields } }`),
  // A worker reads its own run only: the run it resumes is another run (SEMANTICS.md "Principals").
  finishRun: graphql(`mutation LifecycleFinishRun($input: FinishRunInput!) { result: finishRun(input: $input) { ...WorkerRunFields } }`),
};
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
    return this.t.gql(MUTATIONS[name].toString(), variables, this.token);
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
  const lease = must(await t.gql(MUTATIONS.claimRun.toString(), { input: { runId, leaseSeconds } }, workerToken)) as Lease;
  return new WorkerSession(t, workerToken, { runId: lease.runId, epoch: lease.epoch });
}

export const claimRunMutation = MUTATIONS.claimRun.toString();

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
      __typename ...LifecycleAuditFields
      ... on ToolAudit { toolCallId name effectiveInput output error awaitingRunTerminal toolCall { id status output } declaredBy { id operationId } }
      ... on ModelAudit { model input output error usage toolCalls { id toolCallId status } }
    }
  }
}
${AUDIT_FRAGMENT}`;

/**
 * Moves the database's clock past the runs' leases, the first run's furthest: each expiry is set
 * in the database's past, which is all the lease rules read (`lease_expires_at <= now()`, by the
 * database clock), so no test waits out a lease in real time.
 */
export async function expireLeases(driver: Pick<SqlDriver, 'query'>, runIds: string[]) {
  await driver.query(
    `UPDATE run r SET lease_expires_at = now() - make_interval(secs => cardinality($1::uuid[]) - e.position + 1)
     FROM unnest($1::uuid[]) WITH ORDINALITY AS e(id, position) WHERE r.id = e.id`,
    [runIds],
  );
}
