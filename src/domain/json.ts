import { badInput } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One JSON value may be at most `maxBytes` of UTF-8 JSON; nothing is ever silently cut. */
export function assertJsonSize(value: unknown, maxBytes: number, field: string): void {
  if (value === undefined || value === null) return;
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > maxBytes) throw badInput(`${field} is ${bytes} bytes of JSON; the limit is ${maxBytes}`);
}

/** Structural equality of JSON values, insensitive to object key order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return (a ?? null) === (b ?? null);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, index) => jsonEqual(item, other[index]));
  }
  const aKeys = Object.keys(a).filter((key) => (a as Record<string, unknown>)[key] !== undefined);
  const bKeys = Object.keys(b).filter((key) => (b as Record<string, unknown>)[key] !== undefined);
  return (
    aKeys.length === bKeys.length &&
    aKeys.every((key) => jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
  );
}
