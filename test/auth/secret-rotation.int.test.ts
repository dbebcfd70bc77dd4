// Rotating AUTH_JWT_SECRET without downtime: instances started with the new secret and
// AUTH_JWT_PREVIOUS_SECRET still take the tokens the identity service signed with the old one,
// until it signs with the new one and the old tokens have expired.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

const OLD = 'the-old-secret-that-is-long-enough-for-hs256';
const NEW = 'the-new-secret-that-is-long-enough-for-hs256';
const CREATE_THREAD = `mutation { createThread(input: { title: "rotation" }) { ownerId } }`;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ AUTH_JWT_SECRET: NEW, AUTH_JWT_PREVIOUS_SECRET: OLD });
});
afterAll(() => t.close());

describe(`secret rotation (${backendName})`, () => {
  it.each([
    ['the new secret', NEW],
    ['the previous secret', OLD],
  ])('a token signed with %s is taken', async (_case, secret) => {
    const response = await t.gql(CREATE_THREAD, {}, await mintToken(secret, { sub: 'rotated', role: 'user' }, '1h'));
    expect(response.errors).toBeUndefined();
    expect(response.data.createThread.ownerId).toBe('rotated');
  });

  it('a token signed with any other secret is still UNAUTHENTICATED', async () => {
    const response = await t.gql(CREATE_THREAD, {}, await mintToken('a-third-secret-that-is-long-enough-for-hs', { sub: 'eve', role: 'user' }, '1h'));
    expect(errorCode(response)).toBe('UNAUTHENTICATED');
    expect(response.errors?.[0]?.message).toMatch(/another secret/);
  });

  it('the server refuses to start with an AUTH_JWT_PREVIOUS_SECRET shorter than 32 bytes', () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: NEW, AUTH_JWT_PREVIOUS_SECRET: 'short' })).toThrow(/AUTH_JWT_PREVIOUS_SECRET must be at least 32 bytes/);
  });
});
