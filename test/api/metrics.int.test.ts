import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsAllowed } from '../../src/server/metrics.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres, requirePostgresUrl } from '../support/database.js';
import { expireLeases, must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { startReverseProxy } from '../support/reverse-proxy.js';
import { eventually, subscribeOn, subscribeWs, waitFor, wsClient } from '../support/streams.js';

/* GET /metrics (README "Metrics"): Prometheus text whose counters move with the writes a test makes. */

const THREAD_CHANGES = `subscription($threadId: ID!, $after: String) { threadChanges(threadId: $threadId, after: $after) { cursor } }`;

describe(`GET /metrics (${backendName})`, () => {
  let t: TestApp;
  let url: string;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    await receiver.down(); // the export fails until the receiver is back: its lag and failures show
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TIMEOUT: '500', EXPORT_POLL_MS: '50' });
    url = await t.app.start(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const scrape = async () => {
    const response = await fetch(url.replace('/graphql', '/metrics'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(await response.text());
  };
  const value = (text: { samples: Map<string, number> }, series: string) => text.samples.get(series) ?? 0;

  it('shows every series an alert is written on from the first scrape (at 0 before its first event), so that rate() sees the first one', async () => {
    // A series that first appears at 1 has no earlier sample to rise from: rate() and increase()
    // miss that first event (the first lost lease, the first bug, the first outage since a restart).
    const text = await scrape();
    const expected = [
      'agent_audit_unavailable_total{dependency="database"}',
      'agent_audit_failed_operations_total{operation="query",code="INTERNAL_SERVER_ERROR"}',
      'agent_audit_failed_operations_total{operation="mutation",code="INTERNAL_SERVER_ERROR"}',
      'agent_audit_slow_consumer_closes_total{transport="ws",bound="connection"}',
      'agent_audit_slow_consumer_closes_total{transport="ws",bound="principal"}',
      'agent_audit_slow_consumer_closes_total{transport="sse",bound="principal"}',
      'agent_audit_sweeper_deleted_threads_total{reason="retention"}',
      'agent_audit_sweeper_deleted_threads_total{reason="abandoned-deletion"}',
      'agent_audit_background_failures_total{work="lease-sweep"}',
      'agent_audit_background_failures_total{work="retention-sweep"}',
    ];
    // The lease-fenced writes, one by one and in batches: the README's LEASE_LOST, LEASE_EXPIRED and CONFLICT alerts.
    for (const outcome of ['LEASE_LOST', 'LEASE_EXPIRED', 'CONFLICT']) {
      for (const mutation of ['renewLease', 'recordToolStarted', 'recordToolFinished', 'recordToolError', 'recordModelStarted', 'recordModelFinished', 'finishRun']) {
        expected.push(`agent_audit_mutations_total{mutation="${mutation}",outcome="${outcome}"}`);
      }
      for (const event of ['renewLease', 'toolStarted', 'toolFinished', 'toolError', 'modelStarted', 'modelFinished', 'finishRun']) {
        expected.push(`agent_audit_lifecycle_events_total{event="${event}",outcome="${outcome}"}`);
      }
    }
    // Each mutation's latency too: a histogram series born at its first observations hides them from rate() (the slow-mutations alert).
    for (const mutation of Object.keys(buildSchema(readFileSync(join(import.meta.dirname, '../../schema.graphql'), 'utf8')).getMutationType()!.getFields())) {
      expected.push(`agent_audit_mutation_duration_seconds_count{mutation="${mutation}"}`, `agent_audit_mutation_duration_seconds_bucket{le="+Inf",mutation="${mutation}"}`);
    }
    expect(expected.filter((series) => !text.samples.has(series))).toEqual([]);
    // Nothing more: writes that hold no lease are not given series they cannot have.
    expect(text.samples.has('agent_audit_mutations_total{mutation="createThread",outcome="LEASE_LOST"}')).toBe(false);
    expect(text.samples.has('agent_audit_lifecycle_events_total{event="claimRun",outcome="LEASE_LOST"}')).toBe(false);
  });

  it('counts each mutation by outcome and times it', async () => {
    const before = await scrape();
    const { session } = await runningRun(t);
    must(await session.modelStarted('m1', { model: 'gpt-test' }));
    must(await session.modelFinished('m1'));
    const refused = await session.toolFinished('never-started', { content: 'x' });
    const code = errorCode(refused)!;
    expect(code).toBeTruthy();
    const after = await scrape();

    expect(after.types.get('agent_audit_mutations_total')).toBe('counter');
    expect(after.types.get('agent_audit_mutation_duration_seconds')).toBe('histogram');
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta('agent_audit_mutations_total{mutation="recordModelStarted",outcome="OK"}')).toBe(1);
    expect(delta('agent_audit_mutations_total{mutation="recordModelFinished",outcome="OK"}')).toBe(1);
    expect(delta('agent_audit_mutations_total{mutation="claimRun",outcome="OK"}')).toBe(1);
    expect(delta(`agent_audit_mutations_total{mutation="recordToolFinished",outcome="${code}"}`)).toBe(1);
    expect(delta('agent_audit_mutation_duration_seconds_count{mutation="recordModelStarted"}')).toBe(1);
    expect(delta('agent_audit_mutation_duration_seconds_bucket{le="+Inf",mutation="recordModelStarted"}')).toBe(1);
    // A mutation may wait for the pool, then run up to the statement timeout (30 s by default): a p99
    // that long is read from a finite bucket, not reported as the largest one.
    const bounds = [...after.samples.keys()].flatMap((series) => /^agent_audit_mutation_duration_seconds_bucket\{le="([\d.]+)",mutation="recordModelStarted"\}$/.exec(series)?.[1] ?? []).map(Number);
    expect(Math.max(...bounds)).toBeGreaterThanOrEqual(30);
  });

  it('counts each event of a batch by kind and outcome, as its own mutation would be counted', async () => {
    const before = await scrape();
    const { runId, session } = await runningRun(t);
    const lease = { runId, epoch: session.lease.epoch };
    const observedAt = new Date().toISOString();
    const batch = await t.gql(
      `mutation($events: [LifecycleEventInput!]!) { recordEvents(events: $events) { index error { code } } }`,
      {
        events: [
          { modelStarted: { lease, operationId: 'm1', sequence: '1', observedAt } },
          { toolFinished: { lease, toolCallId: 'never-started', sequence: '2', observedAt, output: { content: 'x' } } },
          { renewLease: { lease: { runId, epoch: lease.epoch + 1 } } },
        ],
      },
      session.token,
    );
    expect(batch.errors).toBeUndefined();
    const codes = (batch.data.recordEvents as { error: { code: string } | null }[]).map((result) => result.error?.code ?? 'OK');
    expect(codes[0]).toBe('OK');
    expect(codes[1]).not.toBe('OK');
    expect(codes[2]).not.toBe('OK');
    const after = await scrape();
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(after.types.get('agent_audit_lifecycle_events_total')).toBe('counter');
    expect(delta('agent_audit_lifecycle_events_total{event="modelStarted",outcome="OK"}')).toBe(1);
    expect(delta(`agent_audit_lifecycle_events_total{event="toolFinished",outcome="${codes[1]}"}`)).toBe(1);
    expect(delta(`agent_audit_lifecycle_events_total{event="renewLease",outcome="${codes[2]}"}`)).toBe(1);
    expect(delta('agent_audit_mutations_total{mutation="recordEvents",outcome="OK"}')).toBe(1);
  });

  it('counts failed queries and mutations by code; on PostgreSQL times the pool wait and counts its failures; with REDIS_URL says whether Redis is up', async () => {
    const before = await scrape();
    const { session, owner } = await runningRun(t);
    const missing = await t.gql(`query($id: ID!) { threadAudits(threadId: $id) { cursor } }`, { id: '00000000-0000-4000-8000-000000000000' }, owner);
    const code = errorCode(missing)!;
    expect(code).toBeTruthy();
    const refused = await session.toolFinished('never-started', { content: 'x' });
    const after = await scrape();
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(after.types.get('agent_audit_failed_operations_total')).toBe('counter');
    expect(delta(`agent_audit_failed_operations_total{operation="query",code="${code}"}`)).toBe(1);
    expect(delta(`agent_audit_failed_operations_total{operation="mutation",code="${errorCode(refused)}"}`)).toBe(1);
    expect(after.types.get('agent_audit_unavailable_total')).toBe('counter');
    if (onPostgres) {
      expect(after.types.get('agent_audit_db_pool_wait_seconds')).toBe('histogram');
      expect(delta('agent_audit_db_pool_wait_seconds_count')).toBeGreaterThan(0);
      expect(after.types.get('agent_audit_db_pool_acquire_failures_total')).toBe('counter');
    }
    // Documents that never run count too: a newer client's field an older server lacks shows here.
    const beforeDocuments = await scrape();
    const unknownField = await t.gql('mutation { noSuchMutation }', {}, owner);
    expect(errorCode(unknownField)).toBe('GRAPHQL_VALIDATION_FAILED');
    const unparsable = await t.gql('{ __typename ', {}, owner);
    expect(errorCode(unparsable)).toBe('GRAPHQL_PARSE_FAILED');
    const afterDocuments = await scrape();
    const documentDelta = (series: string) => value(afterDocuments, series) - value(beforeDocuments, series);
    expect(documentDelta('agent_audit_failed_operations_total{operation="mutation",code="GRAPHQL_VALIDATION_FAILED"}')).toBe(1);
    expect(documentDelta('agent_audit_failed_operations_total{operation="unknown",code="GRAPHQL_PARSE_FAILED"}')).toBe(1);
    // No REDIS_URL here: no Redis gauge to mislead (test/subscriptions/redis.e2e.test.ts has one).
    expect(after.types.has('agent_audit_redis_up')).toBe(false);
    expect(after.types.has('agent_audit_redis_unsent_signals')).toBe(false);
  });

  it('shows a worker that lost its lease: the sweep that ended its run, and its next write refused', async () => {
    const before = await scrape();
    const { runId, session } = await runningRun(t);
    await expireLeases(t.app.db.driver, [runId]);
    await expect.poll(async () => value(await scrape(), 'agent_audit_lease_swept_runs_total') - value(before, 'agent_audit_lease_swept_runs_total')).toBeGreaterThanOrEqual(1);
    const refused = await session.modelStarted('m1', { model: 'gpt-test' });
    expect(errorCode(refused)).toBe('LEASE_LOST');
    const after = await scrape();
    expect(value(after, 'agent_audit_mutations_total{mutation="recordModelStarted",outcome="LEASE_LOST"}') - value(before, 'agent_audit_mutations_total{mutation="recordModelStarted",outcome="LEASE_LOST"}')).toBe(1);
  });

  it.runIf(onPostgres)('shows the pool\'s size beside its busy connections, so that "the pool is saturated" (busy / max) can be alerted on (PostgreSQL)', async () => {
    const text = await scrape();
    expect(text.types.get('agent_audit_db_pool_max_connections')).toBe('gauge');
    expect(value(text, 'agent_audit_db_pool_max_connections')).toBe(t.config.databasePoolSize);
    expect(value(text, 'agent_audit_db_pool_connections{state="busy"}')).toBeLessThanOrEqual(t.config.databasePoolSize);
  });

  it('counts a body over the limit as a failed operation "unknown", with or without a Content-Length', async () => {
    const body = JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(9 * 1024 * 1024) } });
    const before = await scrape();
    const declared = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(declared.status).toBe(413);
    const chunked = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([body]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    const after = await scrape();
    expect(value(after, 'agent_audit_failed_operations_total{operation="unknown",code="BAD_USER_INPUT"}') - value(before, 'agent_audit_failed_operations_total{operation="unknown",code="BAD_USER_INPUT"}')).toBe(2);
  });

  it('counts documents that never ran over graphql-ws as over HTTP: by operation type and code', async () => {
    // A newer client's subscription (a field this server lacks) is as visible on graphql-ws as on SSE.
    const { owner, threadId } = await runningRun(t);
    const before = await scrape();
    const client = wsClient(url, owner);
    try {
      for (const query of [
        'subscription($threadId: ID!) { threadChanges(threadId: $threadId) { noSuchField } }',
        'query { noSuchQuery }',
        'subscription { threadChanges(',
      ]) {
        const stream = subscribeOn(client, query, { threadId });
        expect((await stream.ended()).kind).toBe('error');
      }
    } finally {
      await client.dispose();
    }
    const after = await scrape();
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta('agent_audit_failed_operations_total{operation="subscription",code="GRAPHQL_VALIDATION_FAILED"}')).toBe(1);
    expect(delta('agent_audit_failed_operations_total{operation="query",code="GRAPHQL_VALIDATION_FAILED"}')).toBe(1);
    expect(delta('agent_audit_failed_operations_total{operation="unknown",code="GRAPHQL_PARSE_FAILED"}')).toBe(1);
  });

  it('shows open subscriptions and connections, lease sweeps, the event loop and the export lag and failures', { timeout: 90_000 }, async () => {
    const { threadId, owner, session } = await runningRun(t);
    must(await session.finish('COMPLETED'));
    const catchUpsBefore = value(await scrape(), 'agent_audit_subscription_catch_ups_total');
    const start = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, owner);
    // Resuming after the thread's first change: the stream first catches up from the database.
    const after = Buffer.from(`${threadId}:1`).toString('base64url');
    expect(start.data.thread.changeCursor).not.toBe(after);
    const stream = subscribeWs(url, THREAD_CHANGES, { threadId, after }, owner);
    try {
      await stream.take(1);
      await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to be live');
      const first = await scrape();
      expect(value(first, 'agent_audit_subscription_catch_ups_total')).toBeGreaterThan(catchUpsBefore);
      expect(value(first, 'agent_audit_open_connections{transport="ws"}')).toBe(1);
      expect(value(first, 'agent_audit_open_subscriptions{transport="ws"}')).toBe(1);
      expect(first.samples.has('nodejs_eventloop_lag_p99_seconds')).toBe(true);
      expect(first.samples.has('agent_audit_db_pool_connections{state="idle"}')).toBe(onPostgres);
      // The receiver is down: the run waits in the backlog and each attempt counts as a failure.
      // A sweep every 200 ms, an attempt every 50 ms, and a scrape shows the backlog when it is read
      // within 2 s (BACKLOG_READ_MS): a loaded machine may take longer for each, so this reads again
      // until they all show, rather than once after a fixed wait.
      await eventually(scrape, (now) =>
        value(now, 'agent_audit_export_backlog_threads') >= 1 &&
        // Every waiting thread has a change not exported, this one two (the stream caught up with its second).
        value(now, 'agent_audit_export_backlog_changes') >= value(now, 'agent_audit_export_backlog_threads') + 1 &&
        value(now, 'agent_audit_export_backlog_seconds') > 0.5 &&
        value(now, 'agent_audit_export_failures_total{reason="unreachable"}') > 0 &&
        value(now, 'agent_audit_lease_sweeps_total') > value(first, 'agent_audit_lease_sweeps_total'),
      { what: 'the backlog, older than 0.5 s, an export failure and another lease sweep', timeoutMs: 30_000 });
    } finally {
      await stream.close();
    }
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 0, 'the subscription to end');

    await receiver.up();
    await waitFor(() => receiver.spans.some((span) => span.attributes['gen_ai.conversation.id'] === threadId), 'the export to catch up', 30_000);
    const caughtUp = await scrape();
    expect(value(caughtUp, 'agent_audit_export_spans_total')).toBeGreaterThan(0);
    expect(value(caughtUp, 'agent_audit_export_lag_seconds_count')).toBeGreaterThan(0);
    expect(value(caughtUp, 'agent_audit_open_subscriptions{transport="ws"}')).toBe(0);
  });
});

