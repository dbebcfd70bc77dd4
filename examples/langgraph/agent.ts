// A LangGraph.js ReAct agent (StateGraph + ToolNode) recorded by the adapter in one line. Its
// chat model follows a script (a fake model from @langchain/core, so the example runs without
// an API key); put any tool-calling chat model in its place, e.g.
// `new ChatOpenAI({ model: 'gpt-4o-mini' }).bindTools(tools)` from @langchain/openai.
//
//   AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/langgraph/agent.ts
//
// With `--own-loop` it claims and finishes the run itself around `graph.invoke` (the handler in
// the config) instead of the one line.
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql.
import { AuditClient } from '@agent-audit/client';
import { LangGraphAudit } from '@agent-audit/client/langgraph';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

// The tokens, or one line saying which to set (rather than a request refused for want of one).
for (const [name, role] of Object.entries({ AUDIT_OWNER_TOKEN: 'superadmin', AUDIT_WORKER_TOKEN: 'worker' })) {
  if (process.env[name]) continue;
  console.error(`${name} is not set: give it a ${role} token (\`npm start\` prints one on its first start; \`npm run -s token -- --sub me --role ${role}\` mints more)`);
  process.exit(1);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const owner = new AuditClient({ url, token: process.env.AUDIT_OWNER_TOKEN! });
const worker = new AuditClient({ url, token: process.env.AUDIT_WORKER_TOKEN! });

const question = 'What is the weather in Paris and in Oslo?';
const thread = await owner.createThread({ title: 'LangGraph.js example' });
await owner.appendMessage({ threadId: thread.id, role: 'USER', content: question });
const { id: runId } = await owner.createRun({ threadId: thread.id });

/** FakeListChatModel answering with whole AIMessages (tool calls included), one per call. */
class ScriptedChatModel extends FakeListChatModel {
  constructor(private readonly turns: AIMessage[]) {
    super({ responses: turns.map((_, index) => String(index)) });
  }
  override _formatGeneration(response: string) {
    const message = this.turns[Number(response)]!;
    return { message: new AIMessage({ content: message.content, tool_calls: message.tool_calls }), text: String(message.content) };
  }
}
const model = new ScriptedChatModel([
  new AIMessage({
    content: 'Checking both cities.',
    tool_calls: [
      { id: 'call_paris', name: 'get_weather', args: { city: 'Paris' }, type: 'tool_call' },
      { id: 'call_oslo', name: 'get_weather', args: { city: 'Oslo', units: 'imperial' }, type: 'tool_call' },
    ],
  }),
  new AIMessage({ content: 'Sunny in both.' }),
]);

const getWeather = tool(async ({ city, units }) => `Sunny, ${units === 'metric' ? '21 °C' : '70 °F'} in ${city}`, {
  name: 'get_weather',
  description: 'The current weather in a city.',
  schema: z.object({ city: z.string(), units: z.enum(['metric', 'imperial']).default('metric') }),
});

const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state: { messages: BaseMessage[] }) => ({ messages: [await model.invoke(state.messages)] }))
  .addNode('tools', new ToolNode([getWeather]))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile({ checkpointer: new MemorySaver() });

// The one line: claims the run, invokes the graph with the recording handler, ends the run.
const input = { messages: [{ role: 'user', content: question }] };
const config = { configurable: { thread_id: thread.id } };

if (!process.argv.includes('--own-loop')) {
  // #region one-line
  // The one line: claims the run, invokes the graph with the recording handler, ends the run.
  const { state, status } = await new LangGraphAudit(worker).invoke(runId, graph, input, config);
  // #endregion one-line
  console.log(`${String(state.messages.at(-1)?.content)} (run ${status})`);
} else {
  // #region own-loop
  const run = await new LangGraphAudit(worker).start(runId); // claimRun + a LeaseKeeper
  try {
    const state = await graph.invoke(input, { ...config, callbacks: [run.handler], signal: run.signal });
    const { status } = await run.finish({ state }); // COMPLETED, or INTERRUPTED after interrupt()
    console.log(`${String(state.messages.at(-1)?.content)} (run ${status}, own loop)`);
  } catch (error) {
    run.stopIfLeaseLost(); // throws AuditLeaseLostError if the lease is gone
    await run.finish({ error }); // FAILED with {name, message}
    throw error;
  }
  // #endregion own-loop
}

const { items } = await owner.threadAudits(thread.id);
for (const item of items) console.log(item.__typename === 'ModelAudit' ? `model ${item.model} ${item.status}` : `tool  ${item.name} ${item.status}`);
console.log(JSON.stringify({ threadId: thread.id, runId }));
