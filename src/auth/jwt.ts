import { randomBytes, randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, errors as jose, jwtVerify, type JWTPayload, type JWTVerifyOptions } from 'jose';
import { DomainError, unauthenticated } from '../domain/errors.js';
import { boundedText } from '../domain/ids.js';
import { ROLES, isRole, type Principal, type Role } from '../domain/principal.js';

const ALGORITHM = 'HS256';

export interface TokenVerifier {
  verify(authorization: string | undefined | null): Promise<Principal | null>;
  /** A stream session cookie's value (mintStreamSession): its principal and session id, or UNAUTHENTICATED. */
  verifyStreamSession(value: string): Promise<{ principal: Principal; sessionId: string }>;
  /**
   * The session a stream session cookie signed here names, expired or not (a sign-out: an instance
   * whose clock runs behind still takes it as live), or null when it is no such cookie.
   */
  streamSessionToSignOut(value: string): Promise<{ sessionId: string; expiresAtMs: number } | null>;
}

/** The audience of stream session tokens, which authenticate GET /graphql/stream only. */
const STREAM_SESSION_AUDIENCE = 'audit-stream-session';
const STREAM_SESSION_CHECKS = { algorithms: [ALGORITHM], requiredClaims: ['exp', 'jti'], audience: STREAM_SESSION_AUDIENCE } satisfies JWTVerifyOptions;

/**
 * How far ahead of this instance's clock a token's `nbf` may be: identity services set it to the
 * second they mint, so a minter's clock a few ms ahead would have fresh tokens refused. `exp` is
 * exact (checked apart), so a subscription ends when its token expires, here as elsewhere.
 */
const NBF_LEEWAY_SECONDS = 60;

/** Verified tokens kept, so a worker's stream of requests pays for one HMAC check per token. */
const VERIFIED_CACHE_SIZE = 10_000;
/** The latest `exp` taken (the year 5000): later ones are milliseconds sent as seconds. */
export const LATEST_EXP_SECONDS = Date.UTC(5000, 0, 1) / 1000;

/**
 * Reads `Authorization: Bearer <JWT>`. No header: anonymous (null). A header that is not a
 * valid, unexpired HS256 token with a known role: UNAUTHENTICATED, never anonymous.
 */
export function createTokenVerifier(secret: string, previousSecret?: string): TokenVerifier {
  const key = new TextEncoder().encode(secret);
  const previousKey = previousSecret === undefined ? undefined : new TextEncoder().encode(previousSecret);
  /** jwtVerify with the secret, then (a rotation: AUTH_JWT_PREVIOUS_SECRET) with the previous one. */
  async function verifySigned(token: string, options: JWTVerifyOptions) {
    try {
      return await jwtVerify(token, key, options);
    } catch (error) {
      if (!previousKey || !(error instanceof jose.JWSSignatureVerificationFailed)) throw error;
      return jwtVerify(token, previousKey, options);
    }
  }
  // token -> its principal (which says when it expires); insertion order makes it an LRU.
  const verified = new Map<string, Principal>();

  async function verifyToken(token: string): Promise<Principal> {
    const cached = verified.get(token);
    if (cached && Date.now() < (cached.expiresAtMs ?? Infinity)) {
      verified.delete(token);
      verified.set(token, cached);
      return cached;
    }
    verified.delete(token);
    let payload;
    try {
      // Without `exp` a token (and every subscription it starts) would be valid forever.
      ({ payload } = await verifySigned(token, { algorithms: [ALGORITHM], requiredClaims: ['exp'], clockTolerance: NBF_LEEWAY_SECONDS }));
    } catch (error) {
      throw unauthenticated(whyRefused(error));
    }
    if (payload.exp! <= Math.floor(Date.now() / 1000)) throw unauthenticated(expiredMessage(payload.exp));
    // Identity services set `aud` (and `iss`) as they please; only the stream session's is refused here.
    if ([payload.aud].flat().includes(STREAM_SESSION_AUDIENCE)) {
      throw unauthenticated('A stream session token authenticates the SSE stream path only (GET /graphql/stream), never a bearer request');
    }
    const principal = principalOf(payload);
    verified.set(token, principal);
    if (verified.size > VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    return principal;
  }

  return {
    async verify(authorization) {
      if (authorization === undefined || authorization === null || authorization === '') return null;
      return verifyToken(bearerTokenOf(authorization));
    },
    async verifyStreamSession(value) {
      try {
        const { payload } = await verifySigned(value, STREAM_SESSION_CHECKS);
        return { principal: principalOf(payload), sessionId: payload.jti! };
      } catch (error) {
        if (error instanceof DomainError) throw error;
        throw unauthenticated(`The stream session: ${whyRefused(error)} (sign in again: POST /graphql/stream-session)`);
      }
    },
    async streamSessionToSignOut(value) {
      try {
        // Judged in 1970, before any expiry (a stream session has no "nbf").
        const { payload } = await verifySigned(value, { ...STREAM_SESSION_CHECKS, currentDate: new Date(0) });
        return { sessionId: payload.jti!, expiresAtMs: payload.exp! * 1000 };
      } catch (error) {
        if (error instanceof jose.JOSEError) return null;
        throw error;
      }
    },
  };
}

function principalOf(payload: JWTPayload): Principal {
  const roles = ROLES.join(', ');
  if (payload.sub === undefined) throw unauthenticated('The token has no "sub" claim: give it the principal\'s id');
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    throw unauthenticated('The token\'s "sub" claim must be a non-empty string (the principal\'s id)');
  }
  if (payload.role === undefined) throw unauthenticated(`The token has no "role" claim: give it one of ${roles}`);
  if (typeof payload.role !== 'string') throw unauthenticated(`The token's "role" claim must be a string, one of ${roles}`);
  if (!isRole(payload.role)) throw unauthenticated(`The token's "role" claim (${JSON.stringify(payload.role.slice(0, 64))}) is not one of ${roles}`);
  // The sub becomes the owner id of what the principal creates, which others list.
  try {
    boundedText(payload.sub, '"sub"');
  } catch (error) {
    throw unauthenticated(`The token's ${(error as Error).message}`);
  }
  // An exp in milliseconds (a minter's Date.now()) reads as seconds tens of thousands of years ahead:
  // a token that would never expire.
  if (payload.exp! > LATEST_EXP_SECONDS) {
    throw unauthenticated('The token\'s "exp" claim is past the year 5000: exp counts seconds since 1970, not milliseconds');
  }
  return { sub: payload.sub, role: payload.role, expiresAtMs: payload.exp! * 1000 };
}

