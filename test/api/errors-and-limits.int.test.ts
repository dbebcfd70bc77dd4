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

  it('does not suggest field names to a client that guesses', async () => {
    const response = await t.gql(`{ threa(id: "x") { id } }`, {}, admin);
    expect(response.errors?.[0]?.message).not.toMatch(/Did you mean/);
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
  it('/healthz, /readyz, GraphiQL and the body limit on a real port', async () => {
    const url = await t.app.start(0);
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
});
