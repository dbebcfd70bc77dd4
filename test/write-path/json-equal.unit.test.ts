import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../../src/domain/json.js';

describe('jsonEqual: exact JSON comparison of replays', () => {
  it.each([
    ['a null key against a missing key', { a: 1, b: null }, { a: 1 }],
    ['a null key against another key', { path: 'x', force: null }, { path: 'x', recursive: true }],
    ['the same number of keys, different names', { a: null }, { b: null }],
    ['a nested null against a nested missing key', { outer: { inner: null } }, { outer: {} }],
    ['null inside an array against an empty slot', [1, null], [1]],
    ['arrays in another order', [1, 2], [2, 1]],
    ['an object against an array', {}, []],
    ['a string that prints like a number', { n: '1' }, { n: 1 }],
    ['false against null', false, null],
    ['0 against null', 0, null],
    ['an empty string against null', '', null],
    ['an object against null', {}, null],
    ['a deeper difference', { a: [{ b: { c: [1, { d: null }] } }] }, { a: [{ b: { c: [1, { e: null }] } }] }],
  ])('%s differs', (_what, a, b) => {
    expect(jsonEqual(a, b)).toBe(false);
    expect(jsonEqual(b, a)).toBe(false);
  });

  it.each([
    ['objects in another key order', { a: 1, b: { c: null, d: [1, 2] } }, { b: { d: [1, 2], c: null }, a: 1 }],
    ['numbers that print alike as JSON (1 and 1.0, 1e2 and 100)', JSON.parse('{"a":1.0,"b":1e2}'), { a: 1, b: 100 }],
    ['nested nulls on both sides', { a: { b: null } }, { a: { b: null } }],
    ['a missing value and null at the top level: a JSON column stores both as NULL', undefined, null],
    ['a key whose value is undefined, which JSON cannot carry, and a missing key', { a: 1, b: undefined }, { a: 1 }],
  ])('%s are equal', (_what, a, b) => {
    expect(jsonEqual(a, b)).toBe(true);
    expect(jsonEqual(b, a)).toBe(true);
  });
});
