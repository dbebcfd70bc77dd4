// Values as the audit server stores them: plain JSON.
import type { JsonObject, JsonValue } from './json-value.js';

/** Stands for a reference back to an object that contains it. */
export const CIRCULAR = '[Circular]';

/**
 * A value as JSON: what JSON.stringify would send (toJSON is used, undefined members, functions
 * and symbols are dropped, a non-finite number is null), except for what JSON cannot hold, which
 * keeps what it says instead of throwing or becoming `{}`: a BigInt becomes its decimal string, a
 * reference back to an enclosing object "[Circular]", a Map an object (an array of [key, value]
 * entries when a key is not a string), a Set an array, bytes (a typed array, Buffer, ArrayBuffer)
 * `{type: "bytes", bytes: <length>}`, an Error `{name, message, ...its own fields}` (no stack), and
 * a NUL character or an unpaired surrogate in a string or a key U+FFFD.
 */
export function toJson(value: unknown): JsonValue {
  try {
    return convert(value, '', new Set()) ?? null;
  } catch {
    // A getter or toJSON that throws, a value too deep for the stack.
    return String(value);
  }
}

/** An error as JSON: an Error's name, message and own fields (never a stack), a thrown object's fields, or `{message}`. */
export function errorJson(error: unknown): JsonObject {
  const json = typeof error === 'object' && error !== null ? toJson(error) : undefined;
  if (typeof json === 'object' && json !== null && !Array.isArray(json)) return json;
  return { message: json === undefined ? String(error) : typeof json === 'string' ? json : JSON.stringify(json) };
}

