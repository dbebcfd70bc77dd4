import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, claim, createRun, createThread, must, type WorkerSession } from '../support/lifecycle.js';

// SEMANTICS.md "Principals": inside its own lifecycle mutation's result a worker reads its run,
// that run's tool calls and audits, and the model audit a tool call of that run was bound to.
// Run.thread, other runs, their audits and the thread's messages are FORBIDDEN.

let t: TestApp;
let threadId: string;
let earlierRunId: string;
let otherRunId: string;
let resumed: WorkerSession;
let now = 0;
const at = () => ({ observedAt: new Date().toISOString(), sequence: String(++now) });

beforeAll(async () => {
  t = await startTestApp();
  const who = await actors(t);
  threadId = await createThread(t, who.owner);
  must(await t.gql(`mutation($id: ID!) { result: appendMessage(input: { threadId: $id, role: USER, content: "secret history" }) { id } }`, { id: threadId }, who.owner));
  // An earlier run declares call-1 and is interrupted; a resume of it executes call-1.
  earlierRunId = await createRun(t, who.owner, threadId);
  const earlier = await claim(t, who.worker, earlierRunId);
  await earlier.declare('m1', [{ id: 'call-1', name: 'search', args: { q: 'x' } }]);
  must(await earlier.finish('INTERRUPTED'));
  // Another run of the thread, with its own model audit.
  otherRunId = await createRun(t, who.owner, threadId);
  const other = await claim(t, who.worker, otherRunId);
  await other.declare('other-m', [{ id: 'other-call', name: 'search' }]);
  const resumedRunId = await createRun(t, who.owner, threadId, earlierRunId);
  resumed = await claim(t, who.worker, resumedRunId);
  await resumed.declare('m2', [{ id: 'call-2', name: 'fetch' }]);
});
afterAll(() => t.close());

const lifecycle = (field: string, inputType: string, selection: string) =>
  `mutation($input: ${inputType}!) { ${field}(input: $input) { ${selection} } }`;

const errorsOf = (response: { errors?: { path?: unknown; extensions?: { code?: string } }[] }) =>
  (response.errors ?? []).map((error) => [error.path, error.extensions?.code]);

describe(`a worker reads only its own run in its lifecycle results (${backendName})`, () => {
  it('the tool start: its run, its tool call, the model audit it was bound to (in the resumed run)', async () => {
    const response = await t.gql(
      lifecycle('recordToolStarted', 'ToolStartedInput', `id runId run { id status toolCalls { toolCallId declaredBy { operationId } } }
        toolCall { toolCallId declaredBy { operationId runId input } } declaredBy { operationId runId }`),
      { input: { lease: resumed.lease, toolCallId: 'call-1', name: 'search', effectiveInput: {}, ...at() } },
      resumed.token,
    );
    expect(response.errors).toBeUndefined();
    const started = response.data.recordToolStarted;
    expect(started.run.toolCalls).toEqual([{ toolCallId: 'call-2', declaredBy: { operationId: 'm2' } }]);
    expect(started.declaredBy).toEqual({ operationId: 'm1', runId: earlierRunId });
    expect(started.toolCall.declaredBy.operationId).toBe('m1');
  });

  it('Run.thread (and through it the messages and the other runs) is FORBIDDEN', async () => {
    const input = { lease: resumed.lease, operationId: 'm3', model: 'x', ...at() };
    const response = await t.gql(
      lifecycle('recordModelStarted', 'ModelStartedInput', `id run { thread { messages { content } runs { toolCalls { declaredBy { input output } } } } }`),
      { input },
      resumed.token,
    );
    expect(errorsOf(response)).toEqual([[['recordModelStarted', 'run', 'thread'], 'FORBIDDEN']]);
    expect(JSON.stringify(response)).not.toContain('secret history');
    // The write was done before its result was read: the message says so, and how to read it.
    expect(response.errors![0]!.message).toMatch(/^Run\.thread is beyond a worker's reach: .* The event itself was recorded: send it again without this field/);
    const replayed = await t.gql(lifecycle('recordModelStarted', 'ModelStartedInput', 'id status run { id }'), { input }, resumed.token);
    expect(replayed.errors).toBeUndefined();
    expect(replayed.data.recordModelStarted).toMatchObject({ status: 'RUNNING', run: { id: resumed.lease.runId } });
  });

  it('the run it resumes is another run: FORBIDDEN', async () => {
    const response = await t.gql(
      lifecycle('recordModelFinished', 'ModelFinishedInput', `id run { resumedFrom { id toolCalls { declaredBy { input } } } }`),
      { input: { lease: resumed.lease, operationId: 'm3', status: 'COMPLETED', ...at() } },
      resumed.token,
    );
    expect(errorsOf(response)).toEqual([[['recordModelFinished', 'run', 'resumedFrom'], 'FORBIDDEN']]);
    expect(response.data.recordModelFinished.run.resumedFrom).toBeNull();
  });

  it('the bound model audit of another run: its run and its other tool calls are FORBIDDEN', async () => {
    // The same terminal twice (a replay): each read is refused on its own.
    const input = { lease: resumed.lease, toolCallId: 'call-1', output: { content: 'ok', status: 'success' }, ...at() };
    const throughRun = await t.gql(lifecycle('recordToolFinished', 'ToolFinishedInput', `id declaredBy { operationId run { id } }`), { input }, resumed.token);
    expect(errorsOf(throughRun)).toEqual([[['recordToolFinished', 'declaredBy', 'run'], 'FORBIDDEN']]);
    const throughToolCalls = await t.gql(
      lifecycle('recordToolFinished', 'ToolFinishedInput', `id toolCall { declaredBy { toolCalls { toolCallId } } }`),
      { input },
      resumed.token,
    );
    expect(errorsOf(throughToolCalls)).toEqual([[['recordToolFinished', 'toolCall', 'declaredBy', 'toolCalls'], 'FORBIDDEN']]);
    expect(JSON.stringify([throughRun, throughToolCalls])).not.toContain(earlierRunId);
  });

  it('finishRun: the finding as filed (thread history and other runs\' model audits) is FORBIDDEN', async () => {
    const response = await t.gql(
      lifecycle('finishRun', 'FinishRunInput', `id status toolCalls { toolCallId } thread { messages { content } runs { toolCalls { declaredBy { input output } } } }`),
      { input: { lease: resumed.lease, status: 'COMPLETED' } },
      resumed.token,
    );
    expect(errorsOf(response)).toEqual([[['finishRun', 'thread'], 'FORBIDDEN']]);
    expect(JSON.stringify(response)).not.toContain('secret history');
    expect(JSON.stringify(response)).not.toContain('other-call');
  });
});
