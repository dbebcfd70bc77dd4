// Cross-origin access is an allow-list (same origin by default, CORS_ORIGINS adds origins), and the
// browser's stream session cookie authenticates the SSE stream path only, never a query or a
// mutation (docs/subscriptions.md, "Browsers").
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.js';
import { bodyLimit } from '../../src/server/http-server.js';
import { listenWhileStarting } from '../../src/server/starting.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { firstInTime } from '../support/races.js';
import { startReverseProxy } from '../support/reverse-proxy.js';
import { sseStream } from '../support/streams.js';

let t: TestApp;
let base: string;
let admin: string;
beforeAll(async () => {
  t = await startTestApp({ CORS_ORIGINS: 'https://dashboard.example, http://localhost:5173' });
  base = (await t.app.start(0)).replace(/\/graphql$/, '');
  admin = await t.token('ada', 'superadmin');
});
afterAll(() => t.close());

const preflight = (origin: string) =>
  fetch(`${base}/graphql`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });

/** The stream session cookie (`name=value`) a sign-in with `token` sets. */
async function signIn(token: string) {
  const response = await fetch(`${base}/graphql/stream-session`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  return { response, cookie: response.headers.get('set-cookie') ?? '' };
}

describe(`cross-origin access (${backendName})`, () => {
  it('an origin not on the list gets no CORS headers at all', async () => {
    const response = await preflight('https://evil.example');
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    const post = await fetch(`${base}/graphql`, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    expect(post.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('an origin on CORS_ORIGINS gets itself back, without credentials (bearer tokens need none)', async () => {
    for (const origin of ['https://dashboard.example', 'http://localhost:5173']) {
      const response = await preflight(origin);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
      expect(response.headers.get('access-control-allow-headers')).toMatch(/authorization/i);
    }
  });

  it('a page on a listed origin may read Retry-After, and every answer varies by Origin (caches)', async () => {
    const post = (origin: string) =>
      fetch(`${base}/graphql`, { method: 'POST', headers: { origin, 'content-type': 'application/json', authorization: `Bearer ${admin}` }, body: '{"query":"{ __typename }"}' });
    const listed = await post('https://dashboard.example');
    expect(listed.headers.get('access-control-expose-headers')).toMatch(/retry-after/i);
    expect(listed.headers.get('vary')).toMatch(/origin/i);
    const other = await post('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('vary')).toMatch(/origin/i);
    const sameOrigin = await fetch(`${base}/graphql?query=%7B__typename%7D`, { headers: { authorization: `Bearer ${admin}` } });
    expect(sameOrigin.headers.get('vary')).toMatch(/origin/i);
  });

  it('no GraphQL answer is stored by a browser or a proxy (they carry audits: no-store); the GraphiQL page still revalidates', async () => {
    const headers = { authorization: `Bearer ${admin}` };
    const get = await fetch(`${base}/graphql?query=${encodeURIComponent('{ threads(first: 1) { edges { node { id } } } }')}`, { headers });
    const post = await fetch(`${base}/graphql`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    const refused = await fetch(`${base}/graphql?query=${encodeURIComponent('{ nope }')}`, { headers });
    for (const answer of [get, post, refused]) expect(answer.headers.get('cache-control')).toBe('no-store');
    const graphiql = await fetch(`${base}/graphql`, { headers: { accept: 'text/html' } });
    expect(graphiql.headers.get('cache-control')).toBe('no-cache');
  });

  it('the answers given before yoga (a body over the limit, an instance still starting) follow the same list', async () => {
    const body = Buffer.alloc(bodyLimit(t.app.config) + 1, 0x20);
    const tooLarge = (origin: string) => fetch(`${base}/graphql`, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body });
    const listed = await tooLarge('https://dashboard.example');
    expect(listed.status).toBe(413);
    expect(listed.headers.get('access-control-allow-origin')).toBe('https://dashboard.example');
    expect(listed.headers.get('vary')).toMatch(/origin/i);
    expect((await tooLarge('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();

    const starting = await listenWhileStarting(0, '127.0.0.1', ['https://dashboard.example']);
    try {
      const url = `http://127.0.0.1:${(starting.address() as AddressInfo).port}/graphql`;
      const answer = await fetch(url, { method: 'POST', headers: { origin: 'https://dashboard.example', 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
      expect(answer.status).toBe(503);
      expect(answer.headers.get('access-control-allow-origin')).toBe('https://dashboard.example');
      expect(answer.headers.get('access-control-expose-headers')).toMatch(/retry-after/i);
      const other = await fetch(url, { headers: { origin: 'https://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await new Promise((resolve) => starting.close(resolve));
    }
  });

  it('CORS_ORIGINS must hold origins', () => {
    expect(() => loadConfig({ CORS_ORIGINS: 'https://dashboard.example/path' })).toThrow(/CORS_ORIGINS/);
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow(/CORS_ORIGINS/);
  });
});

describe(`the stream session cookie (${backendName})`, () => {
  it('a sign-in sets an HttpOnly, SameSite=Strict cookie scoped to the stream path', async () => {
    const { response, cookie } = await signIn(admin);
    expect(response.status).toBe(200);
    expect((await response.json()).expiresAt).toMatch(/^\d{4}-/);
    expect(cookie).toMatch(/^audit_stream=[\w.-]+;/);
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Strict/i);
    expect(cookie).toMatch(/; Path=\/graphql\/stream(;|$)/);
    expect(cookie).toMatch(/; Max-Age=\d+/);
  });

  it('a sign-in without a valid bearer token is 401 with the reason', async () => {
    const { response, cookie } = await signIn('nonsense');
    expect(response.status).toBe(401);
    expect(cookie).toBe('');
    const body = await response.json();
    expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(body.errors[0].message).toMatch(/not a well-formed JWT/);
  });

  it('opens a subscription on GET /graphql/stream, and nothing else', async () => {
    const { cookie } = await signIn(admin);
    const pair = cookie.split(';')[0]!;
    const thread = (await t.gql('mutation { createThread(input: { title: "c" }) { id } }', {}, admin)).data.createThread.id;
    const url = (query: string, variables: object) => `${base}/graphql/stream?${new URLSearchParams({ query, variables: JSON.stringify(variables) })}`;

    const controller = new AbortController();
    const stream = await fetch(url('subscription($t: ID!) { threadChanges(threadId: $t) { cursor run { id status } } }', { t: thread }), {
      headers: { accept: 'text/event-stream', cookie: pair },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    await t.gql('mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }', { t: thread }, admin);
    let text = '';
    while (!/event: next/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toMatch(/"status":"QUEUED"/);
    controller.abort();

    // A query over the stream path is refused, even as an event stream.
    const query = await fetch(url('query($t: ID!) { thread(id: $t) { id } }', { t: thread }), { headers: { accept: 'text/event-stream', cookie: pair } });
    const refused = await query.text();
    expect(refused).toMatch(/UNAUTHENTICATED/);
    expect(refused).toMatch(/subscriptions only/);
    // The cookie on /graphql authenticates nothing.
    const mutation = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: pair },
      body: JSON.stringify({ query: 'mutation { createThread(input: { title: "csrf" }) { id } }' }),
    });
    const answer = await mutation.json();
    expect(answer.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    // Nor does its value as a bearer token.
    const asBearer = await t.gql('{ threads { edges { node { id } } } }', {}, decodeURIComponent(pair.split('=')[1]!));
    expect(asBearer.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(asBearer.errors?.[0]?.message).toMatch(/stream session/);
  });

  it('the stream path without the cookie, or from a foreign origin, is refused', async () => {
    const { cookie } = await signIn(admin);
    const url = `${base}/graphql/stream?${new URLSearchParams({ query: 'subscription { runChanged(threadId: "x") { id } }' })}`;
    const anonymous = await fetch(url, { headers: { accept: 'text/event-stream' } });
    expect(await anonymous.text()).toMatch(/UNAUTHENTICATED/);
    const foreign = await fetch(url, { headers: { accept: 'text/event-stream', cookie: cookie.split(';')[0]!, origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()).errors[0].message).toMatch(/origin/i);
  });

  it("behind a TLS-terminating proxy that rewrites Host (nginx's default), the page's own origin signs in and opens its stream; another is refused", async () => {
    const proxy = await startReverseProxy(`${base}/graphql`, { proto: 'https' });
    try {
      // The browser's origin is the proxy's public one; the server sees its own address as Host.
      const own = proxy.origin.replace(/^http:/, 'https:');
      const signedIn = await fetch(`${proxy.origin}/graphql/stream-session`, { method: 'POST', headers: { origin: own, authorization: `Bearer ${admin}` } });
      expect(signedIn.status).toBe(200);
      const cookie = signedIn.headers.get('set-cookie') ?? '';
      expect(cookie).toMatch(/; Secure/);
      const url = `${proxy.origin}/graphql/stream?${new URLSearchParams({ query: 'subscription { toolActivity { windowSeconds } }' })}`;
      const controller = new AbortController();
      const stream = await fetch(url, { headers: { accept: 'text/event-stream', origin: own, cookie: cookie.split(';')[0]! }, signal: controller.signal });
      expect([stream.status, stream.headers.get('content-type')]).toEqual([200, 'text/event-stream']);
      controller.abort();
      for (const origin of ['https://evil.example', `https://evil.example:${new URL(proxy.origin).port}`]) {
        const foreign = await fetch(`${proxy.origin}/graphql/stream-session`, { method: 'POST', headers: { origin, authorization: `Bearer ${admin}` } });
        expect(foreign.status).toBe(403);
      }
    } finally {
      await proxy.close();
    }
  });

  it('a sign-out clears the cookie', async () => {
    const response = await fetch(`${base}/graphql/stream-session`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.headers.get('set-cookie')).toMatch(/^audit_stream=; .*Max-Age=0/);
  });

  it('a sign-out makes that session useless at once, on every instance (issue 42, item 7)', async () => {
    const { cookie } = await signIn(admin);
    const pair = cookie.split(';')[0]!;
    const other = await signIn(admin);
    const thread = (await t.gql('mutation { createThread(input: { title: "signed out" }) { id } }', {}, admin)).data.createThread.id;
    const url = `${base}/graphql/stream?${new URLSearchParams({ query: 'subscription($t: ID!) { runChanged(threadId: $t) { id } }', variables: JSON.stringify({ t: thread }) })}`;
    const open = async (cookiePair: string) => {
      const controller = new AbortController();
      const response = await fetch(url, { headers: { accept: 'text/event-stream', cookie: cookiePair }, signal: controller.signal });
      const reader = response.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      return first;
    };
    expect(await open(pair)).not.toMatch(/UNAUTHENTICATED/);
    expect((await fetch(`${base}/graphql/stream-session`, { method: 'DELETE', headers: { cookie: pair } })).status).toBe(204);
    const refused = await open(pair);
    expect(refused).toMatch(/UNAUTHENTICATED/);
    expect(refused).toMatch(/signed out/);
    // Another instance on the same database refuses it too: the revocation is stored there.
    const [row] = await t.app.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM stream_session_revocation');
    expect(row!.n).toBeGreaterThanOrEqual(1);
    // Another session of the same principal is not signed out.
    expect(await open(other.cookie.split(';')[0]!)).not.toMatch(/UNAUTHENTICATED/);
  });

  it('a sign-out holds on an instance whose clock runs an hour behind the database\'s, past the session\'s expiry by the database\'s clock', async () => {
    // Signed out before the expiry by the database's clock: a loaded machine may take longer, and signs in again.
    const signedOutBeforeExpiry = async () => {
      const session = await signInExpiringSoon();
      if (session === null) return null;
      expect((await signOut(session.pair)).status).toBe(204);
      return (await databasePast(session.exp)) ? null : session;
    };
    const { exp, pair } = await firstInTime('a sign-in and sign-out within 1 s', signedOutBeforeExpiry);
    // The database's clock passes the expiry; another sign-out then clears what it takes as expired.
    await expect.poll(() => databasePast(exp)).toBe(true);
    expect((await signOut((await signIn(admin)).cookie.split(';')[0]!)).status).toBe(204);

    expect(await firstChunkAnHourBehind(pair)).toMatch(/signed out/);
  });

  it("a sign-out the database's clock and this instance's see after the session's expiry holds on an instance whose clock runs an hour behind", async () => {
    const { exp, pair } = await firstInTime('a sign-in within 1 s', signInExpiringSoon);
    // Both clocks pass the expiry, then the session signs out.
    await expect.poll(() => databasePast(exp)).toBe(true);
    await expect.poll(() => Date.now() > exp * 1000).toBe(true);
    expect((await signOut(pair)).status).toBe(204);

    expect(await firstChunkAnHourBehind(pair)).toMatch(/signed out/);
  });

  it("a sign-out ends the session's streams already open (SIGNED_OUT), not another session's", async () => {
    const [pair, otherPair] = [(await signIn(admin)).cookie.split(';')[0]!, (await signIn(admin)).cookie.split(';')[0]!];
    const thread = (await t.gql('mutation { createThread(input: { title: "open when signed out" }) { id } }', {}, admin)).data.createThread.id;
    const url = `${base}/graphql/stream?${new URLSearchParams({ query: 'subscription($t: ID!) { runChanged(threadId: $t) { id } }', variables: JSON.stringify({ t: thread }) })}`;
    const openStream = async (cookiePair: string) => {
      const client = new AbortController();
      return sseStream(await fetch(url, { headers: { accept: 'text/event-stream', cookie: cookiePair }, signal: client.signal }), client);
    };
    const [signedOut, copy, other] = [await openStream(pair), await openStream(pair), await openStream(otherPair)];
    try {
      await createRunIn(thread);
      for (const stream of [signedOut, copy, other]) await stream.take(1);

      expect((await fetch(`${base}/graphql/stream-session`, { method: 'DELETE', headers: { cookie: pair } })).status).toBe(204);
      for (const stream of [signedOut, copy]) {
        expect(await stream.ended()).toEqual({ kind: 'complete' });
        const [last] = stream.results.slice(-1);
        expect(last!.errors![0]!.extensions).toEqual({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SIGNED_OUT' });
        expect(last!.errors![0]!.message).toMatch(/signed out/);
      }
      await createRunIn(thread);
      await other.take(2);
      expect(other.ending).toBeNull();
      expect(signedOut.results.filter((result) => result.data).length).toBe(1);
    } finally {
      await Promise.all([signedOut, copy, other].map((stream) => stream.close()));
    }
  });
});

/** A session whose token expires in 1 to 2 s (its cookie `name=value`), or null when a loaded machine signed in too late for it. */
async function signInExpiringSoon(): Promise<{ exp: number; pair: string } | null> {
  const exp = Math.floor(Date.now() / 1000) + 2;
  const { response, cookie } = await signIn(await mintToken(TEST_JWT_SECRET, { sub: 'ada', role: 'superadmin' }, exp));
  return response.status === 200 ? { exp, pair: cookie.split(';')[0]! } : null;
}

const signOut = (pair: string) => fetch(`${base}/graphql/stream-session`, { method: 'DELETE', headers: { cookie: pair } });

/** Whether the database's clock has passed `exp` (seconds). */
const databasePast = async (exp: number) => (await t.app.db.sql.query<{ past: boolean }>('SELECT now() > to_timestamp($1) AS past', [exp]))[0]!.past;

/** What a stream opened with the cookie `pair` first sends, this instance's clock set an hour behind until the test ends. */
async function firstChunkAnHourBehind(pair: string): Promise<string> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 3_600_000, shouldAdvanceTime: true });
  onTestFinished(() => void vi.useRealTimers());
  const thread = (await t.gql('mutation { createThread(input: { title: "signed out, clock behind" }) { id } }', {}, admin)).data.createThread.id;
  const url = `${base}/graphql/stream?${new URLSearchParams({ query: 'subscription($t: ID!) { runChanged(threadId: $t) { id } }', variables: JSON.stringify({ t: thread }) })}`;
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', cookie: pair }, signal: controller.signal });
  const first = new TextDecoder().decode((await response.body!.getReader().read()).value);
  controller.abort();
  return first;
}

async function createRunIn(threadId: string) {
  const created = await t.gql('mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }', { t: threadId }, admin);
  expect(created.errors).toBeUndefined();
}
