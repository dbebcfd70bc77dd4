import { expect } from 'vitest';
import { errorCode, type GraphQLResponse, type TestApp } from '../support/app.js';
import { AUDIT_FRAGMENT, WORKER_RUN_FRAGMENT, WorkerSession, claim, createRun, must, runningRun } from '../support/lifecycle.js';

const TOOL_CALL_FIELDS = `id toolCallId name status declaredInput effectiveInput output error startedAt finishedAt durationMs`;

/** Every audit field of a thread, as its superadmin owner reads it. */
export const FULL_THREAD_AUDITS = `query($threadId: ID!) {
  threadAudits(threadId: $threadId) {
    truncated
    items {
      __typename ...LifecycleAuditFields
      ... on ToolAudit {
        toolCallId name effectiveInput output error awaitingRunTerminal
        toolCall { ${TOOL_CALL_FIELDS} }
        declaredBy { id runId operationId }
      }
      ... on ModelAudit { model input output error usage toolCalls { ${TOOL_CALL_FIELDS} } }
    }
  }
}
${AUDIT_FRAGMENT}`;

export const RUN_STATE = `query($id: ID!) { run(id: $id) { ...WorkerRunFields resumedFrom { id } toolCalls { ${TOOL_CALL_FIELDS} } } }
${WORKER_RUN_FRAGMENT}`;

export interface Scene {
  t: TestApp;
  owner: string;
  threadId: string;
}

/** A running run (see runningRun) and the Scene its writes change. */
export async function runningScene(t: TestApp) {
  const run = await runningRun(t);
  const scene: Scene = { t, owner: run.owner, threadId: run.threadId };
  return { ...run, scene };
}

/** Everything a lifecycle write could change in a thread: its runs, their ToolCalls and every audit. */
export async function threadState({ t, owner, threadId }: Scene) {
  const thread = await t.gql(
    `query($id: ID!) { thread(id: $id) { runs { id } } }`,
    { id: threadId },
    owner,
  );
  const runIds: string[] = thread.data.thread.runs.map((run: { id: string }) => run.id);
  const runs = await Promise.all(runIds.map(async (id) => (await t.gql(RUN_STATE, { id }, owner)).data.run));
  const audits = await t.gql(FULL_THREAD_AUDITS, { threadId }, owner);
  expect(audits.errors).toBeUndefined();
  return { runs, audits: audits.data.threadAudits };
}

/** Asserts that `write` fails with `code` and leaves the thread exactly as it was. */
export async function expectRejected(scene: Scene, code: string, write: () => Promise<GraphQLResponse>) {
  const before = await threadState(scene);
  const response = await write();
  expect(response.errors, JSON.stringify(response.data)).toBeDefined();
  expect(errorCode(response), response.errors?.[0]?.message).toBe(code);
  expect(await threadState(scene)).toEqual(before);
  return { code: errorCode(response), message: response.errors![0]!.message, extensions: response.errors![0]!.extensions };
}

/** The tool audit of `toolCallId` in `runId`, read back through threadAudits. */
export async function toolAuditOf(scene: Scene, runId: string, toolCallId: string) {
  const { audits } = await threadState(scene);
  return audits.items.find((item: any) => item.__typename === 'ToolAudit' && item.runId === runId && item.toolCallId === toolCallId);
}

/** Ends the session's run as INTERRUPTED and claims a run that resumes it. */
export async function interruptAndResume(scene: Scene, session: WorkerSession): Promise<WorkerSession> {
  must(await session.finish('INTERRUPTED'));
  const runId = await createRun(scene.t, scene.owner, scene.threadId, session.lease.runId);
  return claim(scene.t, session.token, runId);
}

/** Resolves once the database clock has certainly passed `instant` (a lease expiry). */
export async function waitPast(instant: string | Date) {
  const remaining = new Date(instant).getTime() - Date.now() + 150;
  if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
}

/** A fixed observation instant, so that replays can prove which one was kept. */
export const at = (second: number) => new Date(Date.UTC(2026, 10, 29, 21, 0, second)).toISOString();
