import { describe, expect, it } from 'vitest';
import { errorJson, toJson } from '@agent-audit/client';

// Payloads go through toJson before they are sent: a value JSON cannot hold keeps what it says
// instead of becoming "[object Object]" or `{}` (packages/client/README.md, "Payloads").

describe('toJson', () => {
  it('keeps plain JSON, drops what JSON.stringify drops, and uses toJSON', () => {
    expect(toJson({ a: 1, b: 'x', c: [true, null, undefined, () => 1], d: undefined, e: Symbol('s'), f: () => 2, g: Number.NaN })).toEqual({
      a: 1,
      b: 'x',
      c: [true, null, null, null],
      g: null,
    });
    expect(toJson(undefined)).toBeNull();
    expect(toJson({ toJSON: () => ({ as: 'json' }) })).toEqual({ as: 'json' });
    class Point {
      constructor(
        public x: number,
        public y: number,
      ) {}
    }
    expect(toJson(new Point(1, 2))).toEqual({ x: 1, y: 2 });
  });

  it('writes a BigInt as its decimal string and a Date as its ISO string, wherever they are', () => {
    expect(toJson({ id: 123n, big: [2n ** 70n] })).toEqual({ id: '123', big: ['1180591620717411303424'] });
    expect(toJson({ at: new Date('2026-01-02T03:04:05.000Z') })).toEqual({ at: '2026-01-02T03:04:05.000Z' });
  });

  it('replaces a NUL character and an unpaired surrogate, in values and keys, with U+FFFD; keeps a surrogate pair', () => {
    expect(toJson({ 'a\u0000': ['b\u0000c', 'lone \uD83D', 'lone \uDE00', 'pair \uD83D\uDE00'] })).toEqual({
      'a\uFFFD': ['b\uFFFDc', 'lone \uFFFD', 'lone \uFFFD', 'pair \uD83D\uDE00'],
    });
  });

  it('marks a circular reference, and keeps a value that is only shared', () => {
    const node: Record<string, unknown> = { name: 'root', id: 7n };
    node.self = node;
    const shared = { n: 1 };
    expect(toJson(node)).toEqual({ name: 'root', id: '7', self: '[Circular]' });
    expect(toJson({ a: shared, b: shared })).toEqual({ a: { n: 1 }, b: { n: 1 } });
  });

  it('writes a Map as an object (as entries when a key is not a string) and a Set as an array', () => {
    expect(toJson(new Map<string, unknown>([['a', 1], ['b', new Set([1, 2])]]))).toEqual({ a: 1, b: [1, 2] });
    expect(toJson(new Map<unknown, string>([[1, 'one'], [{ k: 2 }, 'two']]))).toEqual([
      [1, 'one'],
      [{ k: 2 }, 'two'],
    ]);
  });

  it('writes bytes as their length, never the bytes themselves', () => {
    const image = new Uint8Array(150_000).fill(7);
    expect(toJson({ image })).toEqual({ image: { type: 'bytes', bytes: 150_000 } });
    expect(toJson(Buffer.from('abc'))).toEqual({ type: 'bytes', bytes: 3 });
    expect(toJson(new ArrayBuffer(16))).toEqual({ type: 'bytes', bytes: 16 });
    expect(toJson(new Float64Array(4))).toEqual({ type: 'bytes', bytes: 32 });
  });

  it('writes an Error as its name, message and own fields, without its stack', () => {
    const error = Object.assign(new TypeError('bad thing', { cause: new Error('root cause') }), { code: 'E_BAD', status: 400n });
    expect(toJson({ error })).toEqual({
      error: { name: 'TypeError', message: 'bad thing', code: 'E_BAD', status: '400', cause: { name: 'Error', message: 'root cause' } },
    });
  });
});

describe('errorJson', () => {
  it('keeps the fields of a thrown plain object', () => {
    expect(errorJson({ code: 'RATE_LIMITED', retryAfter: 3, id: 9n })).toEqual({ code: 'RATE_LIMITED', retryAfter: 3, id: '9' });
  });

  it('writes an Error as its name and message (and own fields), a thrown string as its message', () => {
    expect(errorJson(new RangeError('out of range'))).toEqual({ name: 'RangeError', message: 'out of range' });
    expect(errorJson('boom')).toEqual({ message: 'boom' });
    expect(errorJson(undefined)).toEqual({ message: 'undefined' });
    expect(errorJson({ toJSON: () => 'as text' })).toEqual({ message: 'as text' });
    expect(errorJson([1, 2])).toEqual({ message: '[1,2]' });
  });
});
