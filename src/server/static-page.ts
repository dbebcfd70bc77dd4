import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { FRAME_ANCESTORS } from './page-security.js';

/** The timeline page, built from web/ by scripts/build-web.mjs (at install). */
const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web', 'dist');

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  // Each view's own library, which app.js loads when the view draws with it (scripts/build-web.mjs).
  '/chart.js': { file: 'chart.js', type: 'text/javascript; charset=utf-8' },
  '/diff.js': { file: 'diff.js', type: 'text/javascript; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
  // Browsers ask for it whatever the page links (GraphiQL's page links none): the same icon, no 404.
  '/favicon.ico': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/**
 * Each file's ETag and gzipped copy, by its path, made again when the file changes (a rebuild): on
 * a phone's slow network the page is a third of its size, and a browser that holds it gets 304.
 */
const encoded = new Map<string, { body: Buffer; etag: string; gzipped: Buffer }>();
function encodedOf(path: string, body: Buffer) {
  let entry = encoded.get(path);
  if (!entry?.body.equals(body)) {
    entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"`, gzipped: gzipSync(body) };
    encoded.set(path, entry);
  }
  return entry;
}

/** Serves the page's files for GET/HEAD on their paths; answers false for any other request. */
export async function servePage(req: IncomingMessage, path: string, res: ServerResponse): Promise<boolean> {
  const { method } = req;
  const entry = FILES[path];
  if (!entry || (method !== 'GET' && method !== 'HEAD')) return false;
  let body: Buffer;
  try {
    body = await readFile(join(DIST, entry.file));
  } catch {
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('The timeline page is not built: run `npm install` (or `node scripts/build-web.mjs`).');
    return true;
  }
  const { etag, gzipped } = encodedOf(path, body);
  const headers = {
    etag,
    'cache-control': 'no-cache',
    vary: 'accept-encoding',
    // The page talks only to this server ('self' covers its WebSocket, CSP Level 3).
    'content-security-policy': `default-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; ${FRAME_ANCESTORS}`,
    'x-content-type-options': 'nosniff',
  };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers).end();
    return true;
  }
  const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
  const sent = gzip ? gzipped : body;
  res.writeHead(200, { ...headers, 'content-type': entry.type, 'content-length': sent.byteLength, ...(gzip && { 'content-encoding': 'gzip' }) });
  res.end(method === 'HEAD' ? undefined : sent);
  return true;
}
