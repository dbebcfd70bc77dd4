import { describe, expect, it } from 'vitest';
import { answerTextOf, conversationOf, tokensOf } from '../../src/shared/llm-payloads.js';

// The one reader of model payloads (the page and the OTLP export both use it), over payloads as
// each runtime records them: our LangGraph and AI SDK adapters (packages/client), and the raw
// provider shapes a hand-written recorder stores.

describe('token usage of every shape', () => {
  it('LangChain usage_metadata and Anthropic usage', () => {
    expect(tokensOf({ input_tokens: 412, output_tokens: 57, total_tokens: 469 })).toEqual({ input: 412, output: 57 });
    expect(tokensOf({ input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 9 })).toEqual({ input: 20, output: 9 });
  });

  it("OpenAI's and the JS SDKs' camelCase", () => {
    expect(tokensOf({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 })).toEqual({ input: 10, output: 2 });
    expect(tokensOf({ promptTokens: 7, completionTokens: 1, totalTokens: 8 })).toEqual({ input: 7, output: 1 });
    expect(tokensOf({ inputTokens: 30, outputTokens: 4, totalTokens: 34 })).toEqual({ input: 30, output: 4 });
  });

  it("AI SDK's nested counts ({inputTokens: {total}})", () => {
    const recorded = {
      inputTokens: { total: 1200, noCache: 1000, cacheRead: 200, cacheWrite: 0 },
      outputTokens: { total: 85, text: 80, reasoning: 5 },
      raw: { prompt_tokens: 1200 },
    };
    expect(tokensOf(recorded)).toEqual({ input: 1200, output: 85 });
  });

  it('a usage one level down (a whole response stored as usage)', () => {
    expect(tokensOf({ usage: { prompt_tokens: 3, completion_tokens: 1 } })).toEqual({ input: 3, output: 1 });
    expect(tokensOf({ tokenUsage: { promptTokens: 5, completionTokens: 2 } })).toEqual({ input: 5, output: 2 });
  });

  it("a tracer's usage: OpenTelemetry's GenAI attribute names and Langfuse's {input, output, total}", () => {
    expect(tokensOf({ 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 4 })).toEqual({ input: 10, output: 4 });
    expect(tokensOf({ input: 11, output: 5, total: 16 })).toEqual({ input: 11, output: 5 });
    // A model's input or output is no count.
    expect(tokensOf({ input: 'hello', output: { text: 'hi' } })).toBeNull();
  });

  it('one count alone, and nothing from anything else', () => {
    expect(tokensOf({ output_tokens: 5 })).toEqual({ input: 0, output: 5 });
    for (const none of [null, undefined, 3, 'many', [1, 2], {}, { input_tokens: 'lots' }, { inputTokens: { total: 'x' } }]) expect(tokensOf(none)).toBeNull();
  });
});

describe("a model call's conversation of every shape", () => {
  it('LangChain messages (our LangGraph adapter): by role with their tool calls, then the answer', () => {
    expect(
      conversationOf(
        { messages: [{ role: 'system', content: 'Be brief.' }, { type: 'human', content: [{ type: 'text', text: 'Pay ' }, 'it'] }] },
        { type: 'ai', content: '', tool_calls: [{ id: 'c1', name: 'pay', args: { amount: 120 } }] },
      ),
    ).toEqual([
      { role: 'system', text: 'Be brief.', toolCalls: [] },
      { role: 'user', text: 'Pay it', toolCalls: [] },
      { role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'pay', args: { amount: 120 } }] },
    ]);
  });

  it('serialized LangChain messages ({lc, id, kwargs})', () => {
    const human = { lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'HumanMessage'], kwargs: { content: 'hi' } };
    const tool = { lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'ToolMessage'], kwargs: { content: '42', tool_call_id: 'c9' } };
    expect(conversationOf({ messages: [human, tool] }, null)).toEqual([
      { role: 'user', text: 'hi', toolCalls: [] },
      { role: 'tool', text: '42', toolCalls: [], toolCallId: 'c9' },
    ]);
  });

  it("OpenAI chat messages: function calls with JSON-text arguments, tool results by call id", () => {
    const input = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
    ];
    expect(conversationOf(input, { role: 'assistant', content: 'Three degrees.' })).toEqual([
      { role: 'user', text: 'weather?', toolCalls: [] },
      { role: 'assistant', text: '', toolCalls: [{ id: 'call_1', name: 'weather', args: { city: 'Oslo' } }] },
      { role: 'tool', text: '{"temp":3}', toolCalls: [], toolCallId: 'call_1' },
      { role: 'assistant', text: 'Three degrees.', toolCalls: [] },
    ]);
  });

  it('Anthropic content blocks: tool_use and tool_result', () => {
    const input = {
      messages: [
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found' }] },
      ],
    };
    expect(conversationOf(input, null)).toEqual([
      { role: 'assistant', text: 'Checking.', toolCalls: [{ id: 'toolu_1', name: 'lookup', args: { q: 'x' } }] },
      { role: 'user', text: 'found', toolCalls: [], toolCallId: 'toolu_1' },
    ]);
  });

  it('AI SDK prompts and outputs (our AI SDK adapter): tool-call and tool-result parts', () => {
    const input = {
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Refund order 7' }] },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 't1', toolName: 'refund', input: { order: 7 } }] },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 't1', toolName: 'refund', output: { type: 'json', value: { ok: false } } }] },
      ],
    };
    const output = { content: [{ type: 'text', text: 'It failed; retrying.' }, { type: 'tool-call', toolCallId: 't2', toolName: 'refund', input: { order: 7, retry: true } }], finishReason: 'tool-calls' };
    expect(conversationOf(input, output)).toEqual([
      { role: 'user', text: 'Refund order 7', toolCalls: [] },
      { role: 'assistant', text: '', toolCalls: [{ id: 't1', name: 'refund', args: { order: 7 } }] },
      { role: 'tool', text: '{"ok":false}', toolCalls: [], toolCallId: 't1' },
      { role: 'assistant', text: 'It failed; retrying.', toolCalls: [{ id: 't2', name: 'refund', args: { order: 7, retry: true } }] },
    ]);
    expect(answerTextOf(output)).toBe('It failed; retrying.');
  });

  it('AI SDK parallel tool results in one tool message: one line each', () => {
    const input = {
      messages: [
        { role: 'tool', content: [
          { type: 'tool-result', toolCallId: 'a', toolName: 'weather', output: { type: 'text', value: 'Sunny in Paris' } },
          { type: 'tool-result', toolCallId: 'b', toolName: 'weather', output: { type: 'text', value: 'Rain in Oslo' } },
        ] },
      ],
    };
    expect(conversationOf(input, null)?.[0]?.text).toBe('Sunny in Paris\nRain in Oslo');
  });

  it('is null for inputs and outputs of other shapes', () => {
    expect(conversationOf({ prompt: 'hi' }, 'text')).toBeNull();
    expect(conversationOf(null, null)).toBeNull();
  });
});