/**
 * A stream session for a principal whose bearer token was just verified: the same `sub`, role and
 * expiry, but an audience that only the SSE stream path accepts.
 */
export async function mintStreamSession(secret: string, principal: Principal): Promise<string> {
  return new SignJWT({ role: principal.role })
    .setProtectedHeader({ alg: ALGORITHM })
    .setSubject(principal.sub)
    .setAudience(STREAM_SESSION_AUDIENCE)
    .setJti(randomUUID())
    .setIssuedAt()
    .setExpirationTime(Math.floor(principal.expiresAtMs! / 1000))
    .sign(new TextEncoder().encode(secret));
}

/**
 * The JWT of an `Authorization` value, or UNAUTHENTICATED saying what is wrong with its shape. It
 * reads the first two words and whether a third begins, however long the header: splitting a
 * header of 16 KiB into its 8,000 words cost milliseconds before any of it was refused.
 */
function bearerTokenOf(authorization: string): string {
  const [, scheme, token, more] = /^\s*(\S*)\s*(\S*)\s*(\S?)/.exec(authorization)!;
  const isBearer = (word: string | undefined) => word?.toLowerCase() === 'bearer';
  if (isBearer(scheme) && isBearer(token)) {
    throw unauthenticated('The Authorization header says "Bearer" twice: send "Bearer <JWT>", with the prefix once');
  }
  if (!isBearer(scheme)) throw unauthenticated('The Authorization header must start with "Bearer ": send "Bearer <JWT>"');
  if (!token || more) throw unauthenticated('The Authorization header must be "Bearer <JWT>": one token after the prefix');
  return token;
}

const expiredMessage = (exp: unknown) => `The token expired${typeof exp === 'number' ? ` at ${new Date(exp * 1000).toISOString()}` : ''}: get a new one`;

/** What is wrong with a token jose refused, in words that never include the token. */
function whyRefused(error: unknown): string {
  if (error instanceof jose.JWTExpired) return expiredMessage(error.payload.exp);
  if (error instanceof jose.JWTClaimValidationFailed && error.claim === 'exp') {
    return 'The token has no "exp" claim: every token must expire';
  }
  if (error instanceof jose.JWSSignatureVerificationFailed) {
    return "The token's signature does not verify: it was signed with another secret than this server's AUTH_JWT_SECRET";
  }
  if (error instanceof jose.JWTClaimValidationFailed && error.claim === 'nbf' && typeof error.payload.nbf === 'number') {
    return `The token is not valid before ${new Date(error.payload.nbf * 1000).toISOString()}: check the clock of the machine that minted it`;
  }
  if (error instanceof jose.JOSEAlgNotAllowed) return `The token must be signed with ${ALGORITHM}`;
  // jose's message names the extension ("Extension Header Parameter "x" is not recognized").
  if (error instanceof jose.JOSENotSupported) return `The token's header marks as critical ("crit") what this server does not support: ${error.message}`;
  if (error instanceof jose.JWTClaimValidationFailed) return `The token's "${error.claim}" claim is invalid (${error.reason})`;
  return 'The token is not a well-formed JWT (three base64url parts: header.payload.signature)';
}

/** `expiresIn`: a span such as '30d', or the expiry itself in seconds since the epoch. */
export async function mintToken(secret: string, principal: { sub: string; role: Role }, expiresIn: string | number = '30d'): Promise<string> {
  return new SignJWT({ role: principal.role })
    .setProtectedHeader({ alg: ALGORITHM })
    .setSubject(principal.sub)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));
}

/** HS256 needs a key at least as long as its hash (RFC 7518 §3.2). */
export const MIN_SECRET_BYTES = 32;

/**
 * The embedded default's secret: generated once and kept under the data directory, readable by
 * its owner only. It is written to a private temporary file and linked into place, an exclusive
 * and atomic create: of several processes starting together one creates it and the others read
 * that one, never a half-written file. `created` tells the one that created it.
 */
export function loadOrCreateLocalSecret(dataDir: string): { secret: string; created: boolean } {
  const file = join(dataDir, 'jwt-secret');
  mkdirSync(dataDir, { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(temporary, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  let created = true;
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    created = false;
  } finally {
    unlinkSync(temporary);
  }
  return { secret: readLocalSecret(dataDir)!, created };
}

/** The secret kept under the data directory, or undefined when there is none; never creates one. */
export function readLocalSecret(dataDir: string): string | undefined {
  const file = join(dataDir, 'jwt-secret');
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (mode & 0o077) {
    throw new Error(`${file} is readable by others (mode ${mode.toString(8)}): run \`chmod 600 ${file}\`, or delete it to generate a new secret`);
  }
  const secret = readFileSync(file, 'utf8').trim();
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) throw new Error(`${file} must hold at least ${MIN_SECRET_BYTES} bytes`);
  return secret;
}
