// A model call's input and output as a conversation: messages by role, each with its tool calls.
// Pure: no DOM. Understands the shapes runtimes record: `{messages: [...]}` or a bare list of
// messages (OpenAI/LangChain style: role or type, content as text or parts, tool_calls), and an
// output that is one message.

export interface ConversationMessage {
  role: string;
  text: string;
  toolCalls: { id: string; name: string; args: unknown }[];
}

const asRecord = (value: unknown): Record<string, unknown> | null =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : (asRecord(part)?.text as string | undefined) ?? '')).join('');
  return content == null ? '' : JSON.stringify(content);
}

const ROLES: Record<string, string> = { human: 'user', ai: 'assistant', tool: 'tool', system: 'system' };

function messageOf(value: unknown): ConversationMessage | null {
  const record = asRecord(value);
  if (!record || !('content' in record || 'tool_calls' in record)) return null;
  const rawRole = (record.role ?? record.type) as string | undefined;
  const calls = Array.isArray(record.tool_calls) ? record.tool_calls : [];
  return {
    role: (rawRole && ROLES[rawRole]) || rawRole || 'message',
    text: textOf(record.content),
    toolCalls: calls.map((call) => {
      const c = asRecord(call) ?? {};
      const fn = asRecord(c.function);
      return { id: String(c.id ?? ''), name: String(c.name ?? fn?.name ?? ''), args: c.args ?? fn?.arguments ?? null };
    }),
  };
}

/** The messages of a model call's input then its output; null when neither has that shape. */
export function conversationOf(input: unknown, output: unknown): ConversationMessage[] | null {
  const list = Array.isArray(input) ? input : asRecord(input)?.messages;
  const messages = (Array.isArray(list) ? list : []).map(messageOf).filter((m): m is ConversationMessage => m !== null);
  const answer = messageOf(output);
  if (answer) messages.push({ ...answer, role: answer.role === 'message' ? 'assistant' : answer.role });
  return messages.length ? messages : null;
}
