// The LangGraph.js adapter against the real framework and the real server process: a ReAct
// graph (StateGraph + ToolNode, a scripted FakeListChatModel, real tools) is invoked through
// LangGraphAudit, and the owner reads the run back with threadAudits.
import { AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { Command, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { tool } from '@langchain/core/tools';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { z } from 'zod';
import { describe, expect, it, vi } from 'vitest';
import { AuditClient, type FetchLike, type JsonObject, type ModelAudit, type ThreadAuditItem, type ToolAuditWithLinks } from '@agent-audit/client';
import { AuditLeaseLostError, LangGraphAudit } from '@agent-audit/client/langgraph';
import { LARGE_LOG_LINES, ScriptedChatModel, buildReactAgent, callTool, turn } from '../../src/cli/langgraph-agent.js';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile } from './support/server.js';
import { losingFirstResponses } from './support/lossy-fetch.js';

const server = serverForFile();

/** A fresh owner, worker and thread; `workerFetch` replaces the worker's network. */
async function openThread(title: string, workerFetch?: FetchLike) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: workerFetch });
  const { id: threadId } = await owner.createThread({ title });
  const audit = new LangGraphAudit(worker, { leaseSeconds: 30 });
  return {
    owner,
    audit,
    threadId,
    config: { configurable: { thread_id: threadId } },
    newRun: async (resumeFromRunId?: string) => (await owner.createRun({ threadId, resumeFromRunId })).id,
    timeline: async () => (await owner.threadAudits(threadId)).items,
  };
}

const userSays = (content: string) => ({ messages: [{ role: 'user', content }] });

/** What a timeline shows at a glance: each audit's kind, name or declared calls, and status. */
function glance(items: ThreadAuditItem[]) {
  return items.map((item) =>
    item.__typename === 'ModelAudit'
      ? { model: item.status, runId: item.runId, declares: item.toolCalls.map((call) => call.toolCallId) }
      : { tool: item.name, toolCallId: item.toolCallId, status: item.status, runId: item.runId },
  );
}

const asModel = (item: ThreadAuditItem | undefined) => {
  expect(item?.__typename).toBe('ModelAudit');
  return item as ModelAudit;
};
const asTool = (item: ThreadAuditItem | undefined) => {
  expect(item?.__typename).toBe('ToolAudit');
  return item as ToolAuditWithLinks;
};

/** Loses the answer to the first request carrying a finishRun (as a reset connection would, after the server committed it): the client resends it. */
const losingFirstFinishAnswer = () => losingFirstResponses((body) => body.includes('finishRun'));

/** Sends finishRun with a token the server refuses, as once the worker's token has expired. */
const expiredTokenForFinish: FetchLike = (url, init) =>
  fetch(url, String(init.body).includes('finishRun') ? { ...init, headers: { ...(init.headers as Record<string, string>), authorization: 'Bearer expired' } } : init);

/**
 * A chat model that streams its answer word by word, `wordMs` apart, as a provider does (the
 * scripted model streams only its script index); `brokenAt` makes the connection drop there.
 */
class StreamingChatModel extends ScriptedChatModel {
  constructor(
    private readonly answer: string,
    private readonly options: { wordMs: number; brokenAt?: number },
  ) {
    super([turn(answer)]);
  }

