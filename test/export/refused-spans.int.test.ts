import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportDroppedSpans } from '../../src/metrics.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

/*
 * A receiver that refuses a request's content (400 Bad Request: the OpenTelemetry Collector's
 * answer to data it cannot take) answers the same to every copy of it. The spans it refuses are
 * dropped (logged and counted); the rest of the request, its thread's and every other thread's
 * spans still arrive. Sent again whole, the request held the queue behind it for ever.
 */
describe(`OTLP export when the receiver refuses a span (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TIMEOUT: '2000', EXPORT_POLL_MS: '50' });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('drops only the refused span and sends everything else', async () => {
    const dropped = async () => (await exportDroppedSpans.get()).values.reduce((sum, value) => sum + value.value, 0);
    const before = await dropped();
    receiver.refuse = (span) => span.attributes['gen_ai.tool.name'] === 'poison';
    await receiver.down();
    const poisoned = await runningRun(t);
    must(await poisoned.session.modelStarted('m1', { model: 'gpt-test', input: { messages: [] } }));
    must(await poisoned.session.modelFinished('m1', [{ id: 'call-1', name: 'poison', args: {} }], { output: { content: 'calling' } }));
    must(await poisoned.session.toolStarted('call-1', 'poison', { effectiveInput: {} }));
    must(await poisoned.session.toolFinished('call-1', { content: 'ok', status: 'success' }));
    must(await poisoned.session.finish('COMPLETED'));
    const beside = await runningRun(t);
    must(await beside.session.finish('COMPLETED'));
    await receiver.up();

    const runIdOf = (span: ReceivedSpan) => span.attributes['agent_audit.run.id'];
    await receiver.waitFor((spans) => spans.some((span) => runIdOf(span) === beside.runId), 30_000);
    await receiver.waitFor((spans) => spans.filter((span) => runIdOf(span) === poisoned.runId).length === 2, 30_000);
    expect(receiver.spans.filter((span) => runIdOf(span) === poisoned.runId).map((span) => span.name).sort()).toEqual(['chat gpt-test', 'invoke_agent']);
    expect(await dropped()).toBe(before + 1);

    // The queue moves on: a later run arrives.
    const later = await runningRun(t);
    must(await later.session.finish('COMPLETED'));
    await receiver.waitFor((spans) => spans.some((span) => runIdOf(span) === later.runId), 30_000);
  }, 120_000);
});
