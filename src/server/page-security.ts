import { createHash } from 'node:crypto';
import type { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { Plugin } from 'graphql-yoga';

/** Every page this server serves may be framed by no other page (clickjacking). */
export const FRAME_ANCESTORS = "frame-ancestors 'none'";

/**
 * GraphiQL's page, with a Content-Security-Policy that allows its own inline scripts by their
 * hashes (and nothing else inline), its editor's workers from blob: URLs, and connections to this
 * server only. The page is the same on every request, so the policy is computed once. GraphiQL
 * (a 9 MB script) is loaded at its first page, not at start: most servers never show it.
 */
export function graphiqlWithPolicy() {
  let policy: string | undefined;
  const render = async (options: Parameters<typeof renderGraphiQL>[0]) => {
    const { renderGraphiQL: renderPage } = await import('@graphql-yoga/render-graphiql');
    const html = renderPage(options);
    policy ??= policyFor(html);
    return html;
  };
  const plugin: Plugin = {
    onResponse({ response }) {
      if (policy && response.headers.get('content-type')?.startsWith('text/html')) {
        response.headers.set('content-security-policy', policy);
        response.headers.set('x-content-type-options', 'nosniff');
      }
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