describe(`GET /metrics with METRICS_TOKEN (${backendName})`, () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await startTestApp({ METRICS_TOKEN: 'scrape-me-0123456789' });
    url = (await t.app.start(0, '127.0.0.1')).replace('/graphql', '/metrics');
  });
  afterAll(async () => t?.close());

  it('wants the token as a bearer token, even from loopback', async () => {
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const response = await fetch(url, { headers: { authorization: 'Bearer scrape-me-0123456789' } });
    expect(response.status).toBe(200);
    expect(parsePrometheusText(await response.text()).samples.size).toBeGreaterThan(0);
  });
});

describe('who may read /metrics without a token', () => {
  it('loopback clients only', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(metricsAllowed(address, undefined, undefined)).toBe(true);
    for (const address of ['10.0.0.1', '192.168.1.5', '::ffff:10.0.0.1', 'fe80::1', undefined]) {
      expect(metricsAllowed(address, 'Bearer anything', undefined)).toBe(false);
    }
  });
});

/*
 * A reverse proxy on the same host reaches the server from loopback: without METRICS_TOKEN, what
 * it forwards from the internet must not pass for a local Prometheus (README "Metrics").
 */
describe(`GET /metrics through a reverse proxy on the same host (${backendName})`, () => {
  it('refuses a request the proxy forwarded (Forwarded, X-Forwarded-For, X-Real-IP), and still serves a local scrape', async () => {
    const t = await startTestApp();
    const url = await t.app.start(0, '127.0.0.1');
    const proxy = await startReverseProxy(url);
    const own = url.replace('/graphql', '/metrics');
    try {
      const through = await fetch(`${proxy.origin}/metrics`);
      expect([through.status, await through.text()]).toEqual([403, expect.stringMatching(/forwarded by a proxy/)]);
      for (const header of ['forwarded', 'x-forwarded-for', 'x-real-ip']) {
        expect((await fetch(own, { headers: { [header]: header === 'forwarded' ? 'for=203.0.113.7' : '203.0.113.7' } })).status).toBe(403);
      }
      expect((await fetch(own)).status).toBe(200);
    } finally {
      await proxy.close();
      await t.close();
    }
  });
});

