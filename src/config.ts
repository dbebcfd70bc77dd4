import { hostname } from 'node:os';
import { MIN_SECRET_BYTES } from './auth/jwt.js';
import { exportConfigFromEnv, type ExportConfig } from './export/config.js';
import { maxStoredJsonBytes } from './domain/json.js';
import { isLogLevel, log, LOG_LEVELS } from './log.js';

/** Where the embedded database and its JWT secret live without DATA_DIR (relative to the repository, where npm runs scripts). */
export const DEFAULT_DATA_DIR = '.data';

export interface Config {
  port: number;
  host: string;
  /** Unset: embedded PGlite under `dataDir`; `postgres://…`: that server. */
  databaseUrl?: string;
  /** Where the embedded default keeps its database and generated JWT secret. */
  dataDir: string;
  /** DATA_DIR=:memory: keeps the embedded database in memory (tests, demos). */
  embeddedInMemory: boolean;
  jwtSecret?: string;
  /** Also taken for verifying (never for signing) while tokens signed with it may still be in use: a rotation. */
  jwtPreviousSecret?: string;
  redisUrl?: string;
  /** Prefix of this deployment's Redis channels, so several deployments can share one Redis. */
  redisPrefix: string;
  leaseMinSeconds: number;
  leaseMaxSeconds: number;
  leaseSweepIntervalMs: number;
  maxJsonBytes: number;
  /** The most an operation may cost: the fields its result could hold, lists counted at their bound. */
  maxQueryCost: number;
  /** How long a stop drains from the first signal before every connection is cut. */
  shutdownTimeoutMs: number;
  /** SHUTDOWN_DRAIN_MS: after SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes. */
  shutdownDrainMs: number;
  /** HTTP_KEEP_ALIVE_TIMEOUT_MS: how long an idle HTTP connection stays open for its next request. */
  httpKeepAliveTimeoutMs: number;
  /** DATABASE_POOL_SIZE: PostgreSQL connections per instance (instances x pool must stay under max_connections). */
  databasePoolSize: number;
  /** DATABASE_STATEMENT_TIMEOUT_MS: PostgreSQL's statement_timeout for requests; a statement the server did not answer a little past it is given up. */
  databaseStatementTimeoutMs: number;
  /** CHANGE_POLL_INTERVAL_MS: without Redis on PostgreSQL, how often watched threads' cursors are read for other instances' changes. */
  changePollIntervalMs: number;
  /** Origins other than the server's own that browsers may call it from (CORS_ORIGINS). */
  corsOrigins: string[];
  /** RETENTION_DAYS: threads whose latest change is older are deleted; unset keeps everything. */
  retentionDays?: number;
  /** How often the retention sweeper looks for threads to delete. */
  retentionSweepIntervalMs: number;
  /** graphql-ws caps (src/transports/ws-limits.ts). */
  webSocket: {
    maxSubscriptionsPerConnection: number;
    maxSubscriptionsPerPrincipal: number;
    maxConnectionsPerPrincipal: number;
    /** How long a socket may stay open before its `connection_init`. */
    initTimeoutMs: number;
    /** How long a connection without a valid token stays open. */
    anonymousTimeoutMs: number;
    /** Sockets open at once on this instance without a valid token (before or after their `connection_init`). */
    maxAnonymousConnections: number;
    maxConnectionParamsBytes: number;
  };
  /** OpenTelemetry export (docs/export.md): on when an OTLP endpoint is set. */
  export?: ExportConfig;
  /** Set: GET /metrics wants `Authorization: Bearer <token>`; unset: it answers loopback clients only. */
  metricsToken?: string;
  /** INSTANCE_ID: this instance's name, the same at every start (default hostname:PORT); a start takes back its own earlier export claims. */
  instanceId: string;
  /** MAX_ANSWER_PAYLOAD_BYTES: the most JSON payload bytes one query's answer may carry (src/graphql/answer-payloads.ts). */
  maxAnswerPayloadBytes: number;
  /** MAX_UNSENT_BYTES_PER_PRINCIPAL: what one principal's live streams may hold written but unsent (src/transports/unsent-budget.ts); unset: Infinity, no budget. */
  maxUnsentBytesPerPrincipal: number;
}

/**
 * INSTANCE_ID's default, `hostname:PORT`. With PORT=0 it names the port the system gave (main.ts),
 * so that servers started so on one host each have their own.
 */
