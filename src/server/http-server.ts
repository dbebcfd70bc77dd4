import { createServer, maxHeaderSize, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { errorFields, log } from '../log.js';
import { corsHeaders } from './cors.js';
import { countUnrun, serveMetrics } from './metrics.js';
import { servePage } from './static-page.js';
import { STREAM_PATH, STREAM_SESSION_PATH, type streamSessions } from './stream-session.js';
import { bodyTooLarge, drainedBodyLimit, requestIdOf, type GraphQLServer } from './yoga.js';

/** Requests larger than this are refused before they are parsed (413); also a WebSocket message's limit. */
export const bodyLimit = (config: Config) => Math.max(8 * 1024 * 1024, config.maxJsonBytes * 4);

/**
 * Runs a route's handler so that nothing it throws escapes: the client gets a 500 with a
 * correlation id (or, when the answer had begun, a cut connection), and the error is logged
 * once with that id. A thrown error never ends the process.
 */
async function guarded(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>, req: IncomingMessage, res: ServerResponse) {
  try {
    await handler(req, res);
  } catch (error) {
    const requestId = requestIdOf(req.headers['x-request-id']);
    log.error({ requestId, method: req.method, path: (req.url ?? '/').split('?')[0], error: errorFields(error) }, 'unexpected error in a route');
    if (res.headersSent) return void res.destroy();
    try {
      // Headers the route set before it failed (content-encoding, content-length) are not this answer's.
      for (const name of res.getHeaderNames()) res.removeHeader(name);
      res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ errors: [{ message: 'Unexpected error.', extensions: { code: 'INTERNAL_SERVER_ERROR', requestId } }] }));
    } catch {
      res.destroy();
    }
  }
}

/**
 * yoga's adapter logs a failure to send its answer and leaves the request hanging: it becomes ours
 * to answer. A client that left before its body was read has nobody to answer (its access line says
 * `aborted`).
 */
async function answeredBy(yogaHandled: Promise<void> | void, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await yogaHandled;
  if (!res.headersSent && !req.socket.destroyed) throw new Error('yoga could not send its answer (logged above)');
}

/**
 * A request Node's parser refuses (a malformed Content-Length, a header too large) gets a JSON
 * error as every other refusal does, instead of Node's bare status line.
 */
function answerUnparsable(error: Error & { code?: string; reason?: string }, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') return void socket.destroy();
  const [status, phrase] = error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
  // Node says only "Header overflow": most often a bearer token grown with an identity service's claims.
  const reason =
    status === 431 ? `its headers are larger than ${Math.round(maxHeaderSize / 1024)} KiB, the most this server reads (a token that large: mint it with fewer claims)` : (error.reason ?? phrase);
  const body = JSON.stringify({ errors: [{ message: `Not a valid HTTP request: ${reason}`, extensions: { code: 'BAD_REQUEST' } }] });
  socket.end(`HTTP/1.1 ${status} ${phrase}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/**
 * How long /readyz waits for the database: well under a load balancer's probe timeout, so an
 * unreachable database is a 503, not a probe timing out (the pool alone waits 10 s to connect).
 */
const READY_WITHIN_MS = 2_000;

async function databaseReady(db: Database): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const tooLate = new Promise<false>((resolve) => (timer = setTimeout(resolve, READY_WITHIN_MS, false)));
  try {
    return await Promise.race([db.driver.query('SELECT 1').then(() => true, () => false), tooLate]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The HTTP server and its routes: health and readiness probes, /metrics, the timeline page, the
 * browser's stream session and stream (SSE through yoga), and GraphQL (yoga) for everything else.
 * graphql-ws is mounted on the same server (graphql-ws.ts).
 */
export function createHttpServer(
  config: Config,
  parts: { yoga: GraphQLServer; db: Database; metrics: Registry; streams: ReturnType<typeof streamSessions>; listening?: Server },
) {
  const { yoga, db, metrics, streams, listening } = parts;
  const limit = bodyLimit(config);
  let draining = false;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // While draining, each kept-alive connection closes after its current answer.
    if (draining) res.setHeader('connection', 'close');
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (path === '/readyz') {
      if (draining) return void res.writeHead(503, { 'content-type': 'text/plain' }).end('draining: this instance is stopping');
      const ok = await databaseReady(db);
      return void res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready' : 'database unavailable');
    }
    if (path === '/metrics') return serveMetrics(req, res, metrics, config.metricsToken);
    if (await servePage(req, path ?? '/', res)) return;
    if (path === STREAM_SESSION_PATH) return streams.signIn(req, res);
    if (path === STREAM_PATH) {
      const streamSession = await streams.sessionOf(req, res);
      if (!streamSession) return;
      req.url = yoga.graphqlEndpoint + (req.url ?? '').slice(STREAM_PATH.length);
      return answeredBy(yoga(req, res, { streamSession }), req, res);
    }
    // Refused before yoga, which counts chunked ones. The body is read first (thrown away; see drainedBodyLimit).
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > limit) {
      if (length <= drainedBodyLimit(limit)) await finished(req.resume()).catch(() => undefined);
      const { status, message, code } = bodyTooLarge(limit);
      countUnrun(undefined, undefined, [{ extensions: { code } }]); // as yoga's refusal of a chunked one is
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...corsHeaders(req.headers.origin, config.corsOrigins) });
      return void res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
    }
    return answeredBy(yoga(req, res), req, res);
  };

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    // The correlation id: the client's when safe, else a new one; yoga reads the same header.
    const id = requestIdOf(req.headers['x-request-id']);
    req.headers['x-request-id'] = id;
    res.setHeader('x-request-id', id);
    const started = process.hrtime.bigint();
    // One access line per request, when its answer is sent or its connection is gone.
    res.once('close', () => {
      const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
      const path = (req.url ?? '/').split('?')[0];
      log.info({ requestId: id, method: req.method, path, status: res.statusCode, durationMs, ...(res.writableFinished ? {} : { aborted: true }) }, 'request');
    });
    void guarded(handle, req, res);
  };
  const server = listening ?? createServer(serve);
  server.on('clientError', answerUnparsable);
  // Longer than a load balancer's idle timeout (60 s on the common ones): the side that closes an
  // idle connection must be the one that sends on it, or a request sent as the server closes it is
  // lost (a 502, a reset). Node's default, 5 s, is shorter than every load balancer's.
  server.keepAliveTimeout = config.httpKeepAliveTimeoutMs;
  server.headersTimeout = Math.max(server.headersTimeout, config.httpKeepAliveTimeoutMs + 1_000);
  return {
    server,
    /** Listens, or takes over the server that listened while the instance started (starting.ts); resolves to the GraphQL endpoint's URL. */
    async listen(port = config.port, host = config.host): Promise<string> {
      if (listening) {
        listening.removeAllListeners('request');
        listening.on('request', serve);
      } else {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, host, () => resolve());
        });
      }
      const address = server.address() as AddressInfo;
      return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/graphql`;
    },
    /** From now on each answer closes its connection (shutdown). */
    drain(): void {
      draining = true;
    },
  };
}
