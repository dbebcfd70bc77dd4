// A bound is checked before the work it bounds: an over-long value is refused by its length,
// never parsed or counted whole first (8 MiB of digits in a BigInt cost seconds of the event
// loop, an 8M-character title 75 MB to count), and so refused before anyone is authenticated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('bounds-admin', 'superadmin');
});
afterAll(() => t.close());

const MODEL_STARTED = 'mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }';
const modelStarted = (sequence: string) => ({
  lease: { runId: '00000000-0000-4000-8000-000000000000', epoch: 1 },
  operationId: 'm-1', sequence, model: 'gpt', input: { q: 1 }, observedAt: '2026-11-29T21:00:00.000Z', clock: { clockId: 'c', nanos: '1000' },
});

describe(`bounds before work (${backendName})`, () => {
  it('a BigInt longer than 20 characters is refused by its length, from anyone, before it is parsed', async () => {
    for (const sequence of ['9'.repeat(8_000_000), '0'.repeat(20) + '1']) {
      const response = await t.gql(MODEL_STARTED, { input: modelStarted(sequence) }, null);
      expect(errorCode(response), JSON.stringify(response).slice(0, 500)).toBe('BAD_USER_INPUT');
      expect(response.errors![0]!.message).toMatch(/BigInt is longer than its limit of 20 characters/);
    }
    // The longest 64-bit integer is 20 characters: it parses, and the caller is then asked who it is.
    expect(errorCode(await t.gql(MODEL_STARTED, { input: modelStarted('-9223372036854775808') }, null))).toBe('UNAUTHENTICATED');
  });

  it('a text is counted up to its limit: an 8M-character title is refused as longer than 1,000 characters', async () => {
    const response = await t.gql('mutation($title: String) { createThread(input: { title: $title }) { id } }', { title: 'x'.repeat(8_000_000) }, admin);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0]!.message).toMatch(/^title is longer than its limit of 1000 characters$/);
    expect((await t.gql('{ threads(first: 1) { totalCount } }', {}, admin)).data.threads.totalCount).toBe(0);
  });

  it('a threads cursor is refused by its length before it is decoded: one padded to megabytes is not a cursor', async () => {
    const position = (padding: string) => Buffer.from(`["2026-11-29T21:00:00.000Z",${padding}"00000000-0000-4000-8000-000000000000"]`).toString('base64url');
    const THREADS = 'query($after: String) { threads(first: 1, after: $after) { edges { cursor } } }';
    expect((await t.gql(THREADS, { after: position('') }, admin)).errors).toBeUndefined();
    const response = await t.gql(THREADS, { after: position(' '.repeat(5_000_000)) }, admin);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.errors![0]!.message).toBe('after is not a cursor of the threads query');
  });
});
