import type { IncomingMessage, ServerResponse } from 'node:http';
import { mintStreamSession, type TokenVerifier } from '../auth/jwt.js';
import type { Principal } from '../domain/principal.js';
import { DomainError } from '../domain/errors.js';
import type { Sql } from '../db/sql.js';

/**
 * Browsers' authenticated SSE. An `EventSource` cannot send an `Authorization` header, and a
 * long-lived token in its URL would end up in logs and history. So a page signs in once with its
 * bearer token (POST /graphql/stream-session) and gets an HttpOnly, SameSite=Strict cookie whose
 * path is the stream path: the browser sends it to GET /graphql/stream only, which accepts it
 * for subscriptions only (src/server/yoga.ts). A cookie never authenticates /graphql, so nothing a
 * browser sends by itself can run a query or a mutation (no CSRF).
 */
export const STREAM_PATH = '/graphql/stream';
export const STREAM_SESSION_PATH = '/graphql/stream-session';
const COOKIE = 'audit_stream';

/** Who a stream request authenticates as: the cookie's principal, or why there is none. */
export interface StreamSession {
  principal: Principal | null;
  authFailure?: string;
  /** Aborted when the session signs out on this instance: the stream then ends (SIGNED_OUT). */
  signedOut?: AbortSignal;
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}

const refusal = (code: string, message: string) => ({ errors: [{ message, extensions: { code } }] });

function cookieOf(req: IncomingMessage): string | undefined {
  return new RegExp(`(?:^|;\\s*)${COOKIE}=([^;]*)`).exec(req.headers.cookie ?? '')?.[1];
}

function cookie(req: IncomingMessage, value: string, maxAgeSeconds: number): string {
  // Behind a TLS-terminating proxy the cookie is for HTTPS only.
  const secure = req.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
  return `${COOKIE}=${value}; Path=${STREAM_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

/**
 * How long a signed-out session's row outlives its expiry, by the database's clock. An instance
 * judges the expiry by its own clock, which may run behind the database's: it must still find
 * the row until its clock, too, has passed the expiry. For the same reason a sign-out is stored
 * even once the session has expired by the clock of the instance or the database that sees it.
 */
const REVOCATION_KEPT_PAST_EXPIRY = '1 day';

/**
 * Signed-out sessions are kept in the database, so a sign-out holds on every instance at once;
 * a row goes with the next sign-out once REVOCATION_KEPT_PAST_EXPIRY past its session's expiry.
 */
async function revoke(sql: Sql, sessionId: string, expiresAtMs: number): Promise<void> {
  await sql.query(`DELETE FROM stream_session_revocation WHERE expires_at < now() - interval '${REVOCATION_KEPT_PAST_EXPIRY}'`);
  await sql.query(
    'INSERT INTO stream_session_revocation (session_id, expires_at) VALUES ($1::uuid, $2) ON CONFLICT (session_id) DO NOTHING',
    [sessionId, new Date(expiresAtMs)],
  );
}

const isRevoked = async (sql: Sql, sessionId: string) =>
  (await sql.query('SELECT 1 FROM stream_session_revocation WHERE session_id = $1::uuid', [sessionId])).length > 0;

/** The session a cookie value names, or why it names none. */
async function sessionOfCookie(verifier: TokenVerifier, sql: Sql, value: string): Promise<{ principal: Principal; sessionId: string } | string> {
  try {
    const session = await verifier.verifyStreamSession(value);
    if (await isRevoked(sql, session.sessionId)) return `The stream session was signed out: sign in again with POST ${STREAM_SESSION_PATH}`;
    return session;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return error.message;
  }
}

export function streamSessions(options: { secret: string; verifier: TokenVerifier; corsOrigins: string[]; sql: Sql }) {
  const allowed = new Set(options.corsOrigins);
  /**
   * A browser's Origin header names this server, or an origin on CORS_ORIGINS. This server's host
   * is the request's, or, behind a reverse proxy that rewrites `Host`, the one it forwards as
   * `X-Forwarded-Host`: a page of another site cannot send that header (it is not one a
   * cross-origin request may carry without a preflight, which these paths never grant).
   */
  const isAllowedOrigin = (req: IncomingMessage) => {
    const origin = req.headers.origin;
    if (origin === undefined || allowed.has(origin)) return true;
    const forwardedHost = String(req.headers['x-forwarded-host'] ?? '').split(',')[0]!.trim();
    try {
      const { host } = new URL(origin);
      return host === req.headers.host || host === forwardedHost;
    } catch {
      return false;
    }
  };

  /** The streams open on this instance, by session: a sign-out ends them. */
  const openStreams = new Map<string, Set<AbortController>>();
  const opened = (sessionId: string, res: ServerResponse): AbortSignal => {
    const signOut = new AbortController();
    let streams = openStreams.get(sessionId);
    if (!streams) openStreams.set(sessionId, (streams = new Set()));
    streams.add(signOut);
    res.once('close', () => {
      streams.delete(signOut);
      if (streams.size === 0) openStreams.delete(sessionId);
    });
    return signOut.signal;
  };

  return {
    /** POST signs in with the bearer token (sets the cookie); DELETE signs out (clears it). */
    async signIn(req: IncomingMessage, res: ServerResponse): Promise<void> {
      if (req.method === 'DELETE') {
        // The cookie's session is revoked too: a copy of it (another tab, a leaked value) opens nothing.
        const value = cookieOf(req);
        const session = value ? await options.verifier.streamSessionToSignOut(value) : null;
        if (session) {
          await revoke(options.sql, session.sessionId, session.expiresAtMs);
          for (const stream of openStreams.get(session.sessionId) ?? []) stream.abort();
        }
        return answer(res, 204, undefined, { 'set-cookie': cookie(req, '', 0) });
      }
      if (req.method !== 'POST') return answer(res, 405, refusal('BAD_REQUEST', 'POST (sign in) or DELETE (sign out)'), { allow: 'POST, DELETE' });
      if (!isAllowedOrigin(req)) return answer(res, 403, refusal('FORBIDDEN', 'This origin may not sign in here (CORS_ORIGINS)'));
      let principal: Principal | null;
      try {
        principal = await options.verifier.verify(req.headers.authorization);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return answer(res, 401, refusal(error.code, error.message));
      }
      if (!principal) return answer(res, 401, refusal('UNAUTHENTICATED', 'Sign in with the header "Authorization: Bearer <JWT>"'));
      const expiresAtMs = principal.expiresAtMs!;
      const value = await mintStreamSession(options.secret, principal);
      const maxAge = Math.max(0, Math.floor((expiresAtMs - Date.now()) / 1000));
      answer(res, 200, { expiresAt: new Date(expiresAtMs).toISOString() }, { 'set-cookie': cookie(req, value, maxAge) });
    },

    /**
     * The session of a request on the stream path, or null when it was refused here (a foreign
     * origin: 403, whatever cookie it carries).
     */
    async sessionOf(req: IncomingMessage, res: ServerResponse): Promise<StreamSession | null> {
      if (!isAllowedOrigin(req)) {
        answer(res, 403, refusal('FORBIDDEN', `Origin ${req.headers.origin} may not open this stream (CORS_ORIGINS)`));
        return null;
      }
      const value = cookieOf(req);
      if (!value) return { principal: null, authFailure: `No stream session cookie: sign in first with POST ${STREAM_SESSION_PATH} and "Authorization: Bearer <JWT>"` };
      const session = await sessionOfCookie(options.verifier, options.sql, value);
      if (typeof session === 'string') return { principal: null, authFailure: session };
      return { principal: session.principal, signedOut: opened(session.sessionId, res) };
    },
  };
}
