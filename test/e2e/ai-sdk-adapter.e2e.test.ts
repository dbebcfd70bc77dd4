// The Vercel AI SDK adapter against the real `ai` package and the real server process: an agent
// (generateText / streamText with tools, the SDK's own mock language model following a script)
// is recorded through AiSdkAudit, and the owner reads the run back with threadAudits, audit by
// audit against what the SDK reports the agent did.
import { generateText, simulateReadableStream, stepCountIs, tool, type StepResult, type ToolSet } from 'ai';
import { z } from 'zod';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it, vi } from 'vitest';
import { AuditClient, type FetchLike, type ModelAudit, type ThreadAuditItem, type ToolAuditWithLinks } from '@agent-audit/client';
import { AiSdkAudit, AuditLeaseLostError } from '@agent-audit/client/ai-sdk';
import { agentTools, callTool, scriptedModel, turn, type ScriptedCall, type ScriptedTurn } from '../../src/cli/ai-sdk-agent.js';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile } from './support/server.js';
import { losingFirstResponses } from './support/lossy-fetch.js';

const server = serverForFile();

/** A fresh owner, worker and thread; `workerFetch` replaces the worker's network. */
async function openThread(title: string, options: { workerFetch?: FetchLike; leaseSeconds?: number; budgetMs?: number } = {}) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: options.workerFetch });
  const { id: threadId } = await owner.createThread({ title });
  const audit = new AiSdkAudit(worker, { leaseSeconds: options.leaseSeconds ?? 30, budgetMs: options.budgetMs });
  return {
    owner,
    worker,
    threadId,
    audit,
    newRun: async () => (await owner.createRun({ threadId })).id,
    timeline: async () => (await owner.threadAudits(threadId)).items,
  };
}

/**
 * What the agent did, from the script (what the model declared) and the SDK's steps (what each
 * tool received after the SDK's schema parsing, and what it returned or threw), in the order
 * the audit must show it: each model call, then the tools it declared, in declaration order.
 */
function whatTheAgentDid(turns: ScriptedTurn[], steps: ReadonlyArray<StepResult<typeof agentTools>>) {
  return steps.flatMap((step, index) => [
    { model: 'COMPLETED', declares: turns[index]!.toolCalls.map(({ id, name, args }) => ({ toolCallId: id, name, declaredInput: args })) },
    ...step.toolCalls.map((call) => {
      const result = step.content.find((part) => (part.type === 'tool-result' || part.type === 'tool-error') && part.toolCallId === call.toolCallId);
      return result?.type === 'tool-result'
        ? { tool: call.toolName, toolCallId: call.toolCallId, status: 'COMPLETED', effectiveInput: call.input, output: result.output, error: null }
        : { tool: call.toolName, toolCallId: call.toolCallId, status: 'FAILED', effectiveInput: call.input, output: thrown(result).message, error: { name: thrown(result).name, message: thrown(result).message } };
    }),
  ]);
}

/** A scripted turn as the model audit's output records it: the content parts (tool inputs parsed) and the finish reason. */
const outputOf = (scripted: ScriptedTurn) => ({
  finishReason: scripted.toolCalls.length > 0 ? 'tool-calls' : 'stop',
  content: [
    { type: 'text', text: scripted.text },
    ...scripted.toolCalls.map((call) => ({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args })),
  ],
});

const thrown = (part: unknown) => (part as { error: Error }).error;

/** The same picture, from the audit server's timeline. */
function whatWasRecorded(items: ThreadAuditItem[]) {
  return items.map((item) =>
    item.__typename === 'ModelAudit'
      ? { model: item.status, declares: item.toolCalls.map(({ toolCallId, name, declaredInput }) => ({ toolCallId, name, declaredInput })) }
      : { tool: item.name, toolCallId: item.toolCallId, status: item.status, effectiveInput: item.effectiveInput, output: item.toolCall.output, error: item.toolCall.error },
  );
}

/**
 * One counter for the run, taken when each event happened: every tool starts after the model
 * call that declared it finished (parallel tools may interleave), and the next model call
 * starts after everything before it ended.
 */
