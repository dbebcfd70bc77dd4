import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET, errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const CREATE_THREAD = `mutation { createThread(input: { title: "auth" }) { id ownerId } }`;
const sign = (claims: Record<string, unknown>, secret = TEST_JWT_SECRET, expiresIn: string | number = '1h') =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(expiresIn).sign(new TextEncoder().encode(secret));

async function createThreadWith(authorization: string | undefined) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ query: CREATE_THREAD }),
  });
  return (await response.json()) as { data?: any; errors?: any[] };
}

describe(`authentication (${backendName})`, () => {
  it('a valid token makes its sub the owner', async () => {
    const response = await createThreadWith(`Bearer ${await t.token('alice', 'user')}`);
    expect(response.errors).toBeUndefined();
    expect(response.data.createThread.ownerId).toBe('alice');
  });

  it.each([
    ['missing', async () => undefined],
    ['not a bearer header', async () => 'Basic abc'],
    ['malformed', async () => 'Bearer not-a-jwt'],
    ['wrongly signed', async () => `Bearer ${await sign({ sub: 'alice', role: 'user' }, 'another-secret-another-secret-1234')}`],
    ['expired', async () => `Bearer ${await sign({ sub: 'alice', role: 'user' }, TEST_JWT_SECRET, Math.floor(Date.now() / 1000) - 10)}`],
    ['without sub', async () => `Bearer ${await sign({ role: 'user' })}`],
    ['with an unknown role', async () => `Bearer ${await sign({ sub: 'alice', role: 'root' })}`],
  ])('a %s token is UNAUTHENTICATED and changes nothing', async (_case, header) => {
    const before = await t.app.db.prisma.thread.count();
    const response = await createThreadWith(await header());
    expect(errorCode(response)).toBe('UNAUTHENTICATED');
    expect(response.data ?? null).toBeNull();
    expect(await t.app.db.prisma.thread.count()).toBe(before);
  });

  it.each([
    ['an audience and an issuer', { aud: 'agent-audit', iss: 'https://id.example.com' }],
    ['a list of audiences', { aud: ['agent-audit', 'dashboards'] }],
  ])('a token from an identity service carrying %s is taken: the server checks no aud of its own', async (_case, claims) => {
    const response = await createThreadWith(`Bearer ${await sign({ sub: 'idp-user', role: 'user', ...claims })}`);
    expect(response.errors).toBeUndefined();
    expect(response.data.createThread.ownerId).toBe('idp-user');
  });

  it.each([
    ['an unknown role', { sub: 'alice', role: 'root' }, 'The token\'s "role" claim ("root") is not one of user, admin, superadmin, worker'],
    ['a list of roles', { sub: 'alice', roles: ['admin'] }, 'The token has no "role" claim: give it one of user, admin, superadmin, worker'],
    ['a role that is no string', { sub: 'alice', role: ['admin'] }, 'The token\'s "role" claim must be a string, one of user, admin, superadmin, worker'],
    ['a numeric sub', { sub: 42, role: 'user' }, 'The token\'s "sub" claim must be a non-empty string (the principal\'s id)'],
    ['no sub', { role: 'user' }, 'The token has no "sub" claim: give it the principal\'s id'],
  ])('a token with %s is UNAUTHENTICATED with a message naming that claim', async (_case, claims, message) => {
    const response = await createThreadWith(`Bearer ${await sign(claims)}`);
    expect(errorCode(response)).toBe('UNAUTHENTICATED');
    expect(response.errors?.[0]?.message).toBe(message);
  });

  it("a token minted with nbf = now on a machine whose clock is a little ahead is taken; exp stays exact", async () => {
    const now = Math.floor(Date.now() / 1000);
    const ahead = await createThreadWith(`Bearer ${await sign({ sub: 'skewed', role: 'user', nbf: now + 5 })}`);
    expect(ahead.errors).toBeUndefined();
    const later = await createThreadWith(`Bearer ${await sign({ sub: 'skewed', role: 'user', nbf: now + 600 })}`);
    expect(errorCode(later)).toBe('UNAUTHENTICATED');
    expect(later.errors?.[0]?.message).toMatch(/^The token is not valid before .*: check the clock of the machine that minted it$/);
    const expired = await createThreadWith(`Bearer ${await sign({ sub: 'skewed', role: 'user' }, TEST_JWT_SECRET, now - 1)}`);
    expect(errorCode(expired)).toBe('UNAUTHENTICATED');
    expect(expired.errors?.[0]?.message).toMatch(/^The token expired at /);
  });

  it('a token whose exp is in milliseconds (Date.now(), not seconds) is refused, naming the mistake, not taken as valid for millennia', async () => {
    const inMs = await createThreadWith(`Bearer ${await sign({ sub: 'ms-minter', role: 'user' }, TEST_JWT_SECRET, Date.now() + 3_600_000)}`);
    expect(errorCode(inMs)).toBe('UNAUTHENTICATED');
    expect(inMs.errors?.[0]?.message).toBe('The token\'s "exp" claim is past the year 5000: exp counts seconds since 1970, not milliseconds');
    const longLived = await createThreadWith(`Bearer ${await sign({ sub: 'long-lived', role: 'user' }, TEST_JWT_SECRET, '100y')}`);
    expect(longLived.errors).toBeUndefined();
  });

  it('a token too large for the HTTP headers is answered 431 with a message that says so', async () => {
    const base = await t.app.start(0);
    const huge = await sign({ sub: 'alice', role: 'user', groups: Array.from({ length: 2000 }, (_, i) => `group-${i}`) });
    const response = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${huge}` }, body: '{"query":"{ __typename }"}' });
    expect(response.status).toBe(431);
    const body = (await response.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('BAD_REQUEST');
    expect(body.errors[0]!.message).toBe('Not a valid HTTP request: its headers are larger than 16 KiB, the most this server reads (a token that large: mint it with fewer claims)');
  });

  it('introspection works without a token', async () => {
    const response = await t.gql(`{ __schema { queryType { name } } }`);
    expect(response.errors).toBeUndefined();
    expect(response.data.__schema.queryType.name).toBe('Query');
  });

  it('a wrong role is FORBIDDEN: only workers may claim runs', async () => {
    const owner = await t.token('bob', 'superadmin');
    const thread = await t.gql(CREATE_THREAD, {}, owner);
    const run = await t.gql(`mutation($id: ID!) { createRun(input: { threadId: $id }) { id } }`, { id: thread.data.createThread.id }, owner);
    const claim = await t.gql(`mutation($id: ID!) { claimRun(input: { runId: $id }) { epoch } }`, { id: run.data.createRun.id }, owner);
    expect(errorCode(claim)).toBe('FORBIDDEN');
    // The refusal names the rule, as the others do.
    expect(claim.errors?.[0]?.message).toBe("Only a worker token may call claimRun (this token's role is superadmin)");
  });
});