export const defaultInstanceId = (port: number) => `${hostname()}:${port}`;

/** An integer variable within [min, max]; unset or empty: `fallback`. */
function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new Error(`${name} must be an integer ${range}, got "${raw}"`);
  }
  return value;
}

/** CORS_ORIGINS: comma-separated origins (scheme://host[:port]), each exactly as a browser sends it. */
function originsFromEnv(raw: string | undefined): string[] {
  const origins = (raw ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (parsed?.origin !== origin) throw new Error(`CORS_ORIGINS must list origins such as https://dashboard.example (no path, no "*"), got "${origin}"`);
  }
  return origins;
}

/** Unset or empty: no retention. Otherwise a positive number of days (fractions allowed). */
function retentionDaysFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.RETENTION_DAYS;
  if (raw === undefined || raw === '') return undefined;
  const days = Number(raw);
  if (!Number.isFinite(days) || days <= 0) throw new Error(`RETENTION_DAYS must be a positive number of days, got "${raw}"`);
  return days;
}

/**
 * The largest MAX_JSON_BYTES whose worst case both backends write (bench/json-ceiling.ts): a
 * request carries up to max(8 MiB, 4 × MAX_JSON_BYTES) of JSON, at most 8 MiB up to this ceiling,
 * as at the default; the worst is arrays of small numbers (`[0,0,…]`, a jsonb element every 2
 * bytes) in all of a model finish's values. At 4 MiB PGlite ran out of memory (SQLSTATE 53200) and
 * PostgreSQL took 28 s of its 30 s statement timeout; at 8 MiB it went past its jsonb limit (54000).
 */
export const MAX_JSON_BYTES_CEILING = 2 * 1024 * 1024;

function maxJsonBytesFromEnv(env: NodeJS.ProcessEnv): number {
  const bytes = intFromEnv(env, 'MAX_JSON_BYTES', 1024 * 1024, { min: 1024 });
  if (bytes > MAX_JSON_BYTES_CEILING) {
    throw new Error(
      `MAX_JSON_BYTES must be at most ${MAX_JSON_BYTES_CEILING}, got ${bytes}: past that, a request's largest values (arrays of small numbers) go past the database's limits (docs/semantics.md, "Sizes of JSON values")`,
    );
  }
  return bytes;
}

/**
 * MAX_ANSWER_PAYLOAD_BYTES: at least one audit's four JSON values (input, output, error, usage) at
 * their stored bound, 6 × MAX_JSON_BYTES. A smaller setting is raised to that, with a warning, not
 * refused: the floor was 4 × MAX_JSON_BYTES, and a server set so must still start.
 */
