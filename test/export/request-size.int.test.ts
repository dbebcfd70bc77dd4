import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportDroppedSpans } from '../../src/metrics.js';
import { onLogLine } from '../../src/log.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/*
 * A receiver bounds a request's body (the OpenTelemetry Collector at 20 MiB by default). Audits
 * with large payloads that end together, or a backlog, must not make one request past it: a
 * refused batch was sent again whole forever, and every thread claimed with it waited behind it.
 */
describe(`OTLP export of large audits (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    receiver.maxBodyBytes = 8 * 1024 * 1024;
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TIMEOUT: '5000', EXPORT_POLL_MS: '50' });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('sends them in requests the receiver takes, and the threads beside them too', async () => {
    await receiver.down();
    // Three model calls of 3 MB of span text each (input, output, the output's text), ended while the receiver is down.
    const large = await runningRun(t);
    const text = { text: 'x'.repeat(1_000_000) };
    for (const operationId of ['m1', 'm2', 'm3']) {
      must(await large.session.modelStarted(operationId, { input: text }));
      must(await large.session.modelFinished(operationId, [], { output: text }));
    }
    must(await large.session.finish('COMPLETED'));
    const small = await runningRun(t);
    must(await small.session.finish('COMPLETED'));
    await receiver.up();

    const runIdOf = (span: { attributes: Record<string, unknown> }) => span.attributes['agent_audit.run.id'];
    await receiver.waitFor((spans) => spans.filter((span) => runIdOf(span) === large.runId).length === 4 && spans.some((span) => runIdOf(span) === small.runId), 60_000);
    expect(receiver.spans.filter((span) => runIdOf(span) === large.runId && span.name === 'chat')).toHaveLength(3);
  }, 120_000);

  it("sends smaller requests to a receiver whose limit is below the request size (nginx's 1 MiB default in front of a collector)", async () => {
    receiver.maxBodyBytes = 1024 * 1024;
    try {
      // Twenty model calls of 300 kB of span text each: one request of about 6 MB, each span far under the limit.
      const endedRunOfLargeCalls = async () => {
        const run = await runningRun(t);
        const text = { text: 'y'.repeat(100_000) };
        for (let call = 1; call <= 20; call++) {
          must(await run.session.modelStarted(`m${call}`, { input: text }));
          must(await run.session.modelFinished(`m${call}`, [], { output: text }));
        }
        must(await run.session.finish('COMPLETED'));
        return run;
      };
      await receiver.down();
      const first = await endedRunOfLargeCalls();
      await receiver.up();
      const runIdOf = (span: { attributes: Record<string, unknown> }) => span.attributes['agent_audit.run.id'];
      await receiver.waitFor((spans) => spans.filter((span) => runIdOf(span) === first.runId).length === 21, 30_000);
      expect(receiver.tooLarge).toBeGreaterThan(0);
      // Having learnt the receiver's limit, it sends the next run's spans without a refusal.
      const refusals = receiver.tooLarge;
      await receiver.down();
      const second = await endedRunOfLargeCalls();
      await receiver.up();
      await receiver.waitFor((spans) => spans.filter((span) => runIdOf(span) === second.runId).length === 21, 30_000);
      expect(receiver.tooLarge).toBe(refusals);
    } finally {
      receiver.maxBodyBytes = 8 * 1024 * 1024;
    }
  }, 60_000);

  it('sets aside a span larger than the receiver takes in a request of its own (counted, logged) and sends everything else', async () => {
    receiver.maxBodyBytes = 1024 * 1024;
    const lines: string[] = [];
    const stopListening = onLogLine((line) => lines.push(line));
    const tooLarge = async () => (await exportDroppedSpans.get()).values.find((value) => value.labels.reason === 'too_large')?.value ?? 0;
    const before = await tooLarge();
    try {
      await receiver.down();
      // One model call of 1.5 MB of span text (input, output, the output's text): past the receiver's 1 MiB alone.
      const large = await runningRun(t);
      const text = { text: 'z'.repeat(500_000) };
      must(await large.session.modelStarted('m1', { input: text }));
      must(await large.session.modelFinished('m1', [], { output: text }));
      must(await large.session.modelStarted('m2', { input: { text: 'small' } }));
      must(await large.session.modelFinished('m2', [], { output: { text: 'small' } }));
      must(await large.session.finish('COMPLETED'));
      const beside = await runningRun(t);
      must(await beside.session.finish('COMPLETED'));
      await receiver.up();

      const runIdOf = (span: { attributes: Record<string, unknown> }) => span.attributes['agent_audit.run.id'];
      await receiver.waitFor((spans) => spans.some((span) => runIdOf(span) === beside.runId), 30_000);
      await receiver.waitFor((spans) => spans.filter((span) => runIdOf(span) === large.runId).length === 2, 30_000);
      expect(receiver.spans.filter((span) => runIdOf(span) === large.runId).map((span) => span.attributes['agent_audit.operation_id'] ?? span.name).sort()).toEqual([
        'invoke_agent',
        'm2',
      ]);
      expect(await tooLarge()).toBe(before + 1);
      const logged = lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'the receiver refused a span as too large; set aside');
      expect(logged?.span?.traceId).toBe(large.runId.replaceAll('-', ''));
      expect(logged?.spanBytes).toBeGreaterThan(1024 * 1024);

      // The queue moves on: a later run arrives.
      const later = await runningRun(t);
      must(await later.session.finish('COMPLETED'));
      await receiver.waitFor((spans) => spans.some((span) => runIdOf(span) === later.runId), 30_000);
    } finally {
      stopListening();
      receiver.maxBodyBytes = 8 * 1024 * 1024;
    }
  }, 120_000);
});
