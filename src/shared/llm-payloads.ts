// What a model call's stored payloads say, read in ONE place for the page (web/) and the
// OpenTelemetry export (src/export/spans.ts): its token usage and its conversation. Pure: no DOM,
// no Node, no imports, so both the server and the browser bundle take it as it is.
//
// The shapes read (recorded examples: test/shared/llm-payloads.unit.test.ts):
// - usage: LangChain's usage_metadata and Anthropic's (input_tokens/output_tokens), OpenAI's
//   (prompt_tokens/completion_tokens), the JS SDKs' camelCase (promptTokens/completionTokens,
//   inputTokens/outputTokens), AI SDK 5+'s nested counts ({inputTokens: {total}}), OpenTelemetry's
//   GenAI names (gen_ai.usage.input_tokens), Langfuse's ({input, output, total}), and any of
//   those one level down under `usage`, `usage_metadata` or `tokenUsage`.
// - messages: `{messages: [...]}` or a bare list; a role (`role`, or LangChain's `type`, or a
//   serialized LangChain message's class name); content as text or parts: text parts, OpenAI's
//   `tool_calls`, LangChain's `tool_calls`, Anthropic's `tool_use`/`tool_result` blocks, AI SDK's
//   `tool-call`/`tool-result` parts.

export interface Tokens {
  input: number;
  output: number;
}

export interface ConversationToolCall {
  id: string;
  name: string;
  args: unknown;
}

export interface ConversationMessage {
  role: string;
  text: string;
  toolCalls: ConversationToolCall[];
  /** A tool result's call id (a `tool` message, an AI SDK `tool-result` or Anthropic `tool_result` part). */
  toolCallId?: string;
}

type Json = Record<string, unknown>;

const asRecord = (value: unknown): Json | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;

/** A count: a finite number, or AI SDK 5+'s `{total}`. */
/** A whole, non-negative count exactly as sent (past 2^53 a JSON number has already been rounded). */
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

function countOf(value: unknown): number | undefined {
  if (isCount(value)) return value;
  const total = asRecord(value)?.total;
  return isCount(total) ? total : undefined;
}

const firstCount = (record: Json, keys: readonly string[]) => {
  for (const key of keys) {
    const count = countOf(record[key]);
    if (count !== undefined) return count;
  }
  return undefined;
};

const INPUT_KEYS = ['input_tokens', 'prompt_tokens', 'inputTokens', 'promptTokens', 'gen_ai.usage.input_tokens', 'input'] as const;
const OUTPUT_KEYS = ['output_tokens', 'completion_tokens', 'outputTokens', 'completionTokens', 'gen_ai.usage.output_tokens', 'output'] as const;
const NESTED_USAGE = ['usage', 'usage_metadata', 'tokenUsage'] as const;

/** A model call's input and output token counts; null when its usage carries none. */
export function tokensOf(usage: unknown): Tokens | null {
  const record = asRecord(usage);
  if (!record) return null;
  const input = firstCount(record, INPUT_KEYS);
  const output = firstCount(record, OUTPUT_KEYS);
  if (input !== undefined || output !== undefined) return { input: input ?? 0, output: output ?? 0 };
  for (const key of NESTED_USAGE) {
    const nested = asRecord(record[key]) && tokensOf(record[key]);
    if (nested) return nested;
  }
  return null;
}

/** The sum of the counts given; null when none of them has any. */
export function addTokens(all: Iterable<Tokens | null>): Tokens | null {
  const sum: Tokens = { input: 0, output: 0 };
  let any = false;
  for (const tokens of all) {
    if (!tokens) continue;
    any = true;
    sum.input += tokens.input;
    sum.output += tokens.output;
  }
  return any ? sum : null;
}

const ROLES: Record<string, string> = {
  human: 'user', ai: 'assistant', tool: 'tool', system: 'system',
  HumanMessage: 'user', AIMessage: 'assistant', AIMessageChunk: 'assistant', ToolMessage: 'tool', SystemMessage: 'system',
};