function expectOneOrderedSequence(items: ThreadAuditItem[]) {
  let highestBefore = 0;
  let modelFinished = 0;
  for (const item of items) {
    const [start, end] = [Number(item.sequence), Number(item.finishedSequence)];
    expect(end).toBeGreaterThan(start);
    if (item.__typename === 'ModelAudit') {
      expect(start).toBeGreaterThan(highestBefore);
      modelFinished = end;
    } else {
      expect(start).toBeGreaterThan(modelFinished);
    }
    highestBefore = Math.max(highestBefore, end);
  }
  const all = items.flatMap((item) => [item.sequence, item.finishedSequence]);
  expect(new Set(all).size).toBe(all.length);
}

/** Waits until the timeline shows a tool audit RUNNING. */
const untilAToolRuns = (t: { timeline: () => Promise<ThreadAuditItem[]> }) =>
  vi.waitFor(async () => expect(toolsOf(await t.timeline()).map((item) => item.status)).toContain('RUNNING'), { timeout: 10_000, interval: 50 });

const asModel = (item: ThreadAuditItem | undefined) => {
  expect(item?.__typename).toBe('ModelAudit');
  return item as ModelAudit;
};
const toolsOf = (items: ThreadAuditItem[]) => items.filter((item): item is ToolAuditWithLinks => item.__typename === 'ToolAudit');

/** The same id for every call: as a model that numbers its calls afresh each step (call_0 every time). */
const asCall0 = (call: ScriptedCall) => ({ ...call, id: 'call_0' });

/** Runs the scripted turns through generateText on a new run of the thread, which must end COMPLETED with every write landed. */
async function completedRun<TOOLS extends ToolSet>(t: Awaited<ReturnType<typeof openThread>>, turns: ScriptedTurn[], tools: TOOLS) {
  const runId = await t.newRun();
  const finished = await t.audit.generateText(runId, { model: scriptedModel(turns), tools, prompt: 'Go.', stopWhen: stepCountIs(turns.length + 1) });
  expect(finished).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
  return finished;
}

/** Several steps: parallel calls (one of which throws, one where the schema's default applies), then one more call. */
const severalSteps = () => [
  turn('Checking both cities and mailing you.', [
    callTool('get_weather', { city: 'Paris' }),
    callTool('get_weather', { city: 'Oslo', units: 'imperial' }),
    callTool('send_email', { to: 'me@example.com' }),
  ]),
  turn('The mail failed; one more city.', [callTool('get_weather', { city: 'Rome' })]),
  turn('Sunny in Paris, Oslo and Rome.'),
];

/** Loses the answer to the first request carrying a finishRun (as a reset connection would, after the server committed it): the client resends it. */
const losingFirstFinishAnswer = () => losingFirstResponses((body) => body.includes('finishRun'));

/** Sends finishRun with a token the server refuses, as once the worker's token has expired. */
const expiredTokenForFinish: FetchLike = (url, init) =>
  fetch(url, String(init.body).includes('finishRun') ? { ...init, headers: { ...(init.headers as Record<string, string>), authorization: 'Bearer expired' } } : init);

