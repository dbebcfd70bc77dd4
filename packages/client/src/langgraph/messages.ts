import { AIMessage, ToolMessage, isBaseMessage, type BaseMessage } from '@langchain/core/messages';
import { toJson } from '../json.js';
import type { DeclaredToolCallInput, JsonObject } from '../types.js';

/**
 * A LangChain message as the flat JSON the audit server stores: `type`, `content` and the
 * fields a reader needs (`tool_calls`, `tool_call_id`, `status`, ...), never the
 * serialisation wrapper. ToolMessages keep the envelope shape the contract reads
 * (`status: "error"` is a controlled failure).
 */
export function messageJson(message: BaseMessage): JsonObject {
  const json: JsonObject = { type: message.getType(), content: toJson(message.content) };
  if (message.id !== undefined) json.id = message.id;
  if (message.name !== undefined) json.name = message.name;
  if (AIMessage.isInstance(message)) {
    if (message.tool_calls?.length) json.tool_calls = toJson(message.tool_calls.map(({ id, name, args }) => ({ id, name, args })));
    if (message.usage_metadata) json.usage_metadata = toJson(message.usage_metadata);
  }
  if (ToolMessage.isInstance(message)) {
    json.tool_call_id = message.tool_call_id;
    json.status = message.status ?? 'success';
    if (message.artifact !== undefined) json.artifact = toJson(message.artifact);
  }
  return json;
}

/**
 * What a tool's run produced, as the output envelope of `recordToolFinished`: a ToolMessage
 * as is (with the id its tool call is recorded under); anything else (a Command, a raw value of
 * a tool called without a tool call) as the content of a successful result.
 */
export function toolOutputEnvelope(output: unknown, toolCallId: string, name: string): JsonObject {
  if (isBaseMessage(output)) {
    const json = messageJson(output);
    return 'tool_call_id' in json ? { ...json, tool_call_id: toolCallId } : json;
  }
  return { type: 'tool', tool_call_id: toolCallId, name, status: 'success', content: typeof output === 'string' ? output : toJson(output) };
}

/** The tool calls a model response declares; a call without an id cannot be bound, so it is left out. */
export function declaredToolCalls(message: BaseMessage | undefined): DeclaredToolCallInput[] {
  if (!message || !AIMessage.isInstance(message)) return [];
  return (message.tool_calls ?? [])
    .filter((call) => typeof call.id === 'string' && call.id !== '')
    .map((call) => ({ id: call.id!, name: call.name, args: toJson(call.args) }));
}

/** A tool's input as the callbacks report it (the arguments, often as a JSON string), as a JSON object. */
export function effectiveInput(input: unknown): JsonObject {
  let value: unknown = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch {
      return { input };
    }
  }
  const json = toJson(value);
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : { input: json };
}
