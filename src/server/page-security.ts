import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { Plugin } from 'graphql-yoga';

/** Every page this server serves may be framed by no other page (clickjacking). */
export const FRAME_ANCESTORS = "frame-ancestors 'none'";

/**
 * GraphiQL's page, with a Content-Security-Policy that allows its own inline scripts by their
 * hashes (and nothing else inline), its editor's workers from blob: URLs, and connections to this
 * server only. The page is the same on every request, so the policy, its ETag and its gzipped
 * copy are computed once: a browser that has it gets 304, one that accepts gzip gets 2.4 MB instead
 * of 9. GraphiQL is loaded
 * at its first page, not at start: most servers never show it.
 */
export function graphiqlWithPolicy() {
  let page: { policy: string; etag: string; gzipped: Uint8Array<ArrayBuffer> } | undefined;
  const render = async (options: Parameters<typeof renderGraphiQL>[0]) => {
    const { renderGraphiQL: renderPage } = await import('@graphql-yoga/render-graphiql');
    const html = renderPage(options);
    page ??= {
      policy: policyFor(html),
      etag: `"${createHash('sha256').update(html).digest('base64url')}"`,
      gzipped: new Uint8Array(gzipSync(html)) as Uint8Array<ArrayBuffer>,
    };
    return html;
  };
  // yoga answers GET requests accepting HTML on its endpoint with the page (its own plugin, before this one).
  const plugin: Plugin = {
    onResponse({ request, response, fetchAPI, setResponse }) {
      if (!page || request.method !== 'GET' || response.status !== 200 || !response.headers.get('content-type')?.startsWith('text/html')) return;
      const headers = new fetchAPI.Headers(response.headers);
      headers.set('content-security-policy', page.policy);
      headers.set('x-content-type-options', 'nosniff');
      headers.set('etag', page.etag);
      headers.set('cache-control', 'no-cache');
      headers.set('vary', 'accept-encoding');
      if (request.headers.get('if-none-match') === page.etag) {
        headers.delete('content-type');
        headers.delete('content-length');
        return setResponse(new fetchAPI.Response(null, { status: 304, headers }));
      }
      if (!/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) return setResponse(new fetchAPI.Response(response.body, { status: 200, headers }));
      headers.set('content-encoding', 'gzip');
      headers.set('content-length', String(page.gzipped.byteLength));
      setResponse(new fetchAPI.Response(page.gzipped, { status: 200, headers }));
    },
  };
  return { render, plugin };
}

function policyFor(html: string): string {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    ([, body]) => `'sha256-${createHash('sha256').update(body!).digest('base64')}'`,
  );
  return [
    "default-src 'self'",
    `script-src 'self' ${hashes.join(' ')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    'worker-src blob:',
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "object-src 'none'",
    FRAME_ANCESTORS,
  ].join('; ');
}
