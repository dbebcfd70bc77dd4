import { expect } from 'vitest';
import { errorCode, type GraphQLResponse, type TestApp } from '../support/app.js';
import { THREAD_AUDITS, must, type WorkerSession } from '../support/lifecycle.js';

export const RUN_WITH_TOOL_CALLS = `query($id: ID!) {
  run(id: $id) {
    id status error startedAt finishedAt leaseOwner leaseExpiresAt resumedFrom { id }
    toolCalls { id toolCallId name status effectiveInput output error startedAt finishedAt durationMs declaredBy { id operationId } }
  }
}`;

export const CANCEL_RUN = `mutation($runId: ID!) { result: cancelRun(runId: $runId) { id status error finishedAt leaseOwner leaseExpiresAt } }`;

export async function readRun(t: TestApp, token: string, runId: string) {
  const response = await t.gql(RUN_WITH_TOOL_CALLS, { id: runId }, token);
  expect(response.errors).toBeUndefined();
  return response.data.run;
}

/** The thread's audits keyed `Model:<operationId>` / `Tool:<toolCallId>` for the given run. */
export async function auditsOf(t: TestApp, token: string, threadId: string, runId: string): Promise<Record<string, any>> {
  const response = await t.gql(THREAD_AUDITS, { threadId, limit: 500 }, token);
  expect(response.errors).toBeUndefined();
  const items = response.data.threadAudits.items.filter((item: any) => item.runId === runId);
  return Object.fromEntries(items.map((item: any) => [`${item.__typename === 'ToolAudit' ? 'Tool' : 'Model'}:${item.operationId}`, item]));
}

export function cancelRun(t: TestApp, token: string, runId: string) {
  return t.gql<{ result: any }>(CANCEL_RUN, { runId }, token);
}

/** Leaves the session's run with a bare tool error (t-await), a running tool (t-open) and a running model call (m-open). */
export async function openWork(session: WorkerSession) {
  await session.declare('m1', [
    { id: 't-await', name: 'search' },
    { id: 't-open', name: 'search' },
  ]);
  must(await session.toolStarted('t-await', 'search'));
  must(await session.toolError('t-await', { message: 'bare' }));
  must(await session.toolStarted('t-open', 'search'));
  must(await session.modelStarted('m-open'));
}

/** The worker is told its lease expired. The probe finishes a tool call that was never started, so it changes nothing. */
export async function expectLeaseExpired(session: WorkerSession) {
  expect(errorCode(await session.toolFinished('probe-never-started', { content: '' }))).toBe('LEASE_EXPIRED');
}

/** Every lifecycle write a worker could still attempt on an ended run, each for a fresh or known id. */
export function lateWrites(session: WorkerSession, known: { toolCallId: string; modelId: string; declaredId: string }) {
  return {
    renewLease: () => session.renew(30),
    recordModelStarted: () => session.modelStarted('late-model'),
    recordModelFinished: () => session.modelFinished(known.modelId),
    recordToolStarted: () => session.toolStarted(known.declaredId, 'search'),
    recordToolFinished: () => session.toolFinished(known.toolCallId, { content: 'late', status: 'success' }),
    recordToolError: () => session.toolError(known.toolCallId, { message: 'late' }),
    finishRun: () => session.finish('COMPLETED'),
  } satisfies Record<string, () => Promise<GraphQLResponse>>;
}