describe(`the AI SDK adapter against the server process (${backendName})`, () => {
  it('a lost answer to finishRun, resent and refused because the first attempt ended the run, is still a success', async () => {
    const network = losingFirstFinishAnswer();
    const t = await openThread('ai-sdk: finish answer lost', { workerFetch: network });
    const runId = await t.newRun();
    const { status, result } = await t.audit.generateText(runId, { model: scriptedModel([turn('Hello.')]), prompt: 'Hi.' });
    expect(network.lost).toHaveLength(1);
    expect(status).toBe('COMPLETED');
    expect(result.text).toBe('Hello.');
    expect((await t.owner.run(runId))?.status).toBe('COMPLETED');
  });

  it('a run that cannot be ended (the token expired) still hands the agent\'s result back, with the recording error', async () => {
    const t = await openThread('ai-sdk: finish refused', { workerFetch: expiredTokenForFinish });
    const runId = await t.newRun();
    const { result, status, run, recordingError } = await t.audit.generateText(runId, { model: scriptedModel([turn('Hello.')]), prompt: 'Hi.' });
    expect(result.text).toBe('Hello.');
    expect(status).toBe('COMPLETED');
    expect(run).toBeNull();
    expect(recordingError).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await t.owner.run(runId))?.status).toBe('RUNNING');
  });

  it('generateText: several steps with parallel calls and a throwing tool match the timeline audit by audit', async () => {
    const t = await openThread('ai-sdk: generateText');
    const turns = severalSteps();
    const runId = await t.newRun();
    const { result, status, writeErrors } = await t.audit.generateText(runId, {
      model: scriptedModel(turns),
      tools: agentTools,
      prompt: 'Weather in Paris and Oslo, and mail me.',
      stopWhen: stepCountIs(5),
    });
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    expect(result.text).toBe('Sunny in Paris, Oslo and Rome.');
    expect(result.steps).toHaveLength(3);

    const items = await t.timeline();
    expect(whatWasRecorded(items)).toEqual(whatTheAgentDid(turns, result.steps));
    expectOneOrderedSequence(items);
    // Declared vs effective: the SDK filled in the schema's default the model left out.
    const paris = toolsOf(items).find((item) => item.effectiveInput && (item.effectiveInput as { city?: string }).city === 'Paris')!;
    expect(paris.toolCall).toMatchObject({ declaredInput: { city: 'Paris' }, effectiveInput: { city: 'Paris', units: 'metric' } });
    expect(paris.output).toEqual({ type: 'tool', tool_call_id: paris.toolCallId, name: 'get_weather', status: 'success', content: 'Sunny, 21 °C in Paris' });
    // The throw was recorded as it happened (a bare error) and settled FAILED from the SDK's tool error.
    const email = toolsOf(items).find((item) => item.name === 'send_email')!;
    expect(email).toMatchObject({ status: 'FAILED', awaitingRunTerminal: false, error: expect.objectContaining({ message: 'SMTP server timed out' }) });

    const first = asModel(items[0]);
    expect(first.model).toBe('scripted-model');
    expect(first.input).toEqual({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Oslo, and mail me.' }] }] });
    expect(first.output).toEqual(outputOf(turns[0]!));
    expect(first.usage).toMatchObject({ inputTokens: { total: 12 } });
    expect(items.filter((item) => item.__typename === 'ToolAudit').every((item) => item.durationMs !== null)).toBe(true);
    expect((await t.owner.run(runId))?.status).toBe('COMPLETED');
  });

  it('streamText: the streamed run records the same audits, each tool started only after its model call was recorded', async () => {
    const t = await openThread('ai-sdk: streamText');
    const turns = severalSteps();
    const runId = await t.newRun();
    const { result, finished } = await t.audit.streamText(runId, {
      // Parts some time apart, as a provider streams them.
      model: scriptedModel(turns, { chunkMs: 20 }),
      tools: agentTools,
      prompt: 'Weather in Paris and Oslo, and mail me.',
      stopWhen: stepCountIs(5),
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(await finished).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    expect(text).toContain('Sunny in Paris, Oslo and Rome.');

    const items = await t.timeline();
    expect(whatWasRecorded(items)).toEqual(whatTheAgentDid(turns, await result.steps));
    expectOneOrderedSequence(items);
    // The streamed response is recorded whole, as a generated one is.
    expect(items.filter((item) => item.__typename === 'ModelAudit').map((item) => item.output)).toEqual(turns.map(outputOf));
  });

  it('a tool whose execute returns an async iterable (not declared async function*) streams as it does without the adapter', async () => {
    const t = await openThread('ai-sdk: iterable tool');
    async function* progress(steps: number) {
      for (let step = 1; step <= steps; step++) yield { step, of: steps };
    }
    // A plain function handing back a generator, as a wrapper or transpiled code does.
    const tools = { progress: tool({ inputSchema: z.object({ steps: z.number() }), execute: ({ steps }) => progress(steps) }) };
    const call = callTool('progress', { steps: 3 });
    const turns = [turn('Working.', [call]), turn('Done.')];
    const options = { tools, prompt: 'Go.', stopWhen: stepCountIs(3) };
    const bare = await generateText({ ...options, model: scriptedModel(turns) });
    expect(bare.steps[0]!.toolResults[0]?.output).toEqual({ step: 3, of: 3 });

    const runId = await t.newRun();
    const { result, status } = await t.audit.generateText(runId, { ...options, model: scriptedModel(turns) });
    expect(status).toBe('COMPLETED');
    expect(result.steps[0]!.toolResults[0]?.output).toEqual({ step: 3, of: 3 });
    const [recorded] = toolsOf(await t.timeline());
    expect(recorded).toMatchObject({ toolCallId: call.id, status: 'COMPLETED', toolCall: { output: { step: 3, of: 3 } } });
  });

  it('a model that numbers its calls afresh each step (call_0 every time): each later declaration is recorded as call_0#n', async () => {
    const t = await openThread('ai-sdk: reused tool call ids');
    await completedRun(t, [
      turn('Paris first.', [asCall0(callTool('get_weather', { city: 'Paris' }))]),
      turn('Now Oslo.', [asCall0(callTool('get_weather', { city: 'Oslo' }))]),
      turn('Now the mail.', [asCall0(callTool('send_email', { to: 'me@example.com' }))]),
      turn('Sunny in both; the mail failed.'),
    ], agentTools);
    const items = await t.timeline();
    expect(whatWasRecorded(items).map((item) => (item.declares ? item.declares.map((call) => call.toolCallId) : [item.toolCallId, item.status, item.effectiveInput]))).toEqual([
      ['call_0'],
      ['call_0', 'COMPLETED', { city: 'Paris', units: 'metric' }],
      ['call_0#2'],
      ['call_0#2', 'COMPLETED', { city: 'Oslo', units: 'metric' }],
      ['call_0#3'],
      ['call_0#3', 'FAILED', { to: 'me@example.com' }],
      [],
    ]);
    expect(toolsOf(items).map((item) => item.output && (item.output as { tool_call_id: string }).tool_call_id)).toEqual(['call_0', 'call_0#2', 'call_0#3']);
  });

  it('two calls of one response with the same id: each execution is recorded under its own declaration, a throw settled too', async () => {
    const t = await openThread('ai-sdk: one id twice in a response');
    await completedRun(t, [
      turn('Both cities, then the mail.', [
        asCall0(callTool('get_weather', { city: 'Paris' })),
        asCall0(callTool('get_weather', { city: 'Oslo' })),
        asCall0(callTool('send_email', { to: 'me@example.com' })),
      ]),
      turn('Sunny in both; the mail failed.'),
    ], agentTools);
    const items = await t.timeline();
    expect(toolsOf(items).map((item) => [item.toolCallId, item.status, item.effectiveInput, item.toolCall.declaredInput])).toEqual([
      ['call_0', 'COMPLETED', { city: 'Paris', units: 'metric' }, { city: 'Paris' }],
      ['call_0#2', 'COMPLETED', { city: 'Oslo', units: 'metric' }, { city: 'Oslo' }],
      ['call_0#3', 'FAILED', { to: 'me@example.com' }, { to: 'me@example.com' }],
    ]);
    expect(toolsOf(items).every((item) => !item.awaitingRunTerminal)).toBe(true);
  });

  it('a tool output holding a NUL character (which the database cannot store) leaves the rest of the run on the timeline', async () => {
    const t = await openThread('ai-sdk: NUL in a tool output');
    const tools = { ...agentTools, read_file: tool({ inputSchema: z.object({ path: z.string() }), execute: async () => 'PK\u0003\u0004\u0000\u0000 binary' }) };
    const turns = [turn('Reading it.', [callTool('read_file', { path: 'a.zip' })]), turn('Now the weather.', [callTool('get_weather', { city: 'Rome' })]), turn('Sunny.')];
    const runId = await t.newRun();
    const { status, writeErrors } = await t.audit.generateText(runId, { model: scriptedModel(turns), tools, prompt: 'Go.', stopWhen: stepCountIs(4) });
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    const items = await t.timeline();
    expect(items.map((item) => [item.__typename, item.status])).toEqual([
      ['ModelAudit', 'COMPLETED'],
      ['ToolAudit', 'COMPLETED'],
      ['ModelAudit', 'COMPLETED'],
      ['ToolAudit', 'COMPLETED'],
      ['ModelAudit', 'COMPLETED'],
    ]);
    expect(toolsOf(items)[0]!.toolCall.output).toBe('PK\u0003\u0004\uFFFD\uFFFD binary');
  });

  it('an aborted call ends the run CANCELLED, with the tool it stopped', async () => {
    const t = await openThread('ai-sdk: aborted');
    const approval = callTool('wait_for_approval', { request: 'deploy' });
    const runId = await t.newRun();
    const abort = new AbortController();
    const call = t.audit.generateText(runId, {
      model: scriptedModel([turn('Asking for approval.', [approval]), turn('Deployed.')]),
      tools: agentTools,
      prompt: 'Deploy.',
      stopWhen: stepCountIs(3),
      abortSignal: abort.signal,
    });
    await untilAToolRuns(t);
    abort.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });

    expect((await t.owner.run(runId))?.status).toBe('CANCELLED');
    const items = await t.timeline();
    expect(items.map((item) => [item.__typename, item.status])).toEqual([
      ['ModelAudit', 'COMPLETED'],
      ['ToolAudit', 'CANCELLED'],
    ]);
    expect(toolsOf(items)[0]!.toolCallId).toBe(approval.id);
  });

  it('an aborted stream ends the run CANCELLED, the model call it stopped keeping the text streamed so far', async () => {
    const t = await openThread('ai-sdk: aborted stream');
    const runId = await t.newRun();
    const abort = new AbortController();
    const { result, finished } = await t.audit.streamText(runId, {
      model: scriptedModel([turn('A long answer that is streamed one word every half second.')], { chunkMs: 500 }),
      prompt: 'Tell me everything.',
      abortSignal: abort.signal,
    });
    for await (const delta of result.textStream) {
      if (delta.trim() !== '') {
        abort.abort();
        break;
      }
    }
    // The run was recorded (CANCELLED): finished says so, with the stream's error.
    await expect(finished).resolves.toMatchObject({ status: 'CANCELLED', run: { status: 'CANCELLED' }, error: { name: 'AbortError' } });
    expect((await t.owner.run(runId))?.status).toBe('CANCELLED');
    const items = await t.timeline();
    // Stopped mid-answer: FAILED with the abort, as an aborted generateText call is, with what the user saw.
    expect(items.map((item) => [item.__typename, item.status])).toEqual([['ModelAudit', 'FAILED']]);
    expect(asModel(items[0])).toMatchObject({ output: { content: [{ type: 'text', text: 'A ' }] }, error: { name: 'AbortError' } });
  });

  it('a stream stopped after a tool call arrived: the call is declared, so the tool the SDK still runs at the finish part is on the timeline', async () => {
    const t = await openThread('ai-sdk: stopped at a tool call');
    const call = callTool('get_weather', { city: 'Paris' });
    // A provider stream that does not stop at the abort: the SDK runs the call once its finish part comes.
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: simulateReadableStream({
          chunkDelayInMs: 200,
          chunks: [
            { type: 'stream-start' as const, warnings: [] },
            { type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.args) },
            { type: 'finish' as const, finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 0, reasoning: 0 } } },
          ],
        }),
      }),
    });
    const runId = await t.newRun();
    const abort = new AbortController();
    const { result, finished } = await t.audit.streamText(runId, { model, tools: agentTools, prompt: 'Weather?', abortSignal: abort.signal, stopWhen: stepCountIs(2) });
    for await (const part of result.fullStream) {
      if (part.type === 'tool-input-start' || part.type === 'tool-call') {
        abort.abort();
        break;
      }
    }
    expect(await finished).toMatchObject({ status: 'CANCELLED', writeErrors: [] });
    const items = await t.timeline();
    expect(asModel(items[0])).toMatchObject({ status: 'FAILED', error: { name: 'AbortError' } });
    expect(asModel(items[0]).toolCalls.map((declared) => declared.toolCallId)).toEqual([call.id]);
    expect(toolsOf(items).map((tool) => tool.toolCallId)).toEqual([call.id]);
  });

  it('a stream that breaks (the connection drops mid-answer) records the model call FAILED with its error and the text streamed so far', async () => {
    const t = await openThread('ai-sdk: stream broken');
    const runId = await t.newRun();
    const model = new MockLanguageModelV3({
      modelId: 'dropping-stream',
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            controller.enqueue({ type: 'text-start', id: 'text' });
            controller.enqueue({ type: 'text-delta', id: 'text', delta: 'partial' });
            setTimeout(() => controller.error(new TypeError('terminated')), 50);
          },
        }),
      }),
    });
    const { result, finished } = await t.audit.streamText(runId, { model, prompt: 'Go.', onError: () => {} });
    const read = async () => {
      for await (const _ of result.textStream);
    };
    await expect(read()).rejects.toThrow('terminated');
    await expect(finished).resolves.toMatchObject({ status: 'FAILED', writeErrors: [], error: { message: 'terminated' } });
    const items = await t.timeline();
    expect(items.map((item) => [item.__typename, item.status])).toEqual([['ModelAudit', 'FAILED']]);
    expect(asModel(items[0])).toMatchObject({ output: { content: [{ type: 'text', text: 'partial' }] }, error: { name: 'TypeError', message: 'terminated' } });
  });

  it('a stream carrying an error part ends the run FAILED; finished resolves with that status and the error', async () => {
    const t = await openThread('ai-sdk: stream error part');
    const runId = await t.newRun();
    const model = new MockLanguageModelV3({
      modelId: 'breaking-stream',
      doStream: async () => ({
        stream: simulateReadableStream({
          chunks: [
            { type: 'stream-start' as const, warnings: [] },
            { type: 'text-start' as const, id: 'text' },
            { type: 'text-delta' as const, id: 'text', delta: 'partial' },
            { type: 'error' as const, error: new Error('provider stream broke') },
          ],
        }),
      }),
    });
    const seen: unknown[] = [];
    const { result, finished } = await t.audit.streamText(runId, { model, prompt: 'Go.', onError: ({ error }) => void seen.push(error) });
    for await (const _ of result.textStream);
    await expect(finished).resolves.toMatchObject({ status: 'FAILED', run: { status: 'FAILED' }, error: { message: 'provider stream broke' } });
    // The caller's own onError still hears of it.
    expect(seen).toMatchObject([{ message: 'provider stream broke' }]);
    expect((await t.owner.run(runId))?.status).toBe('FAILED');
    const items = await t.timeline();
    expect(items.map((item) => [item.__typename, item.status])).toEqual([['ModelAudit', 'FAILED']]);
    // What was streamed before the error is kept with it.
    expect(asModel(items[0])).toMatchObject({ output: { content: [{ type: 'text', text: 'partial' }] }, error: { message: 'provider stream broke' } });
  });

  it('a model call that throws is recorded FAILED with its error; the run ends FAILED and the error reaches the caller', async () => {
    const t = await openThread('ai-sdk: model error');
    const runId = await t.newRun();
    // One scripted turn: the agent's second model call finds the script empty and throws.
    const model = scriptedModel([turn('Checking.', [callTool('get_weather', { city: 'Rome' })])]);
    await expect(t.audit.generateText(runId, { model, tools: agentTools, prompt: 'Weather?', stopWhen: stepCountIs(3) })).rejects.toThrow(
      'the script has 1 turns',
    );
    expect((await t.owner.run(runId))?.status).toBe('FAILED');
    const items = await t.timeline();
    expect(items.map((item) => [item.__typename, item.status])).toEqual([
      ['ModelAudit', 'COMPLETED'],
      ['ToolAudit', 'COMPLETED'],
      ['ModelAudit', 'FAILED'],
    ]);
    expect(asModel(items[2]).error).toEqual({ name: 'Error', message: 'the script has 1 turns; the agent asked for another' });
  });

  it('a lease lost mid-run stops the agent through its abort signal, with AuditLeaseLostError', async () => {
    // Renewed every 5 s: a renewal has 10 s to commit before the lease expires, room for a loaded
    // machine (with 3 s leases, an expiry before the cancel ended the run FAILED instead).
    const t = await openThread('ai-sdk: lease lost', { leaseSeconds: 15 });
    const runId = await t.newRun();
    const model = scriptedModel([turn('Asking for approval.', [callTool('wait_for_approval', { request: 'deploy', seconds: 60 })]), turn('Deployed.')]);
    const call = t.audit.generateText(runId, { model, tools: agentTools, prompt: 'Deploy.', stopWhen: stepCountIs(3) });
    await untilAToolRuns(t);
    await t.owner.cancelRun(runId);
    // The keeper's next renewal finds the lease gone and aborts the 60-second tool at once.
    await expect(call).rejects.toBeInstanceOf(AuditLeaseLostError);
    expect(model.doGenerateCalls).toHaveLength(1);
    expect((await t.timeline()).map((item) => item.status)).toEqual(['COMPLETED', 'CANCELLED']);
  });

  it('a lease lost found by a write stops the agent before its next model call', async () => {
    const t = await openThread('ai-sdk: lease lost on write');
    const runId = await t.newRun();
    const cancelling = {
      cancel_myself: { ...agentTools.get_weather, execute: async () => (await t.owner.cancelRun(runId)).status },
    };
    const model = scriptedModel([turn('Cancelling.', [callTool('cancel_myself', { city: 'Nowhere' })]), turn('Never said.')]);
    await expect(t.audit.generateText(runId, { model, tools: cancelling, prompt: 'Go.', stopWhen: stepCountIs(3) })).rejects.toBeInstanceOf(
      AuditLeaseLostError,
    );
    expect(model.doGenerateCalls).toHaveLength(1);
    expect((await t.owner.run(runId))?.status).toBe('CANCELLED');
  });

  it('a thread deleted mid-run (its run NOT_FOUND at the next write) stops the agent before its next model call, with AuditLeaseLostError', async () => {
    const t = await openThread('ai-sdk: thread deleted mid-run');
    const runId = await t.newRun();
    const erasing = {
      erase_my_thread: { ...agentTools.get_weather, execute: async () => (await t.owner.deleteThread(t.threadId)).threadId },
    };
    const model = scriptedModel([turn('Erasing.', [callTool('erase_my_thread', { city: 'Nowhere' })]), turn('Never said.')]);
    const writeErrors: unknown[] = [];
    const audit = new AiSdkAudit(t.worker, { leaseSeconds: 30, onWriteError: (error) => writeErrors.push(error) });
    const refused = await audit.generateText(runId, { model, tools: erasing, prompt: 'Go.', stopWhen: stepCountIs(3) }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuditLeaseLostError);
    expect(((refused as AuditLeaseLostError).cause as { code: string }).code).toBe('NOT_FOUND');
    expect(model.doGenerateCalls).toHaveLength(1);
    expect(writeErrors).toEqual([]);
  });

  it('a tool that throws something other than an Error is settled with the error text the SDK gave the model', async () => {
    const t = await openThread('ai-sdk: thrown non-errors');
    const throwing = (thrown: unknown) => tool({ inputSchema: z.object({}), execute: async (): Promise<string> => Promise.reject(thrown) });
    const tools = { throws_object: throwing({ code: 42 }), throws_null: throwing(null), throws_string: throwing('plain text') };
    const { result } = await completedRun(t, [turn('Trying.', [callTool('throws_object', {}), callTool('throws_null', {}), callTool('throws_string', {})]), turn('All failed.')], tools);
    // What the second model call was told about each tool (the SDK's error text).
    const toolMessage = result.response.messages.find((message) => message.role === 'tool')!;
    const errorTexts = Object.fromEntries(
      (toolMessage.content as { toolName: string; output: { type: string; value: unknown } }[]).map((part) => [part.toolName, part.output.value]),
    );
    expect(errorTexts).toEqual({ throws_object: '{"code":42}', throws_null: 'unknown error', throws_string: 'plain text' });
    const recorded = Object.fromEntries(toolsOf(await t.timeline()).map((item) => [item.name, [item.status, item.toolCall.output]]));
    expect(recorded).toEqual({ throws_object: ['FAILED', '{"code":42}'], throws_null: ['FAILED', 'unknown error'], throws_string: ['FAILED', 'plain text'] });
  });

  it('a call the SDK never ran (an unknown tool, input its schema refuses) is recorded FAILED with the error the model was told', async () => {
    const t = await openThread('ai-sdk: calls that never ran');
    const turns = [
      turn('Trying.', [callTool('delete_everything', { really: true }), callTool('get_weather', { city: 42 }), callTool('get_weather', { city: 'Oslo' })]),
      turn('Two of those could not run.'),
    ];
    const { result } = await completedRun(t, turns, agentTools);
    const toolMessage = result.response.messages.find((message) => message.role === 'tool')!;
    const told = (toolMessage.content as { toolCallId: string; output: { type: string; value: unknown } }[]).filter((part) => part.output.type === 'error-text');
    expect(told).toHaveLength(2);
    const tools = toolsOf(await t.timeline());
    const [unknown, refused, ran] = turns[0]!.toolCalls.map((call) => tools.find((item) => item.toolCallId === call.id));
    for (const [item, declared] of [[unknown, turns[0]!.toolCalls[0]!], [refused, turns[0]!.toolCalls[1]!]] as const) {
      const said = told.find((part) => part.toolCallId === declared.id)!.output.value;
      expect(item).toMatchObject({ name: declared.name, status: 'FAILED', effectiveInput: declared.args, toolCall: { status: 'FAILED', output: said } });
    }
    expect(unknown!.toolCall.output).toMatch(/delete_everything/);
    expect(ran).toMatchObject({ status: 'COMPLETED' });
  });

  it('a step that stops for tool approval (needsApproval) ends the run INTERRUPTED; the approved call runs in a resumed run', async () => {
    const t = await openThread('ai-sdk: tool approval');
    const tools = {
      deploy: tool({ inputSchema: z.object({ target: z.string() }), needsApproval: true, execute: async ({ target }) => `deployed ${target}` }),
      backup: tool({ inputSchema: z.object({}), execute: async (): Promise<string> => Promise.reject(new Error('disk full')) }),
    };
    const model = scriptedModel([turn('Deploying.', [callTool('deploy', { target: 'prod' }), callTool('backup', {})]), turn('Deployed.')]);
    const firstRun = await t.newRun();
    const first = await t.audit.generateText(firstRun, { model, tools, prompt: 'Deploy.', stopWhen: stepCountIs(3) });
    const request = first.result.content.find((part) => part.type === 'tool-approval-request')!;
    expect(first.status).toBe('INTERRUPTED');
    expect((await t.owner.run(firstRun))?.status).toBe('INTERRUPTED');
    // The tool that threw in the paused step is settled FAILED, not sent back to PENDING.
    expect(toolsOf(await t.timeline()).map((item) => [item.name, item.status, item.toolCall.status])).toEqual([['backup', 'FAILED', 'FAILED']]);

    const { id: resumed } = await t.owner.createRun({ threadId: (await t.owner.run(firstRun))!.thread.id, resumeFromRunId: firstRun });
    const messages = [
      { role: 'user' as const, content: 'Deploy.' },
      ...first.result.response.messages,
      { role: 'tool' as const, content: [{ type: 'tool-approval-response' as const, approvalId: request.approvalId, approved: true }] },
    ];
    const second = await t.audit.generateText(resumed, { model, tools, messages, stopWhen: stepCountIs(3) });
    expect(second).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    const deploy = toolsOf(await t.timeline()).find((item) => item.name === 'deploy')!;
    expect(deploy).toMatchObject({ runId: resumed, status: 'COMPLETED', toolCall: { output: 'deployed prod' } });
  });

  it('never holds the agent on an unanswering server beyond the budget; the writes land in order afterwards', async () => {
    let holding = false;
    const held: (() => void)[] = [];
    const heldFetch: FetchLike = async (url, init) => {
      if (holding) await new Promise<void>((release) => held.push(release));
      return fetch(url, init);
    };
    const t = await openThread('ai-sdk: slow server', { workerFetch: heldFetch, budgetMs: 20 });
    const turns = [turn('Checking.', [callTool('get_weather', { city: 'Rome' })]), turn('Sunny in Rome.')];
    const runId = await t.newRun();
    const run = await t.audit.start(runId);
    holding = true;
    const result = await generateText(run.record({ model: scriptedModel(turns), tools: agentTools, prompt: 'Weather in Rome?', stopWhen: stepCountIs(3) }));
    expect(result.text).toBe('Sunny in Rome.');
    expect(held.length).toBeGreaterThan(0);
    expect(await t.timeline()).toEqual([]);

    holding = false;
    held.splice(0).forEach((release) => release());
    expect(await run.finish({ steps: result.steps })).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    const items = await t.timeline();
    expect(whatWasRecorded(items)).toEqual(whatTheAgentDid(turns, result.steps));
    expectOneOrderedSequence(items);
  });
});
