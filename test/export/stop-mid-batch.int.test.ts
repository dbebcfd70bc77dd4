import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportConfigFromEnv } from '../../src/export/config.js';
import { startExporter } from '../../src/export/exporter.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

/*
 * A batch goes in several requests. The receiver takes the first and asks the exporter to come
 * back in an hour (503 with Retry-After) for the next; the server is stopped during that wait
 * and started again. The stop does not wait out the hour, and the next start resumes where the
 * receiver stopped taking: the spans it took are not sent again, the rest are sent once.
 */
describe(`an export stopped in the middle of a batch (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp(); // its own exporter is off: the two starts below are one instance's
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('stops during a Retry-After wait, and the next start sends each span once', async () => {
    const runs = await Promise.all([1, 2, 3].map(() => runningRun(t)));
    for (const { session } of runs) {
      must(await session.modelStarted('m1', { input: { text: 'hi' } }));
      must(await session.modelFinished('m1', [], { output: { text: 'done' } }));
      must(await session.finish('COMPLETED'));
    }
    const runIds = new Set(runs.map((run) => run.runId));
    const ours = (spans: ReceivedSpan[]) => spans.filter((span) => runIds.has(span.attributes['agent_audit.run.id'] as string));
    const config = exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' })!;
    // Two spans a request: the batch's six spans go in three; the second is answered "in an hour".
    const options = { instanceId: 'stop-mid-batch-test', spansPerRequest: 2 };
    receiver.script = [null, { status: 503, headers: { 'retry-after': '3600' } }];

    const first = startExporter(t.app.db, config, options);
    await receiver.waitFor(() => receiver.requests.length === 2 && receiver.script.length === 0);
    await first.stop();
    expect(ours(receiver.spans)).toHaveLength(2);

    const second = startExporter(t.app.db, config, options);
    try {
      await receiver.waitFor((spans) => ours(spans).length >= 6);
      // In cursor order: a copy of what the first start had sent would have come before the rest.
      const keys = ours(receiver.spans).map((span) => `${span.name} ${span.spanId}`);
      expect(new Set(keys).size).toBe(6);
      expect(keys).toHaveLength(6);
    } finally {
      await second.stop();
    }
  }, 60_000);

  // One thread's spans in two requests: the receiver takes the first and fails the second. The
  // retry sent the whole thread again, the spans of the first request a second time.
  it('sends again only what the receiver did not take of a thread', async () => {
    const { runId, session } = await runningRun(t);
    for (const operationId of ['m1', 'm2', 'm3']) {
      must(await session.modelStarted(operationId, { input: { text: 'hi' } }));
      must(await session.modelFinished(operationId, [], { output: { text: 'done' } }));
    }
    must(await session.finish('COMPLETED'));
    const ours = (spans: ReceivedSpan[]) => spans.filter((span) => span.attributes['agent_audit.run.id'] === runId);
    receiver.script = [null, { status: 503, headers: { 'retry-after': '0' } }];
    const exporter = startExporter(t.app.db, exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' })!, {
      instanceId: 'partly-taken-test',
      spansPerRequest: 2,
    });
    try {
      await receiver.waitFor((spans) => ours(spans).some((span) => span.name === 'invoke_agent'));
      const keys = ours(receiver.spans).map((span) => `${span.name} ${span.spanId}`);
      expect(keys).toHaveLength(4);
      expect(new Set(keys).size).toBe(4);
    } finally {
      await exporter.stop();
    }
  }, 60_000);
});
