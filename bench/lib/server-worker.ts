// The worker side of a run over HTTP, with the real client's documents (packages/client/src/operations.ts).
import { OPERATIONS } from '@agent-audit/client';
import type { GraphQLHttp } from './graphql-http.js';
import { runScript, type Step } from './run-script.js';

export interface Lease {
  runId: string;
  epoch: number;
}

const clock = (runId: string, ms: number) => ({ clockId: `bench-clock-${runId}`, nanos: String(BigInt(ms) * 1_000_000n) });

/** The GraphQL document and variables of one lifecycle step. */
export function stepRequest(runId: string, lease: Lease | null, step: Step): { document: string; variables: Record<string, unknown> } {
  const observedAt = new Date().toISOString();
  switch (step.op) {
    case 'claimRun':
      return { document: OPERATIONS.claimRun.document, variables: { input: { runId, leaseSeconds: step.leaseSeconds } } };
    case 'recordModelStarted':
      return {
        document: OPERATIONS.recordModelStarted.document,
        variables: {
          input: { lease, operationId: step.operationId, sequence: String(step.sequence), model: step.model, input: step.input, observedAt, clock: clock(runId, step.clockMs) },
        },
      };
    case 'recordModelFinished':
      return {
        document: OPERATIONS.recordModelFinished.document,
        variables: {
          input: {
            lease, operationId: step.operationId, status: 'COMPLETED', output: step.output, usage: step.usage, toolCalls: step.toolCalls,
            sequence: String(step.sequence), observedAt, clock: clock(runId, step.clockMs),
          },
        },
      };
    case 'recordToolStarted':
      return {
        document: OPERATIONS.recordToolStarted.document,
        variables: {
          input: { lease, toolCallId: step.toolCallId, name: step.name, effectiveInput: step.effectiveInput, sequence: String(step.sequence), observedAt, clock: clock(runId, step.clockMs) },
        },
      };
    case 'recordToolFinished':
      return {
        document: OPERATIONS.recordToolFinished.document,
        variables: {
          input: { lease, toolCallId: step.toolCallId, output: step.output, sequence: String(step.sequence), observedAt, clock: clock(runId, step.clockMs) },
        },
      };
    case 'finishRun':
      return { document: OPERATIONS.finishRun.document, variables: { input: { lease, status: step.status } } };
  }
}

/** Runs one step over HTTP; returns the lease (new after a claim, none after finishRun). */
export async function serverStep(http: GraphQLHttp, token: string, runId: string, lease: Lease | null, step: Step): Promise<Lease | null> {
  const { document, variables } = stepRequest(runId, lease, step);
  const data = await http.must(document, variables, token);
  if (step.op === 'claimRun') return { runId: data.claimRun.runId, epoch: data.claimRun.epoch };
  return step.op === 'finishRun' ? null : lease;
}

export async function serverCreateThread(http: GraphQLHttp, ownerToken: string, title: string): Promise<string> {
  return (await http.must(OPERATIONS.createThread.document, { input: { title } }, ownerToken)).createThread.id;
}

export async function serverCreateRun(http: GraphQLHttp, ownerToken: string, threadId: string): Promise<string> {
  return (await http.must(OPERATIONS.createRun.document, { input: { threadId } }, ownerToken)).createRun.id;
}

/** Whether the server's schema has `Subscription.threadChanges` (issue 20). */
export async function serverHasThreadChanges(http: GraphQLHttp, token: string): Promise<boolean> {
  const ask = () => http.must(`{ __type(name: "Subscription") { fields { name } } }`, {}, token);
  // A read, safe to send again: after a long idle phase the pooled connection may have been closed under it.
  const data = await ask().catch(ask);
  return (data.__type?.fields ?? []).some((field: { name: string }) => field.name === 'threadChanges');
}

/** The thread's change cursor (`Thread.changeCursor`, issue 20). */
export async function serverChangeCursor(http: GraphQLHttp, token: string, threadId: string): Promise<string> {
  return (await http.must(`query Cursor($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, token)).thread.changeCursor;
}

/**
 * Drives whole runs on one thread with `workers` concurrent workers until at least `changes`
 * changes are committed (each run: createRun and its ten lifecycle events, eleven changes).
 */
export async function driveChanges(http: GraphQLHttp, ownerToken: string, workerTokens: string[], threadId: string, changes: number, prefix: string) {
  const CHANGES_PER_RUN = 11;
  const runs = Math.ceil(changes / CHANGES_PER_RUN);
  let next = 0;
  await Promise.all(
    workerTokens.map(async (token) => {
      for (let run = next++; run < runs; run = next++) {
        const runId = await serverCreateRun(http, ownerToken, threadId);
        let lease: Lease | null = null;
        for (const step of runScript(2, `${prefix}${run}`)) lease = await serverStep(http, token, runId, lease, step);
      }
    }),
  );
  return runs * CHANGES_PER_RUN;
}
