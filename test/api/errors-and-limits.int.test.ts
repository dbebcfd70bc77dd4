import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { onLogLine } from '../../src/log.js';
import { backendName } from '../support/database.js';
import { createThread } from '../support/lifecycle.js';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('ada', 'superadmin');
});
afterAll(() => t.close());

describe(`errors and query limits (${backendName})`, () => {
  it('rejects queries nested too deep, with a clear error', async () => {
    const deep = `query($id: ID!) { thread(id: $id) { runs { thread { runs { thread { runs { thread { runs { thread { runs { id } } } } } } } } } } }`;
    const response = await t.gql(deep, { id: await createThread(t, admin) }, admin);
    expect(response.errors?.[0]?.message).toMatch(/depth/i);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.data ?? null).toBeNull();
  });

  it('rejects too many aliases', async () => {
    const aliases = Array.from({ length: 40 }, (_, i) => `a${i}: thread(id: $id) { id }`).join(' ');
    const response = await t.gql(`query($id: ID!) { ${aliases} }`, { id: await createThread(t, admin) }, admin);
    expect(response.errors?.[0]?.message).toMatch(/alias/i);
  });

  it('reports malformed scalars as BAD_USER_INPUT', async () => {
    const response = await t.gql(
      `mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }`,
      { input: { lease: { runId: 'x', epoch: 1 }, operationId: 'm', sequence: 'one', observedAt: 'yesterday' } },
      await t.token('w', 'worker'),
    );
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
  });

  it('masks unexpected failures: no stack, no SQL, a correlation id instead', async () => {
    const broken = await startTestApp();
    const token = await broken.token('ada', 'superadmin');
    await broken.loseDatabase(); // the database goes away under a running server
    const errors: string[] = [];
    const stopReading = onLogLine((line) => void errors.push(line));
    try {
      const response = await broken.gql(`mutation { createThread(input: { title: "x" }) { id } }`, {}, token);
      expect(errorCode(response)).toBe('INTERNAL_SERVER_ERROR');
      const text = JSON.stringify(response);
      expect(text).not.toMatch(/SELECT|INSERT|stack|at .*\.ts|prisma/i);
      expect(response.errors?.[0]?.extensions?.requestId).toEqual(expect.any(String));
      // One line, naming the correlation id and the failure, without a stack of the driver's error.
      const logged = errors.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'unexpected error');
      expect(logged).toEqual([expect.objectContaining({ level: 'error', requestId: response.errors![0]!.extensions!.requestId })]);
      expect(logged[0].error.message).toEqual(expect.any(String));
    } finally {
      stopReading();
      await broken.close().catch(() => {});
    }
  });
});

describe(`health probes (${backendName})`, () => {
  let listening: Promise<string> | undefined;
  const listen = () => (listening ??= t.app.start(0));

  it('/healthz, /readyz, GraphiQL and the body limit on a real port', async () => {
    const url = await listen();
    const base = url.replace(/\/graphql$/, '');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const oversized = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(9 * 1024 * 1024) } }),
    });
    expect(oversized.status).toBe(413);
    expect((await oversized.json()).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const page = await fetch(url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/graphiql/i);
  });

  it('/health (a typo of /healthz) is 404 as any unknown path, not an empty 200 that looks healthy', async () => {
    const base = (await listen()).replace(/\/graphql$/, '');
    for (const path of ['/health', '/status/health']) {
      const answer = await fetch(`${base}${path}`);
      expect(answer.status).toBe(404);
      await answer.arrayBuffer();
    }
  });

  it('a GraphQL GET whose URL ends in /health runs as any other (yoga answered any URL ending so with an empty 200)', async () => {
    const answer = await t.app.yoga.fetch(`http://test/graphql?query=${encodeURIComponent('{ __typename }')}&from=/health`, { headers: { authorization: `Bearer ${admin}` } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it("GraphiQL's page (9 MB) is sent compressed when the browser accepts gzip, and a browser that has it gets 304", async () => {
    const url = await listen();
    const raw = (await import('node:http')).get;
    // node's fetch decompresses by itself: a bare request shows what travels.
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: number }>((resolve, reject) => {
        raw(url, { headers: { accept: 'text/html', ...headers } }, (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => (bytes += chunk.byteLength));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes }));
        }).on('error', reject);
      });
    const plain = await get({});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const etag = plain.headers.etag as string;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(plain.headers['cache-control']).toBe('no-cache');
    expect(plain.headers['content-security-policy']).toMatch(/script-src/);

    const gzipped = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toMatch(/accept-encoding/i);
    expect(gzipped.headers.etag).toBe(etag);
    expect(gzipped.bytes).toBeLessThan(plain.bytes / 2);

    const again = await get({ 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.bytes).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect((await get({ 'if-none-match': '"another"' })).status).toBe(200);
    // An answer this small is sent as it is (larger ones: page-assets.int.test.ts).
    const answer = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: '{"query":"{ __typename }"}' });
    expect(answer.headers.get('content-encoding')).toBeNull();
  });
});
