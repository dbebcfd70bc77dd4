// A ReAct agent on the real LangGraph.js (StateGraph + ToolNode, a checkpointer for interrupts)
// whose chat model follows a script instead of calling an LLM, with real tools. It is what
// `npm run simulate -- --langgraph` records and what the adapter's tests drive.
import { randomUUID } from 'node:crypto';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { END, MemorySaver, type BaseCheckpointSaver, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

/**
 * FakeListChatModel (the scripted chat model @langchain/core ships for tests) answering with
 * whole AIMessages, tool calls included, one per call in order.
 */
export class ScriptedChatModel extends FakeListChatModel {
  constructor(
    private readonly turns: AIMessage[],
    sleepMs?: number,
  ) {
    super({ responses: turns.map((_, index) => String(index)), sleep: sleepMs || undefined });
  }

  override _formatGeneration(response: string) {
    const message = this.turns[Number(response)]!;
    return { message: new AIMessage({ content: message.content, tool_calls: message.tool_calls }), text: String(message.content) };
  }
}

/** A tool call as a model declares it, with a fresh id. */
export const callTool = (name: string, args: Record<string, unknown>) => ({ id: `call_${randomUUID().slice(0, 12)}`, name, args, type: 'tool_call' as const });

/** One model turn: a reply, and the tool calls it declares. */
export const turn = (content: string, toolCalls: ReturnType<typeof callTool>[] = []) => new AIMessage({ content, tool_calls: toolCalls });

export const LARGE_LOG_LINES = 3000;

const toolCallIdOf = (config: unknown) =>
  (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id ?? (config as { toolCallId?: string } | undefined)?.toolCallId ?? '';

export const agentTools = [
  tool(async ({ city, units }) => `Sunny, ${units === 'metric' ? '21 °C' : '70 °F'} in ${city}`, {
    name: 'get_weather',
    description: 'The current weather in a city.',
    schema: z.object({ city: z.string(), units: z.enum(['metric', 'imperial']).default('metric') }),
  }),
  // A controlled failure: the tool itself answers with an error ToolMessage.
  tool(
    async ({ invoice }, config) =>
      new ToolMessage({ status: 'error', content: `Invoice ${invoice} not found`, tool_call_id: toolCallIdOf(config), name: 'lookup_invoice' }),
    { name: 'lookup_invoice', description: 'Finds an invoice by number.', schema: z.object({ invoice: z.number() }) },
  ),
  // A bare error: the tool throws; ToolNode turns it into an error ToolMessage in the state.
  tool(
    async (): Promise<string> => {
      throw new Error('SMTP server timed out');
    },
    { name: 'send_email', description: 'Sends an email.', schema: z.object({ to: z.string() }) },
  ),
  // Pauses the graph for a human's approval; the resumed run executes it again with the answer.
  tool(
    async ({ invoice, amount }) => {
      const approval = interrupt({ question: `Pay ${amount} for invoice ${invoice}?` }) as string;
      return approval === 'approve' ? `paid invoice ${invoice}, reference PAY-${invoice}` : `payment of invoice ${invoice} refused`;
    },
    { name: 'pay_invoice', description: 'Pays an invoice after approval.', schema: z.object({ invoice: z.number(), amount: z.number() }) },
  ),
  tool(
    async ({ file, lines }) =>
      Array.from({ length: lines }, (_, i) => `${String(i).padStart(5, '0')} GET /${file}/${i} 200 ${'x'.repeat(80)}`).join('\n'),
    { name: 'read_log', description: 'Reads a log file.', schema: z.object({ file: z.string(), lines: z.number().default(LARGE_LOG_LINES) }) },
  ),
];

export interface ReactAgentOptions {
  /** Default: a MemorySaver (interrupts need one); `false` for a subgraph, which uses its parent's. */
  checkpointer?: BaseCheckpointSaver | false;
  /** Tools besides `agentTools`. */
  tools?: StructuredToolInterface[];
  /** How long each model call takes, so a live dashboard can show it running. */
  modelSleepMs?: number;
}

/** The ReAct loop: agent -> tools (in parallel) -> agent, until the model declares no tool call. */
export function buildReactAgent(turns: AIMessage[], options: ReactAgentOptions = {}) {
  const model = new ScriptedChatModel(turns, options.modelSleepMs);
  const checkpointer = options.checkpointer === false ? undefined : (options.checkpointer ?? new MemorySaver());
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state: { messages: BaseMessage[] }) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([...agentTools, ...(options.tools ?? [])]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

export type ReactAgent = ReturnType<typeof buildReactAgent>;
