import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FRAME_ANCESTORS } from './page-security.js';

/** The timeline page, built from web/ by scripts/build-web.mjs (at install). */
const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web', 'dist');

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
  // Browsers ask for it whatever the page links (GraphiQL's page links none): the same icon, no 404.
  '/favicon.ico': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** Serves the page's files for GET/HEAD on their paths; answers false for any other request. */
export async function servePage(method: string | undefined, path: string, res: ServerResponse): Promise<boolean> {
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
  res.writeHead(200, {
    'content-type': entry.type,
    'content-length': body.byteLength,
    'cache-control': 'no-cache',
    // The page talks only to this server ('self' covers its WebSocket, CSP Level 3).
    'content-security-policy': `default-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; ${FRAME_ANCESTORS}`,
    'x-content-type-options': 'nosniff',
  });
  res.end(method === 'HEAD' ? undefined : body);
  return true;
}
