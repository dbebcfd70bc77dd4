import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { finished } from 'node:stream/promises';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { createTokenVerifier, loadOrCreateLocalSecret } from '../auth/jwt.js';
import type { Config } from '../config.js';
import { openDatabase, type Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { maskError } from '../graphql/errors.js';
import type { DomainDeps } from '../domain/command.js';
import { changesAfter, threadCursors } from '../domain/change-cursors.js';
import { createPubSubFor } from '../realtime/pubsub.js';
import { isSharedStream, sharedSubscriptions } from '../transports/shared-subscriptions.js';
import { boundedWebSocket, maxUnsentBytes, writtenBySubscription } from '../transports/websocket.js';
import { startLeaseSweeper } from './lease-sweeper.js';
import { startRetentionSweeper } from './retention-sweeper.js';
import { servePage } from './static-page.js';
import { keepConnectionsAlive } from './keep-alive.js';
import { STREAM_PATH, STREAM_SESSION_PATH, streamSessions } from './stream-session.js';
import { webSocketLimits } from './ws-limits.js';
import { startExporter } from '../export/exporter.js';
import { mutationMetrics, serveMetrics, serverMetrics } from './metrics.js';
import { bodyTooLarge, createGraphQLServer, drainedBodyLimit } from './yoga.js';

export type App = Awaited<ReturnType<typeof buildApp>>;

/** Requests larger than this are refused before they are parsed (413). */
const bodyLimit = (config: Config) => Math.max(8 * 1024 * 1024, config.maxJsonBytes * 4);

/** `generated`: the secret was created by this start (the first start on a data directory). */
function jwtSecretOf(config: Config): { secret: string; generated: boolean } {
  if (config.jwtSecret) return { secret: config.jwtSecret, generated: false };
  if (config.databaseUrl) throw new Error('AUTH_JWT_SECRET must be set when DATABASE_URL points at a server');
  if (config.embeddedInMemory) return { secret: randomBytes(32).toString('base64url'), generated: true };
  const { secret, created } = loadOrCreateLocalSecret(config.dataDir);
  return { secret, generated: created };
}

/**
 * Wires the server: database (migrated), pub/sub, GraphQL over HTTP, SSE and graphql-ws, health
 * probes and the lease sweeper. `start` listens; `stop` drains and closes everything.
 */
export async function buildApp(config: Config, options: { database?: Database; maxPendingEvents?: number } = {}) {
  const { secret, generated } = jwtSecretOf(config);
  const db =
    options.database ??
    (await openDatabase({ url: config.databaseUrl, dataDir: config.embeddedInMemory ? undefined : config.dataDir }));
  let pubsub: Awaited<ReturnType<typeof createPubSubFor>>;
  try {
    await migrate(db.driver);
    pubsub = await createPubSubFor(config, {
      changesAfter: (threadId, after, limit) => changesAfter(db.driver, threadId, after, limit),
      threadCursors: (threadIds) => threadCursors(db.sql, threadIds),
    }, { maxPendingEvents: options.maxPendingEvents });
  } catch (error) {
    // A server that cannot start must not leave the database open behind it.
    if (!options.database) await db.close();
    throw error;
  }
  const deps: DomainDeps = {
    db: db.sql,
    publish: pubsub.publishEvents,
    threadDeleted: (threadId) => {
      pubsub.threadDeleted(threadId);
      retention.noteDeletion();
    },
    limits: {
      leaseMinSeconds: config.leaseMinSeconds,
      leaseMaxSeconds: config.leaseMaxSeconds,
      maxJsonBytes: config.maxJsonBytes,
    },
  };
  const verifier = createTokenVerifier(secret);
  const wsLimits = webSocketLimits(config, verifier);
  const yoga = createGraphQLServer({
    deps,
    prisma: db.prisma,
    pubsub: pubsub.pubsub,
    verifier,
    maxQueryCost: config.maxQueryCost,
    maxBodyBytes: bodyLimit(config),
    corsOrigins: config.corsOrigins,
    plugins: [wsLimits.sse(), mutationMetrics()],
  });

  const ready = async () => {
    try {
      await db.driver.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  };

  const streams = streamSessions({ secret, verifier, corsOrigins: config.corsOrigins });
  const limit = bodyLimit(config);
  let draining = false;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // While draining, each kept-alive connection closes after its current answer.
    if (draining) res.setHeader('connection', 'close');
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (path === '/readyz') {
      const ok = await ready();
      return void res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready' : 'database unavailable');
    }
    if (path === '/metrics') return serveMetrics(req, res, metrics, config.metricsToken);
    if (await servePage(req.method, path ?? '/', res)) return;
    if (path === STREAM_SESSION_PATH) return streams.signIn(req, res);
    if (path === STREAM_PATH) {
      const streamSession = await streams.sessionOf(req, res);
      if (!streamSession) return;
      req.url = yoga.graphqlEndpoint + (req.url ?? '').slice(STREAM_PATH.length);
      return yoga(req, res, { streamSession });
    }
    // Refused before yoga, which counts chunked ones. The body is read first (thrown away; see drainedBodyLimit).
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > limit) {
      if (length <= drainedBodyLimit(limit)) await finished(req.resume()).catch(() => undefined);
      const { status, message, code } = bodyTooLarge(limit);
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
      return void res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
    }
    return yoga(req, res);
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  const wsServer = new WebSocketServer({
    server,
    path: yoga.graphqlEndpoint,
    maxPayload: limit,
    WebSocket: boundedWebSocket(maxUnsentBytes(config)),
  });
  // graphql-ws goes through yoga's envelop (context, parsing, validation and its limits), so auth
  // and limits apply to it too. Subscriptions execute each event once per group of identical
  // subscriptions (src/transports/shared-subscriptions.ts), masked as yoga masks its results, and
  // write their frames themselves (src/transports/websocket.ts); graphql-ws starts and completes them.
  const shared = sharedSubscriptions((error, context) => maskError(error, () => context.requestId) as GraphQLError);
  /** Each operation's executor from yoga's envelop (its plugins: masking, graphql-jit), by the args graphql-ws passes back. */
  const executors = new WeakMap<ExecutionArgs, ReturnType<typeof yoga.getEnveloped>['execute']>();
  const wsDisposable = useServer(
    {
      connectionInitWaitTimeout: config.webSocket.initTimeoutMs,
      onConnect: (ctx) => wsLimits.onConnect(ctx),
      onClose: (ctx) => wsLimits.onClose(ctx),
      execute: (args) => executors.get(args)!(args),
      subscribe: (args) => shared.start(args),
      // The subscription's socket comes from graphql-ws's context: it writes its own frames.
      onOperation: (ctx, id, _payload, _args, result) =>
        isSharedStream(result) ? writtenBySubscription(result, ctx.extra.socket, id) : undefined,
      onSubscribe: async (ctx, id, params) => {
        const refused = wsLimits.refusal(ctx);
        if (refused) return [refused];
        const { schema, execute, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          connectionParams: ctx.connectionParams,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
        });
        let document;
        try {
          document = parse(params.query);
        } catch (error) {
          // A syntax error answers this subscription alone (graphql-ws would close the socket).
          if (error instanceof GraphQLError) return [maskError(error, () => undefined) as GraphQLError];
          throw error;
        }
        const args: ExecutionArgs = {
          schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue: await contextFactory(),
        };
        const errors = validate(args.schema, args.document);
        // The `http` extension is yoga's, for HTTP status codes: not part of a graphql-ws frame.
        if (errors.length) return errors.map(({ message, nodes, extensions: { http: _http, ...extensions } }: GraphQLError) => new GraphQLError(message, { nodes, extensions }));
        executors.set(args, execute);
        return args;
      },
    },
    wsServer,
    // Pings are sent by keepConnectionsAlive instead, spread over the period.
    0,
  );
  keepConnectionsAlive(wsServer);
  const metrics = serverMetrics({
    db,
    exporting: config.export !== undefined,
    open: () => {
      const subscriptions = wsLimits.openSubscriptions();
      return [
        { transport: 'ws', connections: wsServer.clients.size, subscriptions: subscriptions.ws },
        { transport: 'sse', connections: subscriptions.sse, subscriptions: subscriptions.sse },
      ];
    },
  });

  const sweeper = startLeaseSweeper(deps, config.leaseSweepIntervalMs);
  // A crash-restarted server first closes what it left open.
  await sweeper.sweep();
  // OpenTelemetry export (docs/export.md), when an OTLP endpoint is configured.
  const exporter = config.export ? startExporter(db, config.export) : undefined;
  const retention = startRetentionSweeper(deps, db.driver, {
    retentionDays: config.retentionDays,
    intervalMs: config.retentionSweepIntervalMs,
    vacuumAfterDeletions: db.kind === 'pglite',
  });
  void retention.sweep();

  let stopping: Promise<void> | null = null;
  return {
    config,
    db,
    deps,
    yoga,
    /** Live subscriptions per thread topic, for readiness probes. */
    pubsub: pubsub.pubsub,
    server,
    jwtSecret: secret,
    jwtSecretGenerated: generated,
    sweeper,
    exporter,
    retention,
    async start(port = config.port, host = config.host): Promise<string> {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve());
      });
      const address = server.address() as AddressInfo;
      return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/graphql`;
    },
    /** Stops accepting, lets in-flight requests finish, then closes sockets and the database. */
    stop(): Promise<void> {
      stopping ??= (async () => {
        draining = true;
        // One deadline for the whole drain, armed before anything may wait: a WebSocket client
        // that never answers the close handshake would otherwise hold it for 30 s per socket.
        const cutAll = () => {
          server.closeAllConnections();
          for (const socket of wsServer.clients) socket.terminate();
        };
        const deadline = setTimeout(cutAll, config.shutdownTimeoutMs);
        deadline.unref();
        await sweeper.stop();
        await exporter?.stop();
        await retention.stop();
        const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
        server.closeIdleConnections();
        await wsDisposable.dispose();
        wsServer.close();
        // An SSE subscription is a response that never ends by itself: end it, telling the client.
        pubsub.interruptSubscriptions();
        // Connections whose last response just ended (SSE streams, keep-alive) close as soon as idle.
        const idleCloser = setInterval(() => server.closeIdleConnections(), 50);
        await closed;
        clearInterval(idleCloser);
        clearTimeout(deadline);
        await pubsub.close();
        await db.close();
      })();
      return stopping;
    },
  };
}
