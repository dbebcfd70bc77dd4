import { SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTokenVerifier, mintStreamSession, mintToken } from '../../src/auth/jwt.js';

const SECRET = 'unit-test-secret-unit-test-secret';

afterEach(() => vi.useRealTimers());

describe('token verifier', () => {
  it('keeps answering for a verified token until its exp, then refuses it', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z') });
    const verifier = createTokenVerifier(SECRET);
    const token = await mintToken(SECRET, { sub: 'w-1', role: 'worker' }, '10s');
    // The expiry travels with the principal: subscriptions end when it passes.
    const principal = { sub: 'w-1', role: 'worker', expiresAtMs: Date.parse('2026-11-29T12:00:10Z') };
    expect(await verifier.verify(`Bearer ${token}`)).toEqual(principal);
    expect(await verifier.verify(`Bearer ${token}`)).toEqual(principal);
    vi.setSystemTime(new Date('2026-11-29T12:00:11Z'));
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('never caches a refusal or lets a token signed with another secret in', async () => {
    const verifier = createTokenVerifier(SECRET);
    const forged = await new SignJWT({ role: 'superadmin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('mallory')
      .sign(new TextEncoder().encode('another-secret-another-secret-xx'));
    for (let i = 0; i < 2; i++) await expect(verifier.verify(`Bearer ${forged}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await verifier.verify(undefined)).toBeNull();
  });

  it('reads the token of "Bearer <JWT>" with any spacing, and refuses every other shape by its message, however long the header', async () => {
    const verifier = createTokenVerifier(SECRET);
    const token = await mintToken(SECRET, { sub: 'shape', role: 'worker' });
    for (const header of [`Bearer ${token}`, `bearer ${token}`, `  Bearer \t ${token}  `]) expect((await verifier.verify(header))?.sub, header).toBe('shape');
    const refusals: [string, RegExp][] = [
      [`Bearer Bearer ${token}`, /says "Bearer" twice/],
      [`Basic ${token}`, /must start with "Bearer "/],
      [token, /must start with "Bearer "/],
      ['Bearer', /one token after the prefix/],
      ['Bearer   ', /one token after the prefix/],
      [`Bearer ${token} ${token}`, /one token after the prefix/],
      [`Bearer ${token},`, /./],
      [`Bearer ${token} ${'a '.repeat(8_000)}`, /one token after the prefix/],
    ];
    for (const [header, message] of refusals) {
      await expect(verifier.verify(header), header.slice(0, 60)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(message) });
    }
  });

  it("signs out a stream session after its expiry too, but only a stream session signed with this server's secret", async () => {
    vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z') });
    const verifier = createTokenVerifier(SECRET);
    const principal = { sub: 'ada', role: 'superadmin' as const, expiresAtMs: Date.parse('2026-11-29T12:00:10Z') };
    const session = await mintStreamSession(SECRET, principal);
    const { sessionId } = await verifier.verifyStreamSession(session);
    vi.setSystemTime(new Date('2026-11-30T12:00:00Z'));
    await expect(verifier.verifyStreamSession(session)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await verifier.streamSessionToSignOut(session)).toEqual({ sessionId, expiresAtMs: principal.expiresAtMs });
    const bearer = await mintToken(SECRET, { sub: 'ada', role: 'superadmin' });
    const forged = await mintStreamSession('another-secret-another-secret-xx', principal);
    for (const value of [bearer, forged, 'not a token']) expect(await verifier.streamSessionToSignOut(value)).toBeNull();
  });
});
