import { describe, expect, it } from 'vitest';
import { pastedToken } from '../../web/src/api.js';

// What the sign-in form makes of what was pasted into it.

const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ5b3UiLCJyb2xlIjoic3VwZXJhZG1pbiJ9.c2lnbmF0dXJlLV9f';

describe('pastedToken', () => {
  it('takes a token bare or as `npm start` prints it, with Bearer', () => {
    expect(pastedToken(jwt)).toEqual({ token: jwt });
    expect(pastedToken(`  Bearer ${jwt}\n`)).toEqual({ token: jwt });
  });

  it('drops the line breaks and spaces a wrapped terminal puts inside it', () => {
    expect(pastedToken(`Bearer ${jwt.slice(0, 30)}\n  ${jwt.slice(30, 70)}\r\n\t${jwt.slice(70)}`)).toEqual({ token: jwt });
  });

  it('refuses what is still no token, saying so', () => {
    for (const pasted of ['hello world', 'not-a-token', `${jwt}é`, 'a.b']) {
      expect(pastedToken(pasted)).toEqual({ refusal: expect.stringContaining('not a token') });
    }
  });
});
