// Values as the audit server stores them: plain JSON.
import type { JsonObject, JsonValue } from './json-value.js';

/**
 * A value as JSON: what JSON.stringify would send, so class instances, undefined members and
 * Dates become plain JSON. A value JSON cannot hold (a cycle, a BigInt) becomes its string form.
 */
export function toJson(value: unknown): JsonValue {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? null : (JSON.parse(text) as JsonValue);
  } catch {
    return String(value);
  }
}

/** An error as JSON: its name and message (never a stack, which is the runtime's business). */
export function errorJson(error: unknown): JsonObject {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}
