import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  getNamedType,
  isInputObjectType,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import { backlog } from '../export/queue.js';
import { log, outsideErrorFields } from '../log.js';
import { failedOperations, lifecycleEvents, lifecycleWriteSeconds, lifecycleWrites, registry, scrapedGauge, zeroed } from '../metrics.js';

/** What one server reports when scraped, besides the process-wide instruments of src/metrics.ts. */
export interface ServerState {
  db: Database;
  /** Open connections and subscriptions of each transport on this instance. */
  open(): { transport: 'ws' | 'sse'; connections: number; subscriptions: number }[];
  exporting: boolean;
  /** With REDIS_URL: whether both Redis connections are up now. */
  redisHealthy?: () => boolean;
  /** With REDIS_URL: the signals held until Redis takes them, by kind. */
  redisUnsent?: () => Record<string, number>;
  /** Bytes written to live streams and not yet taken by their sockets: in all, and of the principal holding the most. */
  unsent?: () => { total: number; largestPrincipal: number };
}

/** This server's scraped gauges; `/metrics` serves them with the process-wide instruments. */
export function serverMetrics(state: ServerState) {
  const own = new Registry();
  scrapedGauge(own, 'agent_audit_open_connections', 'Open client connections by transport', ['transport'], (gauge) => {
    gauge.reset();
    for (const { transport, connections } of state.open()) gauge.set({ transport }, connections);
  });
  scrapedGauge(own, 'agent_audit_open_subscriptions', 'Open subscriptions by transport', ['transport'], (gauge) => {
    gauge.reset();
    for (const { transport, subscriptions } of state.open()) gauge.set({ transport }, subscriptions);
  });
  const unsent = state.unsent;
  if (unsent) {
    scrapedGauge(own, 'agent_audit_unsent_bytes', 'Bytes written to live SSE streams and graphql-ws connections that their sockets have not taken yet', [], (gauge) => {
      gauge.set(unsent().total);
    });
    scrapedGauge(
      own,
      'agent_audit_unsent_bytes_largest_principal',
      'The most bytes one principal\'s live streams hold unsent (bounded by MAX_UNSENT_BYTES_PER_PRINCIPAL)',
      [],
      (gauge) => {
        gauge.set(unsent().largestPrincipal);
      },
    );
  }
  const pool = state.db.poolStats;
  if (pool) {
    scrapedGauge(own, 'agent_audit_db_pool_connections', 'PostgreSQL pool connections by state (idle, busy, waiting requests)', ['state'], (gauge) => {
      const { total, idle, waiting } = pool();
      gauge.set({ state: 'idle' }, idle);
      gauge.set({ state: 'busy' }, total - idle);
      gauge.set({ state: 'waiting' }, waiting);
    });
    scrapedGauge(own, 'agent_audit_db_pool_max_connections', 'The most connections the PostgreSQL pool opens (DATABASE_POOL_SIZE): busy at this many, requests wait', [], (gauge) => {
      gauge.set(pool().max);
    });
  }
  const redis = state.redisHealthy;
  if (redis) {
    scrapedGauge(own, 'agent_audit_redis_up', 'Whether Redis (REDIS_URL) delivers wake-ups and signals now: 1 when the connections are up and the thread, deletion and tool-activity channels subscribed on them, else 0 (changes then reach other instances by the database poll)', [], (gauge) => {
      gauge.set(redis() ? 1 : 0);
    });
  }
  const redisUnsent = state.redisUnsent;
  if (redisUnsent) {
    scrapedGauge(
      own,
      'agent_audit_redis_unsent_signals',
      'Signals this instance holds until Redis takes them (away, or refusing PUBLISH), by kind: threads (wake-up, deletion) or owners (tool-activity); past a bound, one "everything changed", counted 1',
      ['signal'],
      (gauge) => {
        for (const [signal, count] of Object.entries(redisUnsent())) gauge.set({ signal }, count);
      },
    );
  }
  if (state.exporting) {
    const read = backlogReader(state.db);
    const backlogGauge = (name: string, help: string, value: (now: Backlog) => number) =>
      scrapedGauge(own, name, help, [], async (gauge) => {
        const now = await read();
        if (now) gauge.set(value(now));
        else gauge.remove({}); // no sample: neither a zero (an "export stuck" alert would resolve) nor a stale value
      });
    backlogGauge('agent_audit_export_backlog_threads', 'Threads with changes not yet exported', (now) => now.threads);
    backlogGauge('agent_audit_export_backlog_changes', 'Changes (cursors) not yet exported, over all threads', (now) => now.changes);
    backlogGauge('agent_audit_export_backlog_seconds', 'How long the oldest change not yet exported has waited', (now) => now.oldestSeconds);
  }
  return own;
}

