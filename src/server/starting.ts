import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { RETRY_AFTER_SECONDS } from '../graphql/errors.js';
import { corsHeaders } from './cors.js';

/**
 * What the port answers while the instance starts (its migrations, or another instance's it waits
 * for, may take minutes): `/healthz` 200, since the process lives and a liveness probe must not
 * kill it mid-migration; `/readyz` 503, so no load balancer sends it traffic yet; anything else
 * 503 `UNAVAILABLE` with `Retry-After`, which clients retry. The app takes this server over when
 * it is built (createHttpServer), so the port never stops answering between the two.
 */
export function answerWhileStarting(req: IncomingMessage, res: ServerResponse, corsOrigins: readonly string[] = []): void {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  if (path === '/readyz') return void res.writeHead(503, { 'content-type': 'text/plain' }).end('starting: migrating the database');
  res.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'retry-after': String(RETRY_AFTER_SECONDS),
    'cache-control': 'no-store',
    ...corsHeaders(req.headers.origin, corsOrigins),
  });
  res.end(JSON.stringify({ errors: [{ message: 'The server is starting; retry shortly.', extensions: { code: 'UNAVAILABLE' } }] }));
}

/** Listens at once with `answerWhileStarting`; hand the server to `buildApp`. */
export async function listenWhileStarting(port: number, host: string, corsOrigins: readonly string[] = []): Promise<Server> {
  const server = createServer((req, res) => answerWhileStarting(req, res, corsOrigins));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
