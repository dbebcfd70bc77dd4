import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/*
 * The operators' metrics (GET /metrics, src/server/metrics.ts). These instruments are counted
 * where things happen, one call each; gauges of one server's state (connections, the database
 * pool, the export backlog) are read when scraped, from a registry of their own per server.
 */
export const registry = new Registry();
// Process metrics, the event-loop delay among them (nodejs_eventloop_lag_*).
collectDefaultMetrics({ register: registry });

/**
 * Gives a counter's series known in advance their 0 from the start. A series that first appears
 * at 1 has no earlier sample to rise from, so rate() and increase() miss its first event: the first
 * outage, bug or lost lease since a restart would never alert.
 */
export function zeroed<T extends string>(counter: Counter<T>, labelSets: Partial<Record<T, string>>[]): Counter<T> {
  for (const labels of labelSets) counter.inc(labels, 0);
  return counter;
}

export const lifecycleWrites = new Counter({
  name: 'agent_audit_mutations_total',
  help: 'GraphQL mutations by root field and outcome (OK, or the error extensions.code)',
  labelNames: ['mutation', 'outcome'] as const,
  registers: [registry],
});

export const lifecycleEvents = new Counter({
  name: 'agent_audit_lifecycle_events_total',
  help: 'Lifecycle events sent in batches (recordEvents), by kind and outcome (OK, or the code its own mutation would have answered)',
  labelNames: ['event', 'outcome'] as const,
  registers: [registry],
});

export const lifecycleWriteSeconds = new Histogram({
  name: 'agent_audit_mutation_duration_seconds',
  help: 'Time to execute a GraphQL mutation operation, by root field',
  labelNames: ['mutation'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

export const dependencyUnavailable = zeroed(
  new Counter({
    name: 'agent_audit_unavailable_total',
    help: 'Requests answered UNAVAILABLE (HTTP 503) because a dependency could not be reached for the moment, by dependency',
    labelNames: ['dependency'] as const,
    registers: [registry],
  }),
  [{ dependency: 'database' }],
);

export const failedOperations = zeroed(
  new Counter({
    name: 'agent_audit_failed_operations_total',
    help: 'GraphQL queries and mutations answered with an error, by operation type and extensions.code',
    labelNames: ['operation', 'code'] as const,
    registers: [registry],
  }),
  // The bug alert's (docs/operations.md "Alerts worth setting").
  [
    { operation: 'query', code: 'INTERNAL_SERVER_ERROR' },
    { operation: 'mutation', code: 'INTERNAL_SERVER_ERROR' },
  ],
);

export const poolWaitSeconds = new Histogram({
  name: 'agent_audit_db_pool_wait_seconds',
  help: 'Time to get a PostgreSQL connection from the pool (a new connection\'s connect included)',
  buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const poolAcquireFailures = new Counter({
  name: 'agent_audit_db_pool_acquire_failures_total',
  help: 'Failures to get a PostgreSQL connection: pool wait timed out (10 s), connection refused or rejected (too many connections)',
  registers: [registry],
});

export const statementsCancelled = new Counter({
  name: 'agent_audit_db_statements_cancelled_total',
  help: "PostgreSQL statements of queries cancelled because their client went (an HTTP request's client gone, a graphql-ws query completed by its client or its connection closed)",
  registers: [registry],
});

export const catchUps = new Counter({
  name: 'agent_audit_subscription_catch_ups_total',
  help: 'Catch-up reads from the database by lagging or resuming subscription streams',
  registers: [registry],
});

export const lookUps = new Counter({
  name: 'agent_audit_subscription_look_ups_total',
  help: 'Reads from the database by live subscription streams for a change whose publish had not arrived (late or lost), taken as committed',
  registers: [registry],
});

export const slowConsumerCloses = zeroed(
  new Counter({
    name: 'agent_audit_slow_consumer_closes_total',
    help: 'Streams ended because their client stopped reading: one connection over its bound of unsent bytes (bound="connection"), or a principal\'s streams together over MAX_UNSENT_BYTES_PER_PRINCIPAL (bound="principal")',
    labelNames: ['transport', 'bound'] as const,
    registers: [registry],
  }),
  // An SSE stream has no bound of its own: its response is pulled only as its socket takes it.
  [
    { transport: 'ws', bound: 'connection' },
    { transport: 'ws', bound: 'principal' },
    { transport: 'sse', bound: 'principal' },
  ],
);

export const backgroundFailures = new Counter({
  name: 'agent_audit_background_failures_total',
  help: "Failed tries of the server's own recurring work by work (lease-sweep, retention-sweep, change-poll, catch-up-read...); each is tried again, its first failure logged",
  labelNames: ['work'] as const,
  registers: [registry],
});

export const leaseSweeps = new Counter({
  name: 'agent_audit_lease_sweeps_total',
  help: 'Lease sweeps completed (a failed one counts in agent_audit_background_failures_total{work="lease-sweep"})',
  registers: [registry],
});

export const leaseSweptRuns = new Counter({
  name: 'agent_audit_lease_swept_runs_total',
  help: 'Runs ended by the lease sweep because their lease expired',
  registers: [registry],
});

export const sweeperDeletedThreads = zeroed(
  new Counter({
    name: 'agent_audit_sweeper_deleted_threads_total',
    help: 'Threads deleted by the server itself: by RETENTION_DAYS (retention) or finishing a deletion a stopped instance left (abandoned-deletion)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  [{ reason: 'retention' }, { reason: 'abandoned-deletion' }],
);

export const exportedSpans = new Counter({
  name: 'agent_audit_export_spans_total',
  help: 'Spans the OTLP receiver accepted',
  registers: [registry],
});

export const exportDroppedSpans = zeroed(
  new Counter({
    name: 'agent_audit_export_dropped_spans_total',
    help: 'Spans the OTLP receiver refused, not sent again, by reason: refused (400, bad data) or too_large (413 for the span alone)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  [{ reason: 'refused' }, { reason: 'too_large' }],
);

export const exportRejectedSpans = new Counter({
  name: 'agent_audit_export_rejected_spans_total',
  help: 'Spans the OTLP receiver took the request of but said it rejected (partial success): not sent again',
  registers: [registry],
});

export const exportFailures = zeroed(
  new Counter({
    name: 'agent_audit_export_failures_total',
    help: 'Export tries that failed, each retried, by reason: throttled (429), unavailable (5xx), refused (another 4xx: credentials, URL), timeout, unreachable, tls, internal (this server, e.g. its database)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  ['throttled', 'unavailable', 'refused', 'timeout', 'unreachable', 'tls', 'internal'].map((reason) => ({ reason })),
);

export const exportHeld = new Gauge({
  name: 'agent_audit_export_held',
  help: '1 while this instance exports nothing because the database was restored (or copied) and the export is held until scripts/release-export.ts releases it, else 0',
  registers: [registry],
});

export const exportLagSeconds = new Histogram({
  name: 'agent_audit_export_lag_seconds',
  help: 'From a change committing to the receiver accepting its span',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60, 300, 900],
  registers: [registry],
});

/** A gauge read when scraped, on one server's own registry. */
export function scrapedGauge(register: Registry, name: string, help: string, labelNames: string[], read: (gauge: Gauge) => Promise<void> | void) {
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [register],
    async collect() {
      await read(this);
    },
  });
}
