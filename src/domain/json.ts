import { badInput } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Text is stored exactly as given or refused: PostgreSQL text and jsonb cannot hold NUL
 * characters or unpaired UTF-16 surrogates.
 */
export function assertStorableText(value: string, field: string): void {
  if (value.includes('\0') || UNPAIRED_SURROGATE.test(value)) {
    throw badInput(`${field} contains a NUL character or an unpaired surrogate, which cannot be stored`);
  }
}

/**
 * JSON has no Infinity or NaN, but a parser reads `1e400` as Infinity, which PostgreSQL would
 * store as null (and an identical replay would then differ). Walked without recursion, so a
 * deep value cannot exhaust the stack before the depth limit refuses it.
 */
export function hasNonFiniteNumber(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'number' && !Number.isFinite(item)) return true;
    if (typeof item === 'object' && item !== null) for (const child of Object.values(item)) pending.push(child);
  }
  return false;
}

/** Deeper values are refused: serialising them recursively could exhaust the stack. */
export const MAX_JSON_DEPTH = 1000;

function assertStorableTree(value: unknown, field: string, depth: number): void {
  if (typeof value === 'string') return assertStorableText(value, field);
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_JSON_DEPTH) throw badInput(`${field} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (const item of value) assertStorableTree(item, field, depth + 1);
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    assertStorableText(key, field);
    assertStorableTree(item, field, depth + 1);
  }
}

/**
 * One JSON value is stored whole or refused: at most `maxBytes` of UTF-8 JSON, at most
 * MAX_JSON_DEPTH levels deep, only storable text. Nothing is ever silently cut.
 */
export function assertStorableJson(value: unknown, maxBytes: number, field: string): void {
  if (value === undefined || value === null) return;
  assertStorableTree(value, field, 1);
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > maxBytes) throw badInput(`${field} is ${bytes} bytes of JSON; the limit is ${maxBytes}`);
}


/**
 * Exact equality of two JSON values, as a replay is compared (SEMANTICS "Terminal replays"): two
 * objects are equal only with the same key sets and equal values under each key, whatever the
 * key order; a key whose value is null is not a missing key; arrays are equal item by item in
 * order; numbers compare as JSON numbers (1 and 1.0 alike). `undefined` is absence, which JSON
 * cannot carry: an object key holding it is no key, and at the top level it equals null (a JSON
 * column stores a missing value and null alike, as SQL NULL).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return sameJson(a ?? null, b ?? null);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, index) => sameJson(item, b[index]));
  }
  const aKeys = definedKeys(a as Record<string, unknown>);
  const bKeys = definedKeys(b as Record<string, unknown>);
  if (aKeys.length !== bKeys.length) return false;
  return aKeys.every((key) => Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

const definedKeys = (object: Record<string, unknown>) => Object.keys(object).filter((key) => object[key] !== undefined);
