import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportRejectedSpans } from '../../src/metrics.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/*
 * A receiver may take a request yet reject some of its spans (OTLP partial success: 200 with
 * `rejected_spans` and an error message). Those spans are lost and must not be sent again, but
 * the operator must see it: they were neither logged nor counted, and counted as exported.
 */
describe.each(['http/protobuf', 'http/json'])(`OTLP partial success over %s (${backendName})`, (protocol) => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, EXPORT_POLL_MS: '50' });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('counts the spans the receiver says it rejected', async () => {
    const rejected = async () => (await exportRejectedSpans.get()).values.reduce((sum, value) => sum + value.value, 0);
    const before = await rejected();
    receiver.partialSuccess = { rejectedSpans: 2, errorMessage: 'attribute value too long' };
    const { runId, session } = await runningRun(t);
    must(await session.finish('COMPLETED'));
    await receiver.waitFor((spans) => spans.some((span) => span.attributes['agent_audit.run.id'] === runId));
    await expect.poll(rejected).toBeGreaterThanOrEqual(before + 2);
  }, 60_000);

  // An answer is read up to 4 MiB, as the official transport does. The 200 says the spans were
  // taken: they were sent again and again, the answer over the cap counted as a refusal.
  it('takes a 200 whose answer is over 4 MiB as taken, reading no further', async () => {
    receiver.partialSuccess = null;
    receiver.answer = Buffer.alloc(5 * 1024 * 1024, 'x');
    const first = await runningRun(t);
    must(await first.session.finish('COMPLETED'));
    const copies = (runId: string) => receiver.spans.filter((span) => span.attributes['agent_audit.run.id'] === runId).length;
    await receiver.waitFor(() => copies(first.runId) > 0);
    receiver.answer = null;
    // A later run's span arriving: the exporter has gone past the first one's request.
    const second = await runningRun(t);
    must(await second.session.finish('COMPLETED'));
    await receiver.waitFor(() => copies(second.runId) > 0);
    expect(copies(first.runId)).toBe(1);
  }, 60_000);
});
