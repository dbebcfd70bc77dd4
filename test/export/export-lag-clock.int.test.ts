import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { postgresSuiteRuns } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { waitFor } from '../support/streams.js';

// agent_audit_export_lag_seconds is from a change committing (the database's clock) to the
// receiver accepting its span: an instance whose own clock is off by minutes measures the same lag.
// Only on PostgreSQL: the embedded PGlite's clock is its process's, so the two cannot differ.

const CLOCK_AHEAD_MS = 10 * 60_000;

describe.runIf(postgresSuiteRuns('the export lag with clocks apart'))("the export lag on an instance whose clock is ahead of the database's (PostgreSQL)", () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' });
    url = await t.app.start(0, '127.0.0.1');
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await t?.close();
    await receiver?.close();
  });

  it('is seconds, not the clocks\' difference', { timeout: 60_000 }, async () => {
    const { threadId, session } = await runningRun(t);
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + CLOCK_AHEAD_MS);
    must(await session.finish('COMPLETED'));
    await waitFor(() => receiver.spans.some((span) => span.attributes['gen_ai.conversation.id'] === threadId), 'the run to be exported', 30_000);

    const metrics = parsePrometheusText(await (await fetch(url.replace('/graphql', '/metrics'))).text());
    const count = metrics.samples.get('agent_audit_export_lag_seconds_count') ?? 0;
    const sum = metrics.samples.get('agent_audit_export_lag_seconds_sum') ?? 0;
    expect(count).toBeGreaterThan(0);
    expect(sum / count).toBeGreaterThanOrEqual(0);
    expect(sum / count).toBeLessThan(30);
  });
});