function answerPayloadBytesFromEnv(env: NodeJS.ProcessEnv, maxJsonBytes: number): number {
  const floor = 4 * maxStoredJsonBytes(maxJsonBytes);
  const bytes = intFromEnv(env, 'MAX_ANSWER_PAYLOAD_BYTES', Math.max(32 * 1024 * 1024, floor));
  if (bytes >= floor) return bytes;
  log.warn(
    { setting: 'MAX_ANSWER_PAYLOAD_BYTES', configured: bytes, used: floor },
    `MAX_ANSWER_PAYLOAD_BYTES ${bytes} is raised to ${floor} (6 × MAX_JSON_BYTES), so that one audit (four JSON values of up to 1.5 × MAX_JSON_BYTES as stored) always fits one answer`,
  );
  return floor;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Error('DATABASE_URL must start with postgres:// or postgresql://');
  }
  // Not echoed: the URL may hold a password.
  if (databaseUrl && !URL.canParse(databaseUrl)) throw new Error('DATABASE_URL is not a valid URL (postgres://user:password@host:port/database)');
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !(URL.canParse(redisUrl) && ['redis:', 'rediss:'].includes(new URL(redisUrl).protocol))) {
    throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got "${redisUrl.replace(/\/\/[^@/]*@/, '//…@')}"`);
  }
  if (env.LOG_LEVEL && !isLogLevel(env.LOG_LEVEL)) throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const port = intFromEnv(env, 'PORT', 4000, { max: 65535 });
  const maxJsonBytes = maxJsonBytesFromEnv(env);
  const config: Config = {
    port,
    host: env.HOST || '127.0.0.1',
    databaseUrl,
    dataDir: env.DATA_DIR || DEFAULT_DATA_DIR,
    embeddedInMemory: env.DATA_DIR === ':memory:',
    jwtSecret: env.AUTH_JWT_SECRET || undefined,
    jwtPreviousSecret: env.AUTH_JWT_PREVIOUS_SECRET || undefined,
    redisUrl,
    redisPrefix: env.REDIS_PREFIX ?? 'audit:',
    leaseMinSeconds: intFromEnv(env, 'LEASE_MIN_SECONDS', 1, { min: 1 }),
    leaseMaxSeconds: intFromEnv(env, 'LEASE_MAX_SECONDS', 3600),
    leaseSweepIntervalMs: intFromEnv(env, 'LEASE_SWEEP_INTERVAL_MS', 1000, { min: 10 }),
    maxJsonBytes,
    maxQueryCost: intFromEnv(env, 'MAX_QUERY_COST', 10_000_000, { min: 1 }),
    shutdownTimeoutMs: intFromEnv(env, 'SHUTDOWN_TIMEOUT_MS', 10_000),
    shutdownDrainMs: intFromEnv(env, 'SHUTDOWN_DRAIN_MS', 5_000),
    httpKeepAliveTimeoutMs: intFromEnv(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, { min: 1 }),
    // A sweep holds one connection (its advisory lock's session) while it queries on another.
    databasePoolSize: intFromEnv(env, 'DATABASE_POOL_SIZE', 10, { min: 2 }),
    databaseStatementTimeoutMs: intFromEnv(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 30_000, { min: 100 }),
    changePollIntervalMs: intFromEnv(env, 'CHANGE_POLL_INTERVAL_MS', 1_000, { min: 100 }),
    corsOrigins: originsFromEnv(env.CORS_ORIGINS),
    retentionDays: retentionDaysFromEnv(env),
    retentionSweepIntervalMs: intFromEnv(env, 'RETENTION_SWEEP_INTERVAL_MS', 3_600_000, { min: 1000 }),
    webSocket: {
      maxSubscriptionsPerConnection: intFromEnv(env, 'WS_MAX_SUBSCRIPTIONS_PER_CONNECTION', 100, { min: 1 }),
      maxSubscriptionsPerPrincipal: intFromEnv(env, 'WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 500, { min: 1 }),
      maxConnectionsPerPrincipal: intFromEnv(env, 'WS_MAX_CONNECTIONS_PER_PRINCIPAL', 50, { min: 1 }),
      initTimeoutMs: intFromEnv(env, 'WS_INIT_TIMEOUT_MS', 3000, { min: 1 }),
      anonymousTimeoutMs: intFromEnv(env, 'WS_ANONYMOUS_TIMEOUT_MS', 10_000, { min: 1 }),
      maxAnonymousConnections: intFromEnv(env, 'WS_MAX_ANONYMOUS_CONNECTIONS', 1000, { min: 1 }),
      maxConnectionParamsBytes: intFromEnv(env, 'WS_MAX_CONNECTION_PARAMS_BYTES', 16 * 1024, { min: 1 }),
    },
    export: exportConfigFromEnv(env),
    metricsToken: env.METRICS_TOKEN || undefined,
    instanceId: env.INSTANCE_ID || defaultInstanceId(port),
    maxAnswerPayloadBytes: answerPayloadBytesFromEnv(env, maxJsonBytes),
    // Unset, no budget: the contract lets each connection hold 16 MiB unsent before it may be
    // closed, and a budget ends streams that hold less. At least those 16 MiB when set.
    maxUnsentBytesPerPrincipal: intFromEnv(env, 'MAX_UNSENT_BYTES_PER_PRINCIPAL', Number.POSITIVE_INFINITY, { min: 16 * 1024 * 1024 }),
  };
  for (const [name, secret] of [['AUTH_JWT_SECRET', config.jwtSecret], ['AUTH_JWT_PREVIOUS_SECRET', config.jwtPreviousSecret]] as const) {
    if (secret !== undefined && Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
      throw new Error(`${name} must be at least ${MIN_SECRET_BYTES} bytes (e.g. \`openssl rand -base64 32\`)`);
    }
  }
  if (config.leaseMinSeconds > config.leaseMaxSeconds) {
    throw new Error('LEASE_MIN_SECONDS must not exceed LEASE_MAX_SECONDS');
  }
  return config;
}
