// Refused documents held the server's memory until an hour had passed. yoga keeps each parsed
// document, and the error of each that does not parse, by its text (1024 of each, whatever their
// size), and each document's validation errors with it; an error kept the request that raised it
// (its stack's frames hold the request's context, its body included). Anyone, without a token,
// could fill that: 200 distinct documents of 1 MB, each refused, held 800 MB (heap and request
// bodies) on a soak run. What shows it here: a refused request can be collected once answered, and
// the memory left after many large refused documents stays small. This file runs in a process of
// its own (vitest.config.ts, "isolated"), with the collector exposed to it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** A full collection, after the current job (a WeakRef read in a job keeps its target for that job). */
const collect = async () => {
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  gc();
};

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

let n = 0;
/** Sends `query` as an anonymous client would, and answers the request (held weakly) and its error code. */
async function refused(query: string): Promise<{ request: WeakRef<Request>; code: unknown }> {
  const request = new Request('http://127.0.0.1/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const response = await t.app.yoga.fetch(request);
  const body = (await response.json()) as { errors?: { extensions?: { code?: unknown } }[] };
  return { request: new WeakRef(request), code: body.errors?.[0]?.extensions?.code };
}

describe('refused documents', () => {
  it.each([
    ['does not validate', () => `{ noSuchField${++n} }`, 'GRAPHQL_VALIDATION_FAILED'],
    ['does not parse', () => `{ threads(first: ${++n} `, 'GRAPHQL_PARSE_FAILED'],
    ['runs more searches than a request may', () => `{ ${[0, 1, 2].map((k) => `s${k}: searchAudits(text: "zz${++n}") { items { __typename } }`).join(' ')} }`, 'BAD_USER_INPUT'],
  ])('a request whose document %s can be collected once answered', async (_, document, code) => {
    const answered = await refused(document());
    expect(answered.code).toBe(code);
    await collect();
    expect(answered.request.deref()).toBeUndefined();
  });

  it('many distinct large documents leave little memory behind', async () => {
    const MiB = 1024 * 1024;
    const pad = 'y'.repeat(MiB);
    const documents = 40;
    await collect();
    const before = process.memoryUsage();
    for (let i = 0; i < documents; i++) {
      expect((await refused(`{ noSuchField(text: "${i}${pad}") }`)).code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect((await refused(`{ threads(text: "${i}${pad}" `)).code).toBe('GRAPHQL_PARSE_FAILED');
    }
    await collect();
    const after = process.memoryUsage();
    const held = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
    // Kept, 80 documents of 1 MiB held at least 80 MiB (each also as its request's body).
    expect(held).toBeLessThan(24 * MiB);
  }, 60_000);
});
