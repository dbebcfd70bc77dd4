// A Vercel AI SDK agent (generateText / streamText with tools) whose language model follows a
// script instead of calling an LLM: the SDK's own mock model (`ai/test`), with real tools. It is
// what `npm run simulate -- --ai-sdk` records and what the adapter's tests drive.
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { simulateReadableStream, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';

export interface ScriptedCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** One model turn: a reply, and the tool calls it declares. */
export interface ScriptedTurn {
  text: string;
  toolCalls: ScriptedCall[];
}

/** A tool call as a model declares it, with a fresh id. */
export const callTool = (name: string, args: Record<string, unknown>): ScriptedCall => ({ id: `call_${randomUUID().slice(0, 12)}`, name, args });

export const turn = (text: string, toolCalls: ScriptedCall[] = []): ScriptedTurn => ({ text, toolCalls });

const usage = (turn: ScriptedTurn) => ({
  inputTokens: { total: 12, noCache: 12, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: turn.text.length, text: turn.text.length, reasoning: 0 },
});
const finishReason = (turn: ScriptedTurn) =>
  turn.toolCalls.length > 0 ? { unified: 'tool-calls' as const, raw: 'tool_calls' } : { unified: 'stop' as const, raw: 'stop' };

/**
 * The SDK's MockLanguageModelV3 answering each call (generate or stream) with the next turn of
 * the script, after `stepMs` (a model call that takes time; the call's abort signal ends it).
 * A streamed turn sends a part every `chunkMs`, as a provider's stream does.
 */
export function scriptedModel(turns: ScriptedTurn[], options: { stepMs?: number; chunkMs?: number; modelId?: string } = {}): MockLanguageModelV3 {
  let next = 0;
  const take = async (abortSignal: AbortSignal | undefined) => {
    const scripted = turns[next++];
    if (!scripted) throw new Error(`the script has ${turns.length} turns; the agent asked for another`);
    if (options.stepMs) await pause(options.stepMs, undefined, { signal: abortSignal });
    return scripted;
  };
  return new MockLanguageModelV3({
    modelId: options.modelId ?? 'scripted-model',
    doGenerate: async ({ abortSignal }) => {
      const scripted = await take(abortSignal);
      return {
        content: [
          { type: 'text' as const, text: scripted.text },
          ...scripted.toolCalls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.args) })),
        ],
        finishReason: finishReason(scripted),
        usage: usage(scripted),
        warnings: [],
      };
    },
    doStream: async ({ abortSignal }) => {
      const scripted = await take(abortSignal);
      const words = scripted.text.split(/(?<= )/);
      return {
        stream: simulateReadableStream({
          chunkDelayInMs: options.chunkMs ?? 0,
          chunks: [
            { type: 'stream-start' as const, warnings: [] },
            { type: 'text-start' as const, id: 'text' },
            ...words.map((delta) => ({ type: 'text-delta' as const, id: 'text', delta })),
            { type: 'text-end' as const, id: 'text' },
            ...scripted.toolCalls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.args) })),
            { type: 'finish' as const, finishReason: finishReason(scripted), usage: usage(scripted) },
          ],
        }),
      };
    },
  });
}

export const LARGE_LOG_LINES = 3000;

export const agentTools = {
  get_weather: tool({
    description: 'The current weather in a city.',
    inputSchema: z.object({ city: z.string(), units: z.enum(['metric', 'imperial']).default('metric') }),
    execute: async ({ city, units }) => `Sunny, ${units === 'metric' ? '21 °C' : '70 °F'} in ${city}`,
  }),
  send_email: tool({
    description: 'Sends an email.',
    inputSchema: z.object({ to: z.string() }),
    execute: async (): Promise<string> => {
      throw new Error('SMTP server timed out');
    },
  }),
  read_log: tool({
    description: 'Reads a log file.',
    inputSchema: z.object({ file: z.string(), lines: z.number().default(LARGE_LOG_LINES) }),
    execute: async ({ file, lines }) =>
      Array.from({ length: lines }, (_, i) => `${String(i).padStart(5, '0')} GET /${file}/${i} 200 ${'x'.repeat(80)}`).join('\n'),
  }),
  /** Waits for a human's approval, as long as it takes: only the call's abort signal ends it early. */
  wait_for_approval: tool({
    description: 'Waits until a human approves.',
    inputSchema: z.object({ request: z.string(), seconds: z.number().default(60) }),
    execute: async ({ request, seconds }, { abortSignal }) => {
      await pause(seconds * 1000, undefined, { signal: abortSignal });
      return `approved: ${request}`;
    },
  }),
};
