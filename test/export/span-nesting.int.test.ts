import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

/*
 * A run's times are the database's clock, its audits' the worker's (observedAt, docs/operations.md
 * "Clocks"). A worker whose clock is off put the audits' spans outside their run's root span:
 * Tempo and Jaeger drew children before their parent began and after it ended. The root span
 * covers its audits.
 */
describe(`OTLP export of a run recorded by a worker whose clock is off (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('sends a root span that contains every audit span of its run', async () => {
    const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
    const { runId, session } = await runningRun(t);
    must(await session.modelStarted('m1', { model: 'gpt-test', input: {}, observedAt: at(-5_000) }));
    must(await session.modelFinished('m1', [{ id: 'call-1', name: 'search', args: {} }], { output: { content: 'x' }, observedAt: at(-4_000) }));
    must(await session.toolStarted('call-1', 'search', { observedAt: at(50_000) }));
    must(await session.toolFinished('call-1', { content: 'ok' }, { observedAt: at(60_000) }));
    must(await session.finish('COMPLETED'));

    const ofRun = (spans: ReceivedSpan[]) => spans.filter((span) => span.attributes['agent_audit.run.id'] === runId);
    await receiver.waitFor((spans) => ofRun(spans).length === 3);
    const root = ofRun(receiver.spans).find((span) => span.name === 'invoke_agent')!;
    for (const child of ofRun(receiver.spans).filter((span) => span !== root)) {
      expect([child.name, child.startTimeUnixNano >= root.startTimeUnixNano]).toEqual([child.name, true]);
      expect([child.name, child.endTimeUnixNano <= root.endTimeUnixNano]).toEqual([child.name, true]);
    }
  }, 60_000);
});
