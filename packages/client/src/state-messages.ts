import type { JsonObject, JsonValue } from './json-value.js';

/**
 * The messages of a run's final state that can settle its bare tool errors (docs/semantics.md,
 * final-state reconciliation): for each tool call id the last message, when its status is
 * "error". The server reads nothing else of the state, and a whole checkpoint can outgrow the
 * request's body limit.
 */
export function settlingMessages(messages: readonly JsonValue[]): JsonObject[] {
  const last = new Map<string, JsonObject>();
  for (const message of messages) {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) continue;
    const id = message.tool_call_id;
    if (typeof id === 'string' || typeof id === 'number') last.set(String(id), message);
  }
  return [...last.values()].filter((message) => message.status === 'error');
}
