import { describe, expect, it } from 'vitest';
import { claimsOf } from '../../web/src/api.js';

// The page's header shows the signed-in principal's `sub` from the token: a JWT's payload is
// base64url of UTF-8 JSON, so a sub in any script shows as written, not as mojibake.

const base64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const tokenFor = (claims: object) => `${base64url('{"alg":"HS256"}')}.${base64url(JSON.stringify(claims))}.c2ln`;

describe('claimsOf', () => {
  it('reads a sub in any script, emoji included', () => {
    for (const sub of ['管理者🦊', 'עובד-عامل', 'alice']) {
      expect(claimsOf(tokenFor({ sub, role: 'superadmin' }))).toEqual({ sub, role: 'superadmin' });
    }
  });

  it('is null for a payload that is not the claims', () => {
    expect(claimsOf('a.b.c')).toBeNull();
    expect(claimsOf(tokenFor({ sub: 7, role: 'user' }))).toBeNull();
  });
});
