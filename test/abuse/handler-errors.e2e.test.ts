// Issue 42, item 1: no handler error ends the process. A token whose `exp` no Date can hold is
// UNAUTHENTICATED wherever tokens are verified; an error thrown inside any HTTP route answers 500
// with a correlation id, logged once, and the server goes on serving.
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { E2E_JWT_SECRET, serverForFile, tokenFor } from '../e2e/support/server.js';

const FAULTS = fileURLToPath(new URL('./fixtures/throwing-responses.mjs', import.meta.url));

const server = serverForFile({ NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${FAULTS}`.trim() });
let base: string;
beforeAll(() => {
  base = server.url.replace(/\/graphql$/, '');
});

/** A valid HS256 token that expires in year ~300000, past what a Date can hold. */
const farFutureToken = () =>
  new SignJWT({ role: 'superadmin' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('eve')
    .setIssuedAt()
    .setExpirationTime('300000y')
    .sign(new TextEncoder().encode(E2E_JWT_SECRET));

async function alive() {
  const response = await fetch(`${base}/healthz`);
  expect(response.status).toBe(200);
  expect(server.process.child.exitCode).toBeNull();
  expect(server.process.child.signalCode).toBeNull();
}

describe('a token whose exp no date can hold', () => {
  it('is UNAUTHENTICATED at POST /graphql/stream-session, and the server lives', async () => {
    const token = await farFutureToken();
    const response = await fetch(`${base}/graphql/stream-session`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(401);
    const body = await response.json();
    expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(body.errors[0].message).toMatch(/"exp"/);
    await alive();
  });

  it('is UNAUTHENTICATED as a bearer token on /graphql', async () => {
    const token = await farFutureToken();
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ threads(first: 1) { edges { node { id } } } }' }),
    });
    const body = await response.json();
    expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    await alive();
  });
});

describe('an error thrown inside any HTTP route', () => {
  const admin = () => tokenFor('ada', 'superadmin');
  const routes: { name: string; request: () => Promise<[string, RequestInit]> }[] = [
    { name: 'GET /healthz', request: async () => ['/healthz', {}] },
    { name: 'GET /readyz', request: async () => ['/readyz', {}] },
    { name: 'GET /metrics', request: async () => ['/metrics', {}] },
    { name: 'GET / (the timeline page)', request: async () => ['/', {}] },
    { name: 'GET /app.js', request: async () => ['/app.js', {}] },
    { name: 'POST /graphql/stream-session', request: async () => ['/graphql/stream-session', { method: 'POST', headers: { authorization: `Bearer ${await admin()}` } }] },
    { name: 'DELETE /graphql/stream-session', request: async () => ['/graphql/stream-session', { method: 'DELETE' }] },
    { name: 'GET /graphql/stream', request: async () => ['/graphql/stream?query=subscription%7B__typename%7D', { headers: { accept: 'text/event-stream' } }] },
    { name: 'POST /graphql', request: async () => ['/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' }] },
    { name: 'GET /graphql (GraphiQL)', request: async () => ['/graphql', { headers: { accept: 'text/html' } }] },
  ];

  it.each(routes)('$name: 500 with a correlation id, logged once, and the server lives', async ({ request }) => {
    const [path, init] = await request();
    const requestId = `fault-${Math.random().toString(36).slice(2)}`;
    const response = await fetch(`${base}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-test-throw': '1', 'x-request-id': requestId } });
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body.errors[0].extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR', requestId });
    expect(JSON.stringify(body)).not.toMatch(/test fault|at .*\.ts/);
    // One error line with the id (the access line of the same request carries it too).
    await expect.poll(() => server.process.output().split('\n').filter((line) => line.includes(requestId) && !line.includes('"msg":"request"')).length).toBe(1);
    await alive();
  });
});
