/** PostgreSQL's json and jsonb type OIDs. */
export const JSON_OIDS = [114, 3802] as const;

/** The byte length of the text each JSON object or array read from the database was parsed from. */
const textBytes = new WeakMap<object, number>();

/**
 * The drivers' json/jsonb parser: JSON.parse, remembering the text's size, so an answer's payloads
 * are counted (src/graphql/answer-payloads.ts) without serializing each of them once more.
 */
export function parseJsonText(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (value !== null && typeof value === 'object') textBytes.set(value, Buffer.byteLength(text));
  return value;
}

/** A JSON value's size in bytes: its database text's when it was read by parseJsonText, else its JSON text's. */
export function jsonBytes(value: unknown): number {
  return (value !== null && typeof value === 'object' ? textBytes.get(value) : undefined) ?? Buffer.byteLength(JSON.stringify(value));
}
