/**
 * Cross-origin access is an allow-list: a browser may read an answer to a page of another origin
 * only when that origin is listed (CORS_ORIGINS), and never with credentials (a bearer header needs
 * none; the stream cookie is SameSite=Strict). yoga answers GraphQL requests by this rule; the
 * answers given before yoga (a body over the limit, an instance still starting) follow it too.
 */
export const isAllowedOrigin = (origin: string | null | undefined, corsOrigins: readonly string[]): origin is string =>
  typeof origin === 'string' && corsOrigins.includes(origin);

/** What a page's script may read of an answer besides the safelisted headers: how long to wait after a 503. */
export const EXPOSED_HEADERS = ['Retry-After'];

/** The CORS headers of an answer given outside yoga to a request from `origin`. */
export function corsHeaders(origin: string | null | undefined, corsOrigins: readonly string[]): Record<string, string> {
  if (!isAllowedOrigin(origin, corsOrigins)) return { vary: 'Origin' };
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS.join(', '), vary: 'Origin' };
}
