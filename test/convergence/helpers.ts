import { expect } from 'vitest';
import { errorCode, type GraphQLResponse, type TestApp } from '../support/app.js';
import { THREAD_AUDITS, type WorkerSession } from '../support/lifecycle.js';

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

/** Polls `read` until `done` holds for its value, for at most `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Condition not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits until the database judges the session's lease expired. The probe is a write that fails
 * either way (it finishes a tool call that was never started), so it changes nothing.
 */
export async function waitForLeaseExpiry(session: WorkerSession) {
  await eventually(
    () => session.toolFinished('probe-never-started', { content: '' }),
    (response) => errorCode(response) !== 'INVALID_TRANSITION',
  ).then((response) => expect(errorCode(response)).toBe('LEASE_EXPIRED'));
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

export interface Subscription {
  events: any[];
  close(): Promise<void>;
}

/** A subscription over SSE through yoga's in-process fetch; `events` fills as payloads arrive. */
export async function subscribe(t: TestApp, query: string, variables: Record<string, unknown>, token: string): Promise<Subscription> {
  const controller = new AbortController();
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const events: any[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const pump = (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n');
          if (data) events.push(JSON.parse(data));
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    events,
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}