/** The text of a content: a string, text parts joined, anything else as JSON (tool parts are read apart). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    // Text parts are pieces of one text; each tool result is a text of its own, on its own line.
    let text = '';
    for (const part of content) {
      const record = asRecord(part);
      if (typeof part === 'string') text += part;
      else if (typeof record?.text === 'string') text += record.text;
      else if (record?.type === 'tool-result' || record?.type === 'tool_result') text += (text ? '\n' : '') + resultText(record.output ?? record.result ?? record.content);
    }
    return text;
  }
  return content == null ? '' : JSON.stringify(content);
}

/** A tool result as text: AI SDK's `{type: 'text'|'json', value}` unwrapped. */
function resultText(result: unknown): string {
  const record = asRecord(result);
  if (record && typeof record.type === 'string' && 'value' in record) result = record.value;
  return typeof result === 'string' ? result : textOf(Array.isArray(result) ? result : JSON.stringify(result ?? null));
}

/** Arguments as declared: JSON text parsed (OpenAI sends them as text), kept as text when it is not JSON. */
function argsOf(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? null;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

function toolCallsOf(record: Json): ConversationToolCall[] {
  const listed = (Array.isArray(record.tool_calls) ? record.tool_calls : Array.isArray(record.toolCalls) ? record.toolCalls : []).map((call) => {
    const c = asRecord(call) ?? {};
    const fn = asRecord(c.function);
    return { id: String(c.id ?? c.toolCallId ?? ''), name: String(c.name ?? c.toolName ?? fn?.name ?? ''), args: argsOf(c.args ?? c.input ?? fn?.arguments) };
  });
  const parts = (Array.isArray(record.content) ? record.content : []).flatMap((part) => {
    const p = asRecord(part);
    if (p?.type === 'tool-call') return [{ id: String(p.toolCallId ?? ''), name: String(p.toolName ?? ''), args: argsOf(p.input ?? p.args) }];
    if (p?.type === 'tool_use') return [{ id: String(p.id ?? ''), name: String(p.name ?? ''), args: argsOf(p.input) }];
    return [];
  });
  const seen = new Set(listed.map((call) => call.id));
  return [...listed, ...parts.filter((call) => !seen.has(call.id))];
}

function toolResultIdOf(record: Json): string | undefined {
  if (typeof record.tool_call_id === 'string') return record.tool_call_id;
  for (const part of Array.isArray(record.content) ? record.content : []) {
    const p = asRecord(part);
    if (p?.type === 'tool-result' && typeof p.toolCallId === 'string') return p.toolCallId;
    if (p?.type === 'tool_result' && typeof p.tool_use_id === 'string') return p.tool_use_id;
  }
  return undefined;
}

/** One message of any shape above; null for anything else. */
function messageOf(value: unknown): ConversationMessage | null {
  let record = asRecord(value);
  if (!record) return null;
  let className: string | undefined;
  // A serialized LangChain message: {lc: 1, type: 'constructor', id: [..., 'AIMessage'], kwargs}.
  if (record.lc !== undefined && asRecord(record.kwargs)) {
    className = Array.isArray(record.id) ? String(record.id[record.id.length - 1]) : undefined;
    record = asRecord(record.kwargs)!;
  }
  if (!('content' in record || 'tool_calls' in record || 'toolCalls' in record)) return null;
  const rawRole = (record.role ?? (typeof record.type === 'string' ? record.type : undefined) ?? className) as string | undefined;
  const toolCallId = toolResultIdOf(record);
  return {
    role: (rawRole && ROLES[rawRole]) || rawRole || 'message',
    text: textOf(record.content),
    toolCalls: toolCallsOf(record),
    ...(toolCallId !== undefined ? { toolCallId } : {}),
  };
}

/** The messages of a model call's input then its output (its answer); null when neither has a known shape. */
export function conversationOf(input: unknown, output: unknown): ConversationMessage[] | null {
  const list = Array.isArray(input) ? input : asRecord(input)?.messages;
  const messages = (Array.isArray(list) ? list : []).map(messageOf).filter((m): m is ConversationMessage => m !== null);
  const answer = messageOf(output);
  if (answer) messages.push({ ...answer, role: answer.role === 'message' ? 'assistant' : answer.role });
  return messages.length ? messages : null;
}

/** The answer's text (a model call's output), for a span's output message; undefined when it has none. */
export function answerTextOf(output: unknown): string | undefined {
  if (typeof output === 'string') return output;
  const answer = messageOf(output);
  if (answer) return answer.text;
  const text = asRecord(output)?.text;
  return typeof text === 'string' ? text : undefined;
}