  override async *_streamResponseChunks(_messages: BaseMessage[], _options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun) {
    const words = this.answer.split(/(?<= )/);
    for (const [index, word] of words.entries()) {
      await new Promise((resolve) => setTimeout(resolve, this.options.wordMs));
      if (index === this.options.brokenAt) throw new TypeError('terminated');
      const chunk = new ChatGenerationChunk({ text: word, message: new AIMessageChunk({ content: word }) });
      yield chunk;
      await runManager?.handleLLMNewToken(word, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

/** A one-node graph whose node calls `model` (so LangGraph's stream modes stream its tokens). */
const oneModelGraph = (model: StreamingChatModel) =>
  new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state: { messages: BaseMessage[] }, config) => ({ messages: [await model.invoke(state.messages, config)] }))
    .addEdge(START, 'agent')
    .addEdge('agent', END)
    .compile();

describe(`the LangGraph.js adapter against the server process (${backendName})`, () => {
  it('a lost answer to finishRun, resent and refused because the first attempt ended the run, is still a success', async () => {
    const network = losingFirstFinishAnswer();
    const t = await openThread('langgraph: finish answer lost', network);
    const graph = buildReactAgent([turn('Checking.', [callTool('get_weather', { city: 'Rome' })]), turn('Sunny in Rome.')]);
    const runId = await t.newRun();
    const { status, state } = await t.audit.invoke(runId, graph, userSays('Weather in Rome?'), t.config);
    expect(network.lost).toHaveLength(1);
    expect(status).toBe('COMPLETED');
    expect(state.messages.at(-1)?.content).toBe('Sunny in Rome.');
    expect((await t.owner.run(runId))?.status).toBe('COMPLETED');
  });

  it('a run that cannot be ended (the token expired) still hands the final state back, with the recording error', async () => {
    const t = await openThread('langgraph: finish refused', expiredTokenForFinish);
    const graph = buildReactAgent([turn('Hello.')]);
    const runId = await t.newRun();
    const { state, status, run, recordingError } = await t.audit.invoke(runId, graph, userSays('Hi.'), t.config);
    expect(state.messages.at(-1)?.content).toBe('Hello.');
    expect(status).toBe('COMPLETED');
    expect(run).toBeNull();
    expect(recordingError).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await t.owner.run(runId))?.status).toBe('RUNNING');
  });

  it('records model -> parallel tools -> model, with the declared calls, inputs, outputs and one sequence', async () => {
    const t = await openThread('langgraph: parallel tools');
    const paris = callTool('get_weather', { city: 'Paris' });
    const oslo = callTool('get_weather', { city: 'Oslo', units: 'imperial' });
    const graph = buildReactAgent([turn('Checking both cities.', [paris, oslo]), turn('Sunny in both.')]);

    const runId = await t.newRun();
    const { status, state, writeErrors } = await t.audit.invoke(runId, graph, userSays('Weather in Paris and Oslo?'), t.config);
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    expect(state.messages.at(-1)?.content).toBe('Sunny in both.');

    const items = await t.timeline();
    const [first, toolA, toolB, second] = items;
    const tools = [asTool(toolA), asTool(toolB)].sort((a, b) => a.toolCallId.localeCompare(b.toolCallId));
    const byId = Object.fromEntries(tools.map((audit) => [audit.toolCallId, audit]));
    expect(glance([first!, ...tools, second!])).toEqual([
      { model: 'COMPLETED', runId, declares: [paris.id, oslo.id] },
      ...[paris, oslo]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((call) => ({ tool: 'get_weather', toolCallId: call.id, status: 'COMPLETED', runId })),
      { model: 'COMPLETED', runId, declares: [] },
    ]);
    expect(items).toHaveLength(4);

    const model = asModel(first);
    expect(model.model).toBe('ScriptedChatModel');
    expect(model.input).toEqual({ messages: [expect.objectContaining({ type: 'human', content: 'Weather in Paris and Oslo?' })] });
    expect(model.output).toMatchObject({ type: 'ai', content: 'Checking both cities.', tool_calls: [paris, oslo].map(({ id, name, args }) => ({ id, name, args })) });
    expect([model.sequence, model.finishedSequence]).toEqual(['1', '2']);

    expect(byId[paris.id]).toMatchObject({
      effectiveInput: { city: 'Paris' },
      output: { type: 'tool', tool_call_id: paris.id, name: 'get_weather', status: 'success', content: 'Sunny, 21 °C in Paris' },
      error: null,
      declaredBy: { id: model.id },
      toolCall: { status: 'COMPLETED', output: 'Sunny, 21 °C in Paris' },
    });
    expect(byId[oslo.id]).toMatchObject({ effectiveInput: { city: 'Oslo', units: 'imperial' }, toolCall: { output: 'Sunny, 70 °F in Oslo' } });
    for (const audit of tools) expect(audit.durationMs).toEqual(expect.any(Number));

    // One counter for the run: the tools come after the declaring call and before the next one.
    const last = asModel(second);
    const toolSequences = tools.flatMap((audit) => [Number(audit.sequence), Number(audit.finishedSequence)]);
    expect(Math.min(...toolSequences)).toBeGreaterThan(Number(model.finishedSequence));
    expect(Number(last.sequence)).toBeGreaterThan(Math.max(...toolSequences));
    expect((last.input as { messages: { type: string }[] }).messages.map((message) => message.type)).toEqual(['human', 'ai', 'tool', 'tool']);
    expect((await t.owner.run(runId))?.status).toBe('COMPLETED');
  });

  it('an error ToolMessage is a controlled failure; a thrown tool error is a bare error settled from the final state', async () => {
    const t = await openThread('langgraph: tool errors');
    const lookup = callTool('lookup_invoice', { invoice: 42 });
    const email = callTool('send_email', { to: 'me@example.com' });
    const graph = buildReactAgent([turn('Looking it up and mailing it.', [lookup, email]), turn('Neither worked.')]);

    const runId = await t.newRun();
    const { status, state } = await t.audit.invoke(runId, graph, userSays('Email me invoice 42.'), t.config);
    expect(status).toBe('COMPLETED');
    // ToolNode caught the throw and put an error ToolMessage into the state.
    const stateError = state.messages.find((message: BaseMessage) => (message as { tool_call_id?: string }).tool_call_id === email.id);
    expect(stateError).toMatchObject({ status: 'error', content: expect.stringContaining('SMTP server timed out') });

    const items = await t.timeline();
    expect(items).toHaveLength(4);
    const tools = Object.fromEntries(items.filter((item) => item.__typename === 'ToolAudit').map((item) => [asTool(item).name, asTool(item)]));
    expect(tools.lookup_invoice).toMatchObject({
      status: 'FAILED',
      output: { status: 'error', content: 'Invoice 42 not found', tool_call_id: lookup.id },
      awaitingRunTerminal: false,
      toolCall: { status: 'FAILED', output: 'Invoice 42 not found' },
    });
    // The bare error recorded when the tool threw is kept; the final state's ToolMessage is its output.
    expect(tools.send_email).toMatchObject({
      status: 'FAILED',
      output: { status: 'error', tool_call_id: email.id, content: stateError!.content },
      error: { name: 'Error', message: 'SMTP server timed out' },
      awaitingRunTerminal: false,
      toolCall: { status: 'FAILED', output: stateError!.content },
    });
    expect(tools.send_email!.finishedAt).not.toBeNull();
  });

  it('a call ToolNode never ran (a tool it does not have, input the schema refuses) is recorded FAILED with the error ToolMessage', async () => {
    const t = await openThread('langgraph: calls that never ran');
    const unknown = callTool('delete_everything', { really: true });
    const refused = callTool('get_weather', { city: 42 });
    const ran = callTool('get_weather', { city: 'Oslo' });
    const graph = buildReactAgent([turn('Trying.', [unknown, refused, ran]), turn('Two of those could not run.')]);
    const runId = await t.newRun();
    const { status, state } = await t.audit.invoke(runId, graph, userSays('Go.'), t.config);
    expect(status).toBe('COMPLETED');
    const toolMessageOf = (call: typeof unknown) => state.messages.find((message: BaseMessage) => (message as { tool_call_id?: string }).tool_call_id === call.id)!;
    const tools = (await t.timeline()).filter((item) => item.__typename === 'ToolAudit').map(asTool);
    for (const call of [unknown, refused]) {
      const told = toolMessageOf(call);
      expect(told).toMatchObject({ status: 'error' });
      expect(tools.find((item) => item.toolCallId === call.id)).toMatchObject({
        name: call.name,
        status: 'FAILED',
        effectiveInput: call.args,
        output: { status: 'error', tool_call_id: call.id, content: told.content },
        toolCall: { status: 'FAILED', output: told.content },
      });
    }
    expect(tools.find((item) => item.toolCallId === ran.id)).toMatchObject({ status: 'COMPLETED' });
  });

  it('a node retried by its retryPolicy runs its tools again in the same run: one audit per tool call, no write error', async () => {
    const t = await openThread('langgraph: node retry');
    const attempts = { flaky: 0, steady: 0 };
    const tools = [
      tool(async () => (++attempts.flaky < 3 ? Promise.reject(new Error(`transient ${attempts.flaky}`)) : 'ok'), { name: 'flaky', description: 'fails twice', schema: z.object({}) }),
      tool(async () => `steady ${++attempts.steady}`, { name: 'steady', description: 'always works', schema: z.object({}) }),
    ];
    const model = new ScriptedChatModel([turn('Trying.', [callTool('flaky', {}), callTool('steady', {})]), turn('Done.')]);
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state: { messages: BaseMessage[] }) => ({ messages: [await model.invoke(state.messages)] }))
      .addNode('tools', new ToolNode(tools, { handleToolErrors: false }), { retryPolicy: { maxAttempts: 3, initialInterval: 1, jitter: false, retryOn: () => true } })
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', toolsCondition, ['tools', END])
      .addEdge('tools', 'agent')
      .compile();
    const runId = await t.newRun();
    const { status, writeErrors } = await t.audit.invoke(runId, graph, userSays('Go.'), t.config);
    expect(attempts).toEqual({ flaky: 3, steady: 3 });
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    const tools_ = (await t.timeline()).filter((item) => item.__typename === 'ToolAudit').map(asTool);
    // The first attempt's start and error, and the end of the attempt that succeeded.
    expect(tools_.map((item) => [item.name, item.status, item.toolCall.output, item.error])).toEqual([
      ['flaky', 'COMPLETED', 'ok', { name: 'Error', message: 'transient 1' }],
      ['steady', 'COMPLETED', 'steady 1', null],
    ]);
  });

  it('a controlled failure carries its content as the error (SEMANTICS: error = {message: content})', async () => {
    const t = await openThread('langgraph: controlled failure error');
    const lookup = callTool('lookup_invoice', { invoice: 43 });
    const graph = buildReactAgent([turn('Looking it up.', [lookup]), turn('Not found.')]);
    await t.audit.invoke(await t.newRun(), graph, userSays('Find invoice 43.'), t.config);
    const failed = asTool((await t.timeline())[1]);
    expect(failed).toMatchObject({ status: 'FAILED', error: { message: 'Invoice 43 not found' }, toolCall: { error: { message: 'Invoice 43 not found' } } });
  });

  it('interrupt() ends the run INTERRUPTED; the resumed run\'s tool start binds to the interrupted run\'s model call', async () => {
    const t = await openThread('langgraph: interrupt and resume');
    const pay = callTool('pay_invoice', { invoice: 7, amount: 120 });
    const graph = buildReactAgent([turn('Paying (needs approval).', [pay]), turn('Paid.')]);

    const firstRunId = await t.newRun();
    const first = await t.audit.invoke(firstRunId, graph, userSays('Pay invoice 7.'), t.config);
    expect(first.status).toBe('INTERRUPTED');
    expect((await t.owner.run(firstRunId))?.toolCalls).toMatchObject([{ toolCallId: pay.id, status: 'PENDING' }]);

    const resumedRunId = await t.newRun(firstRunId);
    const resumed = await t.audit.invoke(resumedRunId, graph, new Command({ resume: 'approve' }), t.config);
    expect(resumed.status).toBe('COMPLETED');
    expect(resumed.state.messages.at(-1)?.content).toBe('Paid.');

    const items = await t.timeline();
    expect(glance(items)).toEqual([
      { model: 'COMPLETED', runId: firstRunId, declares: [pay.id] },
      { tool: 'pay_invoice', toolCallId: pay.id, status: 'INTERRUPTED', runId: firstRunId },
      { tool: 'pay_invoice', toolCallId: pay.id, status: 'COMPLETED', runId: resumedRunId },
      { model: 'COMPLETED', runId: resumedRunId, declares: [] },
    ]);
    const declaring = asModel(items[0]);
    expect(asTool(items[1])).toMatchObject({ declaredBy: { id: declaring.id }, error: expect.objectContaining({ name: 'GraphInterrupt' }) });
    expect(asTool(items[2])).toMatchObject({
      declaredBy: { id: declaring.id },
      sequence: '1',
      output: { content: 'paid invoice 7, reference PAY-7' },
      toolCall: { status: 'COMPLETED' },
    });
  });

  it('a tool that threw earlier in a run that then paused on interrupt() ends FAILED with its error, not back to PENDING', async () => {
    const t = await openThread('langgraph: bare error, then interrupt');
    const email = callTool('send_email', { to: 'me@example.com' });
    const pay = callTool('pay_invoice', { invoice: 8, amount: 90 });
    const graph = buildReactAgent([turn('Mailing it.', [email]), turn('The mail failed; paying instead.', [pay]), turn('Paid.')]);

    const firstRunId = await t.newRun();
    const first = await t.audit.invoke(firstRunId, graph, userSays('Mail or pay invoice 8.'), t.config);
    expect(first.status).toBe('INTERRUPTED');
    expect(first.writeErrors).toEqual([]);
    const stateError = first.state.messages.find((message: BaseMessage) => (message as { tool_call_id?: string }).tool_call_id === email.id);
    expect(stateError).toMatchObject({ status: 'error', content: expect.stringContaining('SMTP server timed out') });
    // The throw ended in the state's error ToolMessage: it is the tool's verdict, as at a COMPLETED end.
    const mailed = (await t.timeline()).filter((item) => item.__typename === 'ToolAudit' && item.toolCallId === email.id).map(asTool);
    expect(mailed).toHaveLength(1);
    expect(mailed[0]).toMatchObject({
      status: 'FAILED',
      output: { status: 'error', tool_call_id: email.id, content: stateError!.content },
      error: expect.objectContaining({ message: expect.stringContaining('SMTP server timed out') }),
      awaitingRunTerminal: false,
      toolCall: { status: 'FAILED', output: stateError!.content },
    });
    expect((await t.owner.run(firstRunId))?.toolCalls).toMatchObject([
      { toolCallId: email.id, status: 'FAILED' },
      { toolCallId: pay.id, status: 'PENDING' },
    ]);

    const resumed = await t.audit.invoke(await t.newRun(firstRunId), graph, new Command({ resume: 'approve' }), t.config);
    expect(resumed).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    expect(resumed.state.messages.at(-1)?.content).toBe('Paid.');
  });

  it('on a resume, a tool of the paused step that had completed runs again: not a write error, reported to onToolRerun', async () => {
    const t = await openThread('langgraph: resume re-runs a completed tool');
    const weather = callTool('get_weather', { city: 'Rome' });
    const pay = callTool('pay_invoice', { invoice: 9, amount: 30 });
    const graph = buildReactAgent([turn('Checking and paying.', [weather, pay]), turn('Paid; sunny in Rome.')]);
    const writeErrors: unknown[] = [];
    const reruns: unknown[] = [];
    const audit = new LangGraphAudit(new AuditClient({ url: server.url, token: (await e2eActors()).worker }), {
      onWriteError: (error) => writeErrors.push(error),
      onToolRerun: (rerun) => reruns.push(rerun),
    });

    const firstRunId = await t.newRun();
    expect((await audit.invoke(firstRunId, graph, userSays('Weather, and pay invoice 9.'), t.config)).status).toBe('INTERRUPTED');
    const resumedRunId = await t.newRun(firstRunId);
    const resumed = await audit.invoke(resumedRunId, graph, new Command({ resume: 'approve' }), t.config);
    expect(resumed).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    expect(writeErrors).toEqual([]);
    // LangGraph ran get_weather a second time; the server keeps its first (ended) execution.
    expect(reruns).toMatchObject([{ toolCallId: weather.id, name: 'get_weather', cause: { code: 'INVALID_TRANSITION' } }]);
    expect(glance(await t.timeline())).toEqual([
      { model: 'COMPLETED', runId: firstRunId, declares: [weather.id, pay.id] },
      { tool: 'get_weather', toolCallId: weather.id, status: 'COMPLETED', runId: firstRunId },
      { tool: 'pay_invoice', toolCallId: pay.id, status: 'INTERRUPTED', runId: firstRunId },
      { tool: 'pay_invoice', toolCallId: pay.id, status: 'COMPLETED', runId: resumedRunId },
      { model: 'COMPLETED', runId: resumedRunId, declares: [] },
    ]);
  });

  it('a resume after a crash cannot run the crashed run\'s ended tool calls again; the model is called again and its new calls are recorded', async () => {
    const t = await openThread('langgraph: resume after a crash');
    const done = callTool('get_weather', { city: 'Rome' });
    const inFlight = callTool('get_weather', { city: 'Oslo' });
    const declaring = turn('Checking both.', [done, inFlight]);
    const argsOf = (call: typeof done) => call.args as JsonObject;

    // The crashed worker: it recorded the model call, one finished tool and one started, then died
    // (no renewal). Its lease is short, yet long enough for its five writes on a loaded machine.
    const crashedRunId = await t.newRun();
    const crashed = new AuditClient({ url: server.url, token: (await e2eActors()).worker });
    const lease = await crashed.claimRun(crashedRunId, 4);
    await crashed.recordModelStarted({ lease, operationId: 'crashed-model', sequence: 1, model: 'scripted', input: {} });
    await crashed.recordModelFinished({ lease, operationId: 'crashed-model', status: 'COMPLETED', sequence: 2, output: {}, toolCalls: [done, inFlight].map((call) => ({ id: call.id, name: call.name, args: argsOf(call) })) });
    await crashed.recordToolStarted({ lease, toolCallId: done.id, name: 'get_weather', effectiveInput: argsOf(done), sequence: 3 });
    await crashed.recordToolFinished({ lease, toolCallId: done.id, output: { type: 'tool', status: 'success', content: 'Sunny in Rome' }, sequence: 4 });
    await crashed.recordToolStarted({ lease, toolCallId: inFlight.id, name: 'get_weather', effectiveInput: argsOf(inFlight), sequence: 5 });
    await vi.waitFor(async () => expect((await t.owner.run(crashedRunId))?.status).toBe('FAILED'), { timeout: 15_000, interval: 200 });

    // The resume replays the graph's checkpoint taken before the tools step: LangGraph runs both calls again.
    const fresh = callTool('get_weather', { city: 'Oslo' });
    const graph = buildReactAgent([turn('Oslo again.', [fresh]), turn('Sunny in Rome and Oslo.')]);
    await graph.updateState(t.config, { messages: [{ role: 'user', content: 'Weather in Rome and Oslo?' }, declaring] }, 'agent');
    const reruns: { toolCallId: string }[] = [];
    const writeErrors: unknown[] = [];
    const audit = new LangGraphAudit(new AuditClient({ url: server.url, token: (await e2eActors()).worker }), {
      onToolRerun: (rerun) => reruns.push(rerun),
      onWriteError: (error) => writeErrors.push(error),
    });
    const resumedRunId = await t.newRun(crashedRunId);
    const resumed = await audit.invoke(resumedRunId, graph, null as never, t.config);
    expect(resumed.status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    // Neither ended call could start again: their second executions are on no timeline.
    expect(reruns.map((rerun) => rerun.toolCallId).sort()).toEqual([done.id, inFlight.id].sort());
    expect(glance(await t.timeline())).toEqual([
      { model: 'COMPLETED', runId: crashedRunId, declares: [done.id, inFlight.id] },
      { tool: 'get_weather', toolCallId: done.id, status: 'COMPLETED', runId: crashedRunId },
      { tool: 'get_weather', toolCallId: inFlight.id, status: 'ABANDONED', runId: crashedRunId },
      { model: 'COMPLETED', runId: resumedRunId, declares: [fresh.id] },
      { tool: 'get_weather', toolCallId: fresh.id, status: 'COMPLETED', runId: resumedRunId },
      { model: 'COMPLETED', runId: resumedRunId, declares: [] },
    ]);
    expect((await t.owner.run(crashedRunId))?.toolCalls).toMatchObject([
      { toolCallId: done.id, status: 'COMPLETED' },
      { toolCallId: inFlight.id, status: 'FAILED' },
    ]);
  });

  it('records a large tool output whole', async () => {
    const t = await openThread('langgraph: large output');
    const read = callTool('read_log', { file: 'access.log' });
    const graph = buildReactAgent([turn('Reading the log.', [read]), turn(`The log has ${LARGE_LOG_LINES} lines.`)]);
    const runId = await t.newRun();
    const { state } = await t.audit.invoke(runId, graph, userSays('Dump the access log.'), t.config);
    const content = String(state.messages.find((message: BaseMessage) => message.getType() === 'tool')!.content);
    expect(content.length).toBeGreaterThan(250_000);

    const items = await t.timeline();
    expect(items.map((item) => item.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    expect(asTool(items[1])).toMatchObject({ effectiveInput: { file: 'access.log' }, output: { content }, toolCall: { output: content } });
  });

  it('a lost lease stops the run\'s writes and the agent with AuditLeaseLostError', async () => {
    const t = await openThread('langgraph: lease lost');
    let runId = '';
    const cancelMyRun = tool(
      async () => {
        await t.owner.cancelRun(runId);
        return 'cancelled from inside the tool';
      },
      { name: 'cancel_my_run', description: 'The owner cancels the run while this tool runs.', schema: z.object({}) },
    );
    const call = callTool('cancel_my_run', {});
    const graph = buildReactAgent([turn('Working.', [call]), turn('Never reached.')], { tools: [cancelMyRun] });

    runId = await t.newRun();
    const logged = vi.spyOn(console, 'error');
    const failure = await t.audit.invoke(runId, graph, userSays('Go.'), t.config).catch((error: unknown) => error);
    const handlerErrors = logged.mock.calls.map(String).filter((line) => line.includes('Error in handler') && !line.includes('Start'));
    logged.mockRestore();
    // The tool's end found the lease gone: reported through the signal and the next start, not thrown from handleToolEnd.
    expect(handlerErrors).toEqual([]);
    expect(failure).toBeInstanceOf(AuditLeaseLostError);
    expect((failure as AuditLeaseLostError).runId).toBe(runId);
    expect((failure as AuditLeaseLostError).cause).toMatchObject({ code: 'LEASE_LOST', operationName: 'RecordToolFinished' });

    // The second model call was never made, let alone recorded.
    expect(glance(await t.timeline())).toEqual([
      { model: 'COMPLETED', runId, declares: [call.id] },
      { tool: 'cancel_my_run', toolCallId: call.id, status: 'CANCELLED', runId },
    ]);
    expect((await t.owner.run(runId))?.status).toBe('CANCELLED');
  });

  it('a model that numbers its calls afresh each step (call_0 every time): each later declaration is recorded as call_0#n', async () => {
    const t = await openThread('langgraph: reused tool call ids');
    const numbered = (call: ReturnType<typeof callTool>) => ({ ...call, id: 'call_0' });
    const graph = buildReactAgent([
      turn('The mail first.', [numbered(callTool('send_email', { to: 'me@example.com' }))]),
      turn('Now Paris.', [numbered(callTool('get_weather', { city: 'Paris' }))]),
      turn('Now Oslo.', [numbered(callTool('get_weather', { city: 'Oslo' }))]),
      turn('The mail failed.'),
    ]);
    const runId = await t.newRun();
    const { status, writeErrors } = await t.audit.invoke(runId, graph, userSays('Go.'), t.config);
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    // LangGraph's ToolNode runs no call whose id already has a ToolMessage: only the first ran,
    // and its bare error is settled FAILED under its own id.
    const items = await t.timeline();
    expect(glance(items).map((item) => ('model' in item ? item.declares : [item.toolCallId, item.status]))).toEqual([
      ['call_0'],
      ['call_0', 'FAILED'],
      ['call_0#2'],
      ['call_0#3'],
      [],
    ]);
    expect(asTool(items[1]).toolCall).toMatchObject({ status: 'FAILED' });
  });

  it('an invocation your signal aborts ends the run CANCELLED, with the tool it stopped', async () => {
    const t = await openThread('langgraph: aborted');
    const abort = new AbortController();
    const waitForAbort = tool(
      async (_args, config) => {
        abort.abort(new Error('user stop'));
        return new Promise<string>((_resolve, reject) => config?.signal?.addEventListener('abort', () => reject(config.signal!.reason)));
      },
      { name: 'wait_for_abort', description: 'Runs until the invocation is aborted.', schema: z.object({}) },
    );
    const graph = buildReactAgent([turn('Waiting.', [callTool('wait_for_abort', {})]), turn('Never reached.')], { tools: [waitForAbort] });
    const runId = await t.newRun();
    await expect(t.audit.invoke(runId, graph, userSays('Go.'), { ...t.config, signal: abort.signal })).rejects.toThrow('user stop');
    expect((await t.owner.run(runId))?.status).toBe('CANCELLED');
    expect((await t.timeline()).map((item) => item.status)).toEqual(['COMPLETED', 'CANCELLED']);
  });

  it('a streamed answer the user stops (graph.stream, your signal) keeps the text streamed so far, FAILED with the abort; the run ends CANCELLED', async () => {
    const t = await openThread('langgraph: stream stopped');
    const graph = oneModelGraph(new StreamingChatModel('A long answer streamed word by word, one every 100 ms.', { wordMs: 100 }));
    const runId = await t.newRun();
    const run = await t.audit.start(runId);
    const abort = new AbortController();
    let words = 0;
    const stopped = await (async () => {
      for await (const _ of await graph.stream(userSays('Go.'), run.record({ ...t.config, signal: abort.signal, streamMode: 'messages' as const }))) {
        if (++words === 3) abort.abort();
      }
    })().catch((error: unknown) => error);
    expect(stopped).toMatchObject({ name: 'AbortError' });
    expect(await run.finish({ error: stopped })).toMatchObject({ status: 'CANCELLED', writeErrors: [] });
    const items = await t.timeline();
    expect(items.map((item) => item.status)).toEqual(['FAILED']);
    expect(asModel(items[0])).toMatchObject({ output: { type: 'ai', content: expect.stringMatching(/^A long /) }, error: { name: 'AbortError' } });
  });

  it('a streamed answer whose connection drops keeps the text streamed so far with the error', async () => {
    const t = await openThread('langgraph: stream broken');
    const graph = oneModelGraph(new StreamingChatModel('An answer that breaks after three words.', { wordMs: 10, brokenAt: 3 }));
    const runId = await t.newRun();
    const run = await t.audit.start(runId);
    const broken = await (async () => {
      for await (const _ of await graph.stream(userSays('Go.'), run.record({ ...t.config, streamMode: 'messages' as const })));
    })().catch((error: unknown) => error);
    expect(broken).toMatchObject({ message: 'terminated' });
    expect(await run.finish({ error: broken })).toMatchObject({ status: 'FAILED', writeErrors: [] });
    const items = await t.timeline();
    expect(items.map((item) => item.status)).toEqual(['FAILED']);
    expect(asModel(items[0])).toMatchObject({ output: { type: 'ai', content: 'An answer that ' }, error: { name: 'TypeError', message: 'terminated' } });
  });

  it('a lease the keeper finds gone aborts a long tool at once, with AuditLeaseLostError', async () => {
    const t = await openThread('langgraph: lease gone while a tool waits');
    let runId = '';
    const waitForever = tool(
      async (_args, config) => {
        await t.owner.cancelRun(runId);
        // No audit write happens until this tool ends: only the lease keeper's renewal can notice.
        return new Promise<string>((_resolve, reject) => config?.signal?.addEventListener('abort', () => reject(config.signal!.reason)));
      },
      { name: 'wait_for_abort', description: 'Runs until the invocation is aborted.', schema: z.object({}) },
    );
    const call = callTool('wait_for_abort', {});
    const graph = buildReactAgent([turn('Waiting.', [call]), turn('Never reached.')], { tools: [waitForever] });
    // Renewed every 5 s: a renewal has 10 s to commit before the lease expires, room for a loaded
    // machine (with 3 s leases, an expiry before the cancel ended the run FAILED instead).
    const audit = new LangGraphAudit(new AuditClient({ url: server.url, token: (await e2eActors()).worker }), { leaseSeconds: 15 });

    runId = await t.newRun();
    const logged = vi.spyOn(console, 'error');
    const warned = vi.spyOn(console, 'warn');
    const failure = await audit.invoke(runId, graph, userSays('Go.'), t.config).catch((error: unknown) => error);
    // LangChain prints every error a handler throws; the tool's end only reports what the signal already did.
    const handlerErrors = [...logged.mock.calls, ...warned.mock.calls].map(String).filter((line) => line.includes('Error in handler'));
    logged.mockRestore();
    warned.mockRestore();
    expect(handlerErrors).toEqual([]);
    expect(failure).toBeInstanceOf(AuditLeaseLostError);
    expect((failure as AuditLeaseLostError).runId).toBe(runId);
    expect((failure as AuditLeaseLostError).cause).toMatchObject({ code: 'LEASE_LOST', operationName: 'RenewLease' });
    expect((await t.timeline()).map((item) => item.status)).toEqual(['COMPLETED', 'CANCELLED']);
  });

  it('never holds the agent on an unanswering server beyond the budget; the writes land in order afterwards', async () => {
    let holding = false;
    const held: (() => void)[] = [];
    const heldFetch: FetchLike = async (url, init) => {
      if (holding) await new Promise<void>((release) => held.push(release));
      return fetch(url, init);
    };
    const t = await openThread('langgraph: slow server', heldFetch);
    const audit = new LangGraphAudit(new AuditClient({ url: server.url, token: (await e2eActors()).worker, fetch: heldFetch }), { budgetMs: 20 });
    const weather = callTool('get_weather', { city: 'Rome' });
    const graph = buildReactAgent([turn('Checking.', [weather]), turn('Sunny in Rome.')]);

    const runId = await t.newRun();
    const run = await audit.start(runId);
    holding = true;
    const state = await graph.invoke(userSays('Weather in Rome?'), { ...t.config, callbacks: [run.handler] });
    expect(state.messages.at(-1)?.content).toBe('Sunny in Rome.');
    expect(held.length).toBeGreaterThan(0);
    expect(await t.timeline()).toEqual([]);

    holding = false;
    held.splice(0).forEach((release) => release());
    const finished = await run.finish({ state });
    expect(finished).toMatchObject({ status: 'COMPLETED', writeErrors: [] });
    expect((await t.timeline()).map((item) => [item.__typename, item.status])).toEqual([
      ['ModelAudit', 'COMPLETED'],
      ['ToolAudit', 'COMPLETED'],
      ['ModelAudit', 'COMPLETED'],
    ]);
  });

  it('does not send a sub-agent\'s (subgraph\'s) events; the root graph\'s are recorded', async () => {
    const t = await openThread('langgraph: sub-agent');
    const lead = new ScriptedChatModel([turn('Asking the researcher.')]);
    const researcher = buildReactAgent([turn('Looking.', [callTool('get_weather', { city: 'Lima' })]), turn('Sunny in Lima.')], {
      checkpointer: false,
    });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('lead', async (state: { messages: BaseMessage[] }) => ({ messages: [await lead.invoke(state.messages)] }))
      .addNode('researcher', researcher)
      .addEdge(START, 'lead')
      .addEdge('lead', 'researcher')
      .addEdge('researcher', END)
      .compile();

    const runId = await t.newRun();
    const { status, state, writeErrors } = await t.audit.invoke(runId, graph, userSays('Weather in Lima?'), t.config);
    expect(status).toBe('COMPLETED');
    expect(writeErrors).toEqual([]);
    // The sub-agent did run its model and tool...
    expect(state.messages.map((message: BaseMessage) => message.getType())).toEqual(['human', 'ai', 'ai', 'tool', 'ai']);
    // ...but only the root's model call is on the timeline.
    expect(glance(await t.timeline())).toEqual([{ model: 'COMPLETED', runId, declares: [] }]);
  });
});