/*
 * The scrape an SRE alerts from while the database is down or stuck: the export backlog is read
 * from the database, and a scrape that failed (500) or outlasted Prometheus's scrape timeout with
 * it would hide every other metric (agent_audit_unavailable_total among them) exactly then.
 */
describe(`GET /metrics while the database cannot answer (${backendName})`, () => {
  const scrapeOf = async (url: string) => {
    const response = await fetch(url);
    expect(response.status).toBe(200);
    return parsePrometheusText(await response.text());
  };

  it('still answers, without the export backlog it could not read, when the database is gone', { timeout: 90_000 }, async () => {
    const t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', EXPORT_POLL_MS: '50' });
    try {
      const url = (await t.app.start(0, '127.0.0.1')).replace('/graphql', '/metrics');
      // Read within BACKLOG_READ_MS, which a loaded machine may miss on one scrape.
      await expect.poll(async () => (await scrapeOf(url)).samples.has('agent_audit_export_backlog_seconds'), { timeout: 30_000 }).toBe(true);
      await t.loseDatabase();
      const down = await scrapeOf(url);
      expect(down.types.get('agent_audit_unavailable_total')).toBe('counter');
      expect(down.samples.has('agent_audit_open_connections{transport="ws"}')).toBe(true);
      // Not a zero (an "export stuck" alert would resolve) nor a stale value: no sample.
      for (const name of ['agent_audit_export_backlog_threads', 'agent_audit_export_backlog_changes', 'agent_audit_export_backlog_seconds']) {
        expect(down.samples.has(name)).toBe(false);
      }
    } finally {
      await t.close().catch(() => undefined);
    }
  });

  it('counts each failed lease and retention sweep, its series there from the first scrape: no request fails when only a sweep does', async () => {
    const t = await startTestApp({ RETENTION_DAYS: '30', LEASE_SWEEP_INTERVAL_MS: '3600000' });
    try {
      const url = (await t.app.start(0, '127.0.0.1')).replace('/graphql', '/metrics');
      const sweeps = ['agent_audit_background_failures_total{work="lease-sweep"}', 'agent_audit_background_failures_total{work="retention-sweep"}'];
      await t.app.retention.sweep(); // the start's, done
      const first = await scrapeOf(url);
      expect(first.types.get('agent_audit_background_failures_total')).toBe('counter');
      expect(sweeps.filter((series) => !first.samples.has(series))).toEqual([]);
      await t.loseDatabase();
      await t.app.sweeper.sweep();
      expect(await t.app.retention.sweep()).toBe(null);
      const failed = await scrapeOf(url);
      expect(sweeps.map((series) => failed.samples.get(series)! - first.samples.get(series)!)).toEqual([1, 1]);
    } finally {
      await t.close().catch(() => undefined);
    }
  });

  it.runIf(onPostgres)('counts each request answered UNAVAILABLE once, however many of its fields failed (PostgreSQL)', async () => {
    const t = await startTestApp();
    const admin = new pg.Client({ connectionString: requirePostgresUrl() });
    const database = decodeURIComponent(new URL(t.config.databaseUrl!).pathname.slice(1));
    try {
      await admin.connect();
      const url = (await t.app.start(0, '127.0.0.1')).replace('/graphql', '/metrics');
      const owner = await t.token('unavailable-owner', 'user');
      const threeReads = async () => {
        const response = await fetch(url.replace('/metrics', '/graphql'), {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
          body: JSON.stringify({ query: '{ a: threads(first: 1) { edges { cursor } } b: threads(first: 2) { edges { cursor } } c: threads(first: 3) { edges { cursor } } }' }),
        });
        const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
        return `${response.status} ${body.errors?.[0]?.extensions?.code}`;
      };
      // Refused at connect (as the outage tests do, test/api/database-refusing-connections.int.test.ts).
      await admin.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
      await expect.poll(threeReads).toBe('503 UNAVAILABLE');
      const before = await scrapeOf(url);
      expect(await threeReads()).toBe('503 UNAVAILABLE');
      const after = await scrapeOf(url);
      const series = 'agent_audit_unavailable_total{dependency="database"}';
      expect((after.samples.get(series) ?? 0) - (before.samples.get(series) ?? 0)).toBe(1);
    } finally {
      await admin.query(`ALTER DATABASE "${database}" WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
      await admin.end().catch(() => undefined);
      await t.close().catch(() => undefined);
    }
  });

  it.runIf(onPostgres)('answers without waiting for a backlog read that the database holds up (PostgreSQL)', async () => {
    const t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', EXPORT_POLL_MS: '50' });
    const blocker = new pg.Client({ connectionString: t.config.databaseUrl });
    try {
      const url = (await t.app.start(0, '127.0.0.1')).replace('/graphql', '/metrics');
      await blocker.connect();
      // The backlog read waits for this lock as long as the test holds it (past the test's timeout).
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE export_pending IN ACCESS EXCLUSIVE MODE');
      const held = await scrapeOf(url);
      expect(held.samples.has('agent_audit_export_backlog_seconds')).toBe(false);
      expect(held.samples.has('agent_audit_open_connections{transport="ws"}')).toBe(true);
      await blocker.query('ROLLBACK');
      await expect.poll(async () => (await scrapeOf(url)).samples.has('agent_audit_export_backlog_seconds')).toBe(true);
    } finally {
      await blocker.end().catch(() => undefined);
      await t.close();
    }
  });
});