type Backlog = Awaited<ReturnType<typeof backlog>>;

/** How long a scrape waits for the export backlog: well inside Prometheus's scrape timeout (10 s by default). */
export const BACKLOG_READ_MS = 2_000;

/**
 * The export backlog for a scrape, or undefined when the database did not give it within
 * BACKLOG_READ_MS (down, or the read held up): the scrape goes on without it, so that the rest of
 * /metrics (agent_audit_unavailable_total among them) is served exactly when the database is in
 * trouble. One read per scrape, shared by the three gauges; one read of the database at a time, so
 * that scrapes during a stall do not pile reads (and pool connections) up behind it.
 */
function backlogReader(db: Database): () => Promise<Backlog | undefined> {
  let inFlight: Promise<Backlog> | null = null;
  let scrape: Promise<Backlog | undefined> | null = null;
  const readNow = async () => {
    inFlight ??= backlog(db.sql).finally(() => (inFlight = null));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, BACKLOG_READ_MS, undefined)));
    try {
      return await Promise.race([inFlight, late]);
    } catch (error) {
      log.warn({ component: 'metrics', error: outsideErrorFields(error) }, 'export backlog not read for /metrics');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  return () => (scrape ??= readNow().finally(() => setImmediate(() => (scrape = null))));
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/**
 * Headers a reverse proxy adds to what it forwards. A proxy on the same host connects from
 * loopback, so a request carrying one is an outside client's, not a local scrape's.
 */
const FORWARDED = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

const forwardedByProxy = (headers: IncomingHttpHeaders) => FORWARDED.some((name) => headers[name] !== undefined);

/**
 * Who may read /metrics: with a token, whoever presents it as a bearer token; without one,
 * loopback clients whose request no proxy forwarded.
 */
export function metricsAllowed(remoteAddress: string | undefined, authorization: string | undefined, token: string | undefined, forwarded = false): boolean {
  if (token === undefined) return !forwarded && LOOPBACK.test(remoteAddress ?? '');
  const presented = Buffer.from(/^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '');
  const expected = Buffer.from(token);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** GET /metrics: Prometheus text, for loopback clients only, or with METRICS_TOKEN for whoever presents it. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, own: Registry, token: string | undefined): Promise<void> {
  const forwarded = forwardedByProxy(req.headers);
  if (!metricsAllowed(req.socket.remoteAddress, req.headers.authorization, token, forwarded)) {
    res.writeHead(token === undefined ? 403 : 401, { 'content-type': 'text/plain', ...(token ? { 'www-authenticate': 'Bearer' } : {}) });
    const refusal = forwarded
      ? 'metrics are not served to requests forwarded by a proxy: set METRICS_TOKEN to scrape through it\n'
      : 'metrics are served to loopback clients only (or set METRICS_TOKEN)\n';
    return void res.end(token === undefined ? refusal : 'unauthorized\n');
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
  const merged = Registry.merge([registry, own]);
  const body = await merged.metrics();
  res.writeHead(200, { 'content-type': merged.contentType });
  res.end(req.method === 'HEAD' ? undefined : body);
}

const codeOf = (error: { extensions?: Record<string, unknown> }) => String(error.extensions?.code ?? 'INTERNAL_SERVER_ERROR');

/** A query answered with errors, counted once by its first error's code. */
const failureCount = (operation: 'query') => ({
  onExecuteDone({ result }: { result: ExecutionResult | AsyncIterable<unknown> }) {
    if (Symbol.asyncIterator in result || !result.errors?.length) return;
    failedOperations.inc({ operation, code: codeOf(result.errors[0]!) });
  },
});

const operationOf = (document: DocumentNode, operationName: string | null | undefined) =>
  document.definitions.find(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION && (!operationName || definition.name?.value === operationName),
  );

/**
 * A document answered without running (over HTTP or graphql-ws): counted by its operation type
 * ("unknown" when it did not parse, or names no operation of it) and its first error's code.
 */
export function countUnrun(document: DocumentNode | undefined, operationName: string | null | undefined, errors: readonly { extensions?: Record<string, unknown> }[]) {
  const operation = (document && operationOf(document, operationName)?.operation) ?? 'unknown';
  failedOperations.inc({ operation, code: codeOf(errors[0]!) });
}

/** A lease-fenced write's input: the lease itself, or an input object that carries one. */
const carriesLease = (type: GraphQLInputType): boolean => {
  const named = getNamedType(type);
  return named.name === 'LeaseInput' || (isInputObjectType(named) && Object.values(named.getFields()).some((field) => getNamedType(field.type).name === 'LeaseInput'));
};

/** What a lease-fenced write answers when its worker lost its lease, let it expire, or replayed differently (the README's alerts). */
const FENCED_OUTCOMES = ['LEASE_LOST', 'LEASE_EXPIRED', 'CONFLICT'];

/** The fenced writes' refusals at 0 from the start, one by one (mutations) and in batches (events): see `zeroed`. */
function zeroFencedOutcomes(schema: GraphQLSchema): void {
  const fenced = (fields: Record<string, { type: GraphQLInputType }>) =>
    Object.entries(fields)
      .filter(([, field]) => carriesLease(field.type))
      .map(([name]) => name);
  const mutations = Object.values(schema.getMutationType()?.getFields() ?? {})
    .filter((field) => field.args.some((arg) => carriesLease(arg.type)))
    .map((field) => field.name);
  const batched = schema.getType('LifecycleEventInput');
  const events = isInputObjectType(batched) ? fenced(batched.getFields()) : [];
  zeroed(lifecycleWrites, mutations.flatMap((mutation) => FENCED_OUTCOMES.map((outcome) => ({ mutation, outcome }))));
  zeroed(lifecycleEvents, events.flatMap((event) => FENCED_OUTCOMES.map((outcome) => ({ event, outcome }))));
}

/**
 * Counts each mutation by root field and outcome, times it, and counts failed queries and
 * mutations (a yoga plugin). Those that never ran are counted as their answer goes out (its codes
 * final): a document that does not validate (a newer client's field an older server lacks) by its
 * operation type, one that does not parse as "unknown".
 */
export function mutationMetrics(): Plugin {
  const documents = new WeakMap<Request, { document: DocumentNode; operationName: string | undefined }>();
  const ran = new WeakSet<Request>();
  const requestOf = (context: unknown) => (context as { request?: Request }).request; // none over graphql-ws
  return {
    onSchemaChange({ schema }) {
      zeroFencedOutcomes(schema);
      // Each mutation's latency from 0 too: a series born at its first observations hides them from rate().
      for (const mutation of Object.keys(schema.getMutationType()?.getFields() ?? {})) lifecycleWriteSeconds.zero({ mutation });
    },
    onValidate({ context, params: { documentAST } }) {
      const request = requestOf(context);
      const operationName = (context as { params?: { operationName?: string } }).params?.operationName;
      if (request) documents.set(request, { document: documentAST, operationName });
    },
    onSubscribe({ args }) {
      const request = requestOf(args.contextValue);
      if (request) ran.add(request);
    },
    onResultProcess({ request, result }) {
      if (ran.has(request) || Array.isArray(result) || Symbol.asyncIterator in result || !result.errors?.length) return;
      const validated = documents.get(request);
      countUnrun(validated?.document, validated?.operationName, result.errors);
    },
    onExecute({ args }) {
      const request = requestOf(args.contextValue);
      if (request) ran.add(request);
      const operation = operationOf(args.document as DocumentNode, args.operationName);
      if (operation?.operation === 'query') return failureCount('query');
      if (operation?.operation !== 'mutation') return;
      // Response key (alias or name) -> field name: errors name the response key in their path.
      const fields = new Map<string, string>();
      for (const selection of operation.selectionSet.selections) {
        if (selection.kind === Kind.FIELD) fields.set(selection.alias?.value ?? selection.name.value, selection.name.value);
      }
      const started = process.hrtime.bigint();
      return {
        onExecuteDone({ result }) {
          if (Symbol.asyncIterator in result) return;
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          for (const [key, mutation] of fields) {
            const error = result.errors?.find((e) => e.path?.[0] === key) ?? (result.errors?.length && !result.data ? result.errors[0] : undefined);
            lifecycleWrites.inc({ mutation, outcome: error ? codeOf(error) : 'OK' });
            if (error) failedOperations.inc({ operation: 'mutation', code: codeOf(error) });
            lifecycleWriteSeconds.observe({ mutation }, seconds);
          }
        },
      };
    },
  };
}