/** `undefined` where JSON.stringify would leave the value out. `ancestors`: the objects being converted around it. */
function convert(value: unknown, key: string, ancestors: Set<object>): JsonValue | undefined {
  switch (typeof value) {
    case 'string':
      return storable(value);
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.has(object)) return CIRCULAR;
  if (ArrayBuffer.isView(object)) return { type: 'bytes', bytes: object.byteLength };
  if (object instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && object instanceof SharedArrayBuffer)) {
    return { type: 'bytes', bytes: object.byteLength };
  }
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    ancestors.add(object);
    try {
      return convert((object as { toJSON(key: string): unknown }).toJSON(key), key, ancestors);
    } finally {
      ancestors.delete(object);
    }
  }
  if (object instanceof Number || object instanceof String || object instanceof Boolean) return convert(object.valueOf(), key, ancestors);
  ancestors.add(object);
  try {
    if (Array.isArray(object)) return object.map((item, index) => convert(item, String(index), ancestors) ?? null);
    if (object instanceof Set) return [...object].map((item, index) => convert(item, String(index), ancestors) ?? null);
    if (object instanceof Map) {
      const entries = [...(object as Map<unknown, unknown>)];
      if (!entries.every(([entryKey]) => typeof entryKey === 'string')) {
        return entries.map(([entryKey, entryValue], index) => [convert(entryKey, String(index), ancestors) ?? null, convert(entryValue, String(index), ancestors) ?? null]);
      }
      return members(entries as [string, unknown][], ancestors);
    }
    const fields = members(Object.entries(object), ancestors);
    if (!(object instanceof Error)) return fields;
    const cause = 'cause' in object ? convert(object.cause, 'cause', ancestors) : undefined;
    return { name: object.name, message: object.message, ...fields, ...(cause !== undefined && { cause }) };
  } finally {
    ancestors.delete(object);
  }
}

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` with each character the server cannot store (a NUL, an unpaired surrogate) replaced by
 * U+FFFD: a payload holding one would be refused whole, and with it every event that follows
 * from it (a model call whose prompt repeats a tool's binary output, and the calls it declares).
 */
function storable(text: string): string {
  return text.replaceAll('\u0000', '\uFFFD').replace(UNPAIRED_SURROGATE, '\uFFFD');
}

function members(entries: [string, unknown][], ancestors: Set<object>): JsonObject {
  const json: JsonObject = {};
  for (const [rawKey, item] of entries) {
    const key = storable(rawKey);
    const converted = convert(item, key, ancestors);
    if (converted === undefined) continue;
    // An own "__proto__" member, as JSON.parse makes one, not the object's prototype.
    if (key === '__proto__') Object.defineProperty(json, key, { value: converted, enumerable: true, writable: true, configurable: true });
    else json[key] = converted;
  }
  return json;
}

/** The bytes of `text` in UTF-8 without Buffer, which browsers and edge runtimes lack (JSON.stringify leaves no lone surrogate: it escapes them). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // U+0080 to U+07FF take 2 bytes, the rest of the BMP 3, a surrogate pair 4 (2 for each of its units).
    if (code >= 0x80) bytes += code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/** The server's default MAX_JSON_BYTES: the most bytes of UTF-8 JSON it stores in one payload value. */
export const DEFAULT_MAX_JSON_BYTES = 1024 * 1024;

const PREVIEW_CHARS = 4096;

/** A number JSON.stringify wrote with an exponent: its sign, the digits after its point, its exponent. */
const EXPONENT_NUMBER = /^(-?)\d(?:\.(\d+))?e([+-]\d+)$/;

/**
 * A value's size as JSON in UTF-8, and as the server stores it (PostgreSQL's jsonb text, which the
 * server bounds at 1.5 × MAX_JSON_BYTES): a space after every `,` and `:`, and every number
 * written out in full (JSON.stringify writes 1e21 and up, and below 1e-6, with an exponent: 1e308
 * is 309 digits stored, 1.5e-7 is 0.00000015). A scan, not a regular expression over the text:
 * one over a string of megabytes overflows the stack.
 */
function sizes(text: string) {
  const bytes = utf8Length(text);
  let stored = bytes;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '"') {
      // A string, skipped whole (an escape's next character is never its end).
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (char === ',' || char === ':') stored += 1;
    else if (char === '-' || (char >= '0' && char <= '9')) {
      let end = i + 1;
      while (end < text.length && /[\d.e+-]/.test(text[end]!)) end++;
      const exponent = EXPONENT_NUMBER.exec(text.slice(i, end));
      if (exponent) {
        const [token, sign, fraction = '', power] = exponent;
        stored += (Number(power) > 0 ? Number(power) + 1 : 2 - Number(power) + fraction.length) + sign!.length - token.length;
      }
      i = end - 1;
    }
  }
  return { bytes, stored };
}

/**
 * A payload as the server will store it whole: at most `maxBytes` of UTF-8 JSON, and at most 1.5
 * × that as stored (only numbers with large exponents reach it). Over either, an object keeps its
 * members and its largest ones, largest first, become truncation markers until it fits (a tool
 * message keeps its status and tool_call_id); anything else becomes one marker:
 * `{truncated: true, bytes: <its size>, preview: <the start of its JSON text>}`.
 */
export function capJson(json: JsonValue, maxBytes: number): JsonValue {
  const text = JSON.stringify(json);
  const whole = sizes(text);
  const fits = ({ bytes, stored }: { bytes: number; stored: number }) => bytes <= maxBytes && stored <= Math.floor((maxBytes * 3) / 2);
  if (fits(whole)) return json;
  if (typeof json === 'object' && json !== null && !Array.isArray(json)) {
    const capped: JsonObject = { ...json };
    const members = Object.entries(json)
      .filter((entry): entry is [string, JsonValue] => entry[1] !== undefined)
      .map(([key, value]) => ({ key, text: JSON.stringify(value) }))
      .map((member) => ({ ...member, ...sizes(member.text) }))
      .sort((a, b) => b.stored - a.stored);
    const total = { ...whole };
    for (const member of members) {
      if (fits(total)) break;
      const marker = truncated(member.text, member.bytes, maxBytes);
      Object.defineProperty(capped, member.key, { value: marker, enumerable: true, writable: true, configurable: true });
      const markerSizes = sizes(JSON.stringify(marker));
      total.bytes += markerSizes.bytes - member.bytes;
      total.stored += markerSizes.stored - member.stored;
    }
    if (fits(total)) return capped;
  }
  return truncated(text, whole.bytes, maxBytes);
}

function truncated(text: string, bytes: number, maxBytes: number): JsonObject {
  // At most 3 bytes a character once escaped again, so the marker fits well within maxBytes.
  let preview = text.slice(0, Math.min(PREVIEW_CHARS, Math.floor(maxBytes / 8)));
  // Never half a surrogate pair: the server refuses an unpaired surrogate.
  if (/[\ud800-\udbff]$/.test(preview)) preview = preview.slice(0, -1);
  return { truncated: true, bytes, preview };
}
