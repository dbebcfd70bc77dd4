import { badInput } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why PostgreSQL text and jsonb cannot hold `value` (a NUL character, an unpaired UTF-16 surrogate), or null. */
function unstorableCharacter(value: string): string | null {
  const nul = value.indexOf('\0');
  const surrogate = UNPAIRED_SURROGATE.exec(value);
  if (surrogate && (nul < 0 || surrogate.index < nul)) {
    return `an unpaired surrogate (U+${surrogate[0].charCodeAt(0).toString(16).toUpperCase()})`;
  }
  return nul < 0 ? null : 'a NUL character (U+0000)';
}

/** Text is stored exactly as given or refused. */
export function assertStorableText(value: string, field: string): void {
  const character = unstorableCharacter(value);
  if (character) throw badInput(`${field} contains ${character}, which cannot be stored`);
}

type JsonPath = (string | number)[];

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `effectiveInput.messages[41].content`, `$["my key"][0]`: where in a value a refused part is, so a large one need not be searched by hand. */
function formatPath(root: string, path: JsonPath): string {
  return path
    .map((step) => (typeof step === 'number' ? `[${step}]` : IDENTIFIER.test(step) ? `.${step}` : `[${quoted(step)}]`))
    .reduce((text, step) => text + step, root);
}

const quoted = (key: string) => (key.length > 100 ? `${JSON.stringify(key.slice(0, 100)).slice(0, -1)}…"` : JSON.stringify(key));

/**
 * JSON has no Infinity or NaN, but a parser reads `1e400` as Infinity, which PostgreSQL would
 * store as null (and an identical replay would then differ). Walked without recursion, so a
 * deep value cannot exhaust the stack before the depth limit refuses it.
 */
function hasNonFiniteNumber(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'number' && !Number.isFinite(item)) return true;
    if (typeof item === 'object' && item !== null) for (const child of Object.values(item)) pending.push(child);
  }
  return false;
}

/**
 * Where the first non-finite number of `value` is (`$.pages[1].n`), or null. The path is sought
 * only once one is known to be there: carrying it through every walk cost a megabyte of JSON
 * 3.5 times the plain walk, on every write.
 */
export function nonFiniteNumberPath(value: unknown): string | null {
  if (!hasNonFiniteNumber(value)) return null;
  type Step = { item: unknown; key?: string | number; parent?: Step };
  const pending: Step[] = [{ item: value }];
  for (let step = pending.pop(); step; step = pending.pop()) {
    const { item } = step;
    if (typeof item === 'number' && !Number.isFinite(item)) {
      const path: JsonPath = [];
      for (let at: Step | undefined = step; at?.parent; at = at.parent) path.unshift(at.key!);
      return formatPath('$', path);
    }
    if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) pending.push({ item: child, key: Array.isArray(item) ? Number(key) : key, parent: step });
    }
  }
  return null;
}

/** Deeper values are refused: serialising them recursively could exhaust the stack. */
export const MAX_JSON_DEPTH = 1000;

/**
 * How many bytes longer than its compact JSON a value is as PostgreSQL prints its jsonb (the text
 * stored values are read back, and measured, as: `*Bytes`, the answer budget): a space after every
 * `,` and `:`, and every number written out in full (JSON.stringify writes 1e21 and up, and below
 * 1e-6, with an exponent). Checks that the value can be stored as it walks it.
 */
function storableTreeExtraBytes(value: unknown, field: string, depth: number, path: JsonPath = []): number {
  if (typeof value === 'string') {
    // The path is formatted only for a refusal: most strings pass.
    if (unstorableCharacter(value)) assertStorableText(value, formatPath(field, path));
    return 0;
  }
  if (typeof value === 'number') return fullNumberExtraBytes(value);
  if (typeof value !== 'object' || value === null) return 0;
  if (depth > MAX_JSON_DEPTH) throw badInput(`${field} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (Array.isArray(value)) {
    let extra = Math.max(0, value.length - 1);
    value.forEach((item, index) => {
      path.push(index);
      extra += storableTreeExtraBytes(item, field, depth + 1, path);
      path.pop();
    });
    return extra;
  }
  const members = Object.entries(value).filter(([, item]) => item !== undefined);
  let extra = Math.max(0, 2 * members.length - 1);
  for (const [key, item] of members) {
    const character = unstorableCharacter(key);
    if (character) throw badInput(`${formatPath(field, path)} has a key ${quoted(key)} that contains ${character}, which cannot be stored`);
    path.push(key);
    extra += storableTreeExtraBytes(item, field, depth + 1, path);
    path.pop();
  }
  return extra;
}

/**
 * How much longer a finite number is as PostgreSQL's numeric prints it, in full, than as JSON:
 * JS writes 1e21 and up, and below 1e-6, with an exponent (1e21 is 22 digits, 1.5e-7 0.00000015).
 */
function fullNumberExtraBytes(value: number): number {
  const magnitude = Math.abs(value);
  if (magnitude === 0 || (magnitude >= 1e-6 && magnitude < 1e21)) return 0;
  const text = String(value);
  const e = text.indexOf('e');
  const sign = value < 0 ? 1 : 0;
  const exponent = Number(text.slice(e + 1));
  // From 1e21 up, more places than JS's 17 digits: the digits and zeros, exponent + 1 in all.
  const full = exponent > 0 ? sign + exponent + 1 : sign + 1 - exponent + text.slice(sign, e).replace('.', '').length;
  return full - text.length;
}

/**
 * The most bytes one JSON value takes as stored (as PostgreSQL prints it) when it is `maxJsonBytes`
 * of compact JSON: 1.5 times, which a space after each `,` and `:` never reaches. Only numbers
 * written with a large exponent pass it (1e308 is 309 bytes stored).
 */
export const maxStoredJsonBytes = (maxJsonBytes: number) => Math.floor((maxJsonBytes * 3) / 2);

/** A value's size as stored (the text PostgreSQL prints its jsonb as), computed without the database; checks it can be stored. */
export function storedJsonBytes(value: unknown, field = 'value'): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8') + storableTreeExtraBytes(value, field, 1);
}

/**
 * One JSON value is stored whole or refused: at most `maxBytes` of UTF-8 JSON, at most
 * maxStoredJsonBytes as stored, at most MAX_JSON_DEPTH levels deep, only storable text. Nothing
 * is ever silently cut.
 */
export function assertStorableJson(value: unknown, maxBytes: number, field: string): void {
  if (value === undefined || value === null) return;
  const extra = storableTreeExtraBytes(value, field, 1);
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > maxBytes) throw badInput(`${field} is ${bytes} bytes of JSON; the limit is ${maxBytes} (MAX_JSON_BYTES)`);
  const maxStored = maxStoredJsonBytes(maxBytes);
  if (bytes + extra > maxStored) {
    throw badInput(
      `${field} is ${bytes + extra} bytes as stored, where every number is written out in full (1e308 takes 309 digits); the limit is ${maxStored} (1.5 × MAX_JSON_BYTES): send large or small numbers as strings`,
    );
  }
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
