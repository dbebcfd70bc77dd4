import type { Server } from 'node:http';
import { createTokenVerifier } from '../auth/jwt.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { DomainDeps } from '../domain/command.js';
import type { Clock } from '../realtime/activity-feeds.js';
import { liveUpdatesMode } from '../realtime/pubsub.js';
import { unsentBudget } from '../transports/unsent-budget.js';
import { webSocketLimits } from '../transports/ws-limits.js';
import { startBackgroundJobs, type BackgroundJobs } from './background-jobs.js';
import { serveGraphQLOverWebSocket } from './graphql-ws.js';
import { bodyLimit, createHttpServer } from './http-server.js';
import { mutationMetrics, serverMetrics } from './metrics.js';
import { gracefulStop } from './shutdown.js';
import { signingSecretOf } from './signing-secret.js';
import { openStorage } from './storage.js';
import { streamSessions } from './stream-session.js';
import { createGraphQLServer } from './yoga.js';

export type App = Awaited<ReturnType<typeof buildApp>>;

/**
 * The server, composed: the database and its change feeds, the domain's handles, GraphQL (yoga)
 * over HTTP, SSE and graphql-ws, /metrics, and the background jobs. `start` listens; `stop`
 * drains and closes everything (shutdown.ts).
 */
export async function buildApp(
  config: Config,
  /** `listening`: the server that answered while the instance started (starting.ts); the app serves on it. */
  options: { database?: Database; maxPendingEvents?: number; activityClock?: Clock; maxUnsentSignals?: number; listening?: Server } = {},
) {
  const { secret, generated } = signingSecretOf(config);
  const { db, feeds, databaseId, exportHeldSince } = await openStorage(config, options);
  /** Set once they started; a deletion by the first retention sweep is that sweep's own to vacuum after. */
  let jobs: BackgroundJobs | undefined = undefined;
  const deps: DomainDeps = {
    db: db.sql,
    databaseId,
    publish: feeds.publishEvents,
    threadDeleted: (threadId, ownerId) => {
      feeds.threadDeleted(threadId, ownerId);
      jobs?.retention.noteDeletion();
    },
    limits: { leaseMinSeconds: config.leaseMinSeconds, leaseMaxSeconds: config.leaseMaxSeconds, maxJsonBytes: config.maxJsonBytes },
    // Half the pool: the other half stays for reads, batches and the owners' commands.
    writeCalls: db.kind === 'postgres' ? Math.ceil(config.databasePoolSize / 2) : 1,
  };
  const verifier = createTokenVerifier(secret, config.jwtPreviousSecret);
  const limits = webSocketLimits(config, verifier);
  const budget = unsentBudget(config.maxUnsentBytesPerPrincipal);
  const yoga = createGraphQLServer({
    deps,
    prisma: db.prisma,
    pubsub: feeds.pubsub,
    verifier,
    maxQueryCost: config.maxQueryCost,
    maxAnswerPayloadBytes: config.maxAnswerPayloadBytes,
    maxBodyBytes: bodyLimit(config),
    corsOrigins: config.corsOrigins,
    unsentBudget: budget,
    plugins: [limits.sse(), mutationMetrics()],
  });
  const metrics = serverMetrics({
    db,
    exporting: config.export !== undefined,
    redisHealthy: feeds.redisHealthy,
    redisUnsent: feeds.redisUnsent,
    unsent: () => budget.usage(),
    open: () => {
      const subscriptions = limits.openSubscriptions();
      return [
        { transport: 'ws', connections: webSocket.wsServer.clients.size, subscriptions: subscriptions.ws },
        { transport: 'sse', connections: subscriptions.sse, subscriptions: subscriptions.sse },
      ];
    },
  });
  const streams = streamSessions({ secret, verifier, corsOrigins: config.corsOrigins, sql: db.sql });
  const http = createHttpServer(config, { yoga, db, metrics, streams, listening: options.listening });
  const webSocket = serveGraphQLOverWebSocket(http.server, yoga, config, limits, budget);
  jobs = await startBackgroundJobs(config, db, deps);

  return {
    config,
    db,
    deps,
    yoga,
    /** Live subscriptions per thread topic, for readiness probes. */
    pubsub: feeds.pubsub,
    server: http.server,
    jwtSecret: secret,
    jwtSecretGenerated: generated,
    sweeper: jobs.sweeper,
    exporter: jobs.exporter,
    retention: jobs.retention,
    start: http.listen,
    /** What the start banner says this instance runs with. */
    mode: {
      liveUpdates: liveUpdatesMode(config),
      // Configured yet held after a restore: 'on' would tell the operator spans go out.
      export: !config.export ? 'off' : exportHeldSince ? `held since ${exportHeldSince.toISOString()} (a restored database: release with scripts/release-export.ts)` : 'on',
      retention: config.retentionDays === undefined ? 'off' : `${config.retentionDays} days`,
      redis: config.redisUrl ? 'on' : 'off',
    },
    /** Stops accepting, lets in-flight requests finish, then closes sockets and the database. */
    stop: gracefulStop(config.shutdownTimeoutMs, { http, webSocket, jobs, feeds, db }),
  };
}
