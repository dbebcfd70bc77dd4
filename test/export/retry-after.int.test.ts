import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportConfigFromEnv } from '../../src/export/config.js';
import { startExporter } from '../../src/export/exporter.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/*
 * A receiver that is throttling (429) or unavailable (503) says when to come back with
 * Retry-After, in seconds or as an HTTP date. The exporter waited on its own schedule instead: a
 * wait longer than the request's deadline was dropped (the next try came after half a second,
 * hammering a back end that asked for two minutes), a shorter one was retried inside the request
 * out of the exporter's sight, and a backoff grown to 30 s was kept where the back end asked for 1 s.
 * The waits are the exporter's own (`wait`), recorded, not slept.
 */
describe(`OTLP export to a receiver that answers Retry-After (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp(); // its own exporter is off: the one below records its waits
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  /** An exporter whose waits are recorded and not slept; `retryWaits`: those that are not the idle poll (50 ms). */
  function recordingExporter(instanceId: string) {
    const waits: number[] = [];
    const exporter = startExporter(t.app.db, exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, EXPORT_POLL_MS: '50' })!, {
      instanceId,
      wait: async (ms) => {
        waits.push(ms);
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
    });
    return { exporter, retryWaits: () => waits.filter((ms) => ms !== 50) };
  }

  it('waits as long as the receiver asks, once per answer, and no longer', async () => {
    const scripted = Date.now();
    // An HTTP date holds whole seconds: 90 to 91 s from now.
    const inNinetySeconds = new Date(Math.ceil((scripted + 90_000) / 1000) * 1000);
    receiver.script = [
      { status: 429, headers: { 'retry-after': '120' } },
      { status: 503, headers: { 'retry-after': inNinetySeconds.toUTCString() } },
      { status: 503 },
      { status: 503 },
      { status: 503 },
      { status: 429, headers: { 'retry-after': '1' } },
    ];
    const { runId, session } = await runningRun(t);
    must(await session.finish('COMPLETED'));

    const { exporter, retryWaits } = recordingExporter('retry-after-test');
    try {
      await receiver.waitFor((spans) => spans.some((span) => span.attributes['agent_audit.run.id'] === runId));
      // One request per answer: six refused, then the one taken.
      expect(receiver.requests).toHaveLength(7);
      const [twoMinutes, untilTheDate, ...rest] = retryWaits();
      expect(twoMinutes).toBe(120_000);
      expect(untilTheDate).toBeGreaterThan(inNinetySeconds.getTime() - Date.now() - 1000);
      expect(untilTheDate).toBeLessThanOrEqual(inNinetySeconds.getTime() - scripted);
      // Three answers without Retry-After: the exporter's own backoff; then the 1 s asked for, not that backoff.
      expect(rest).toHaveLength(4);
      expect(rest[3]).toBe(1000);
    } finally {
      await exporter.stop();
    }
  }, 60_000);

  // A receiver (or a proxy in front of it) asking for a day is tried again after an hour.
  it('waits an hour at most, whatever the receiver asks', async () => {
    const inTwoDays = new Date(Date.now() + 2 * 86_400_000).toUTCString();
    receiver.script = [
      { status: 429, headers: { 'retry-after': '86400' } },
      { status: 503, headers: { 'retry-after': inTwoDays } },
    ];
    const { runId, session } = await runningRun(t);
    must(await session.finish('COMPLETED'));
    const { exporter, retryWaits } = recordingExporter('retry-after-cap-test');
    try {
      await receiver.waitFor((spans) => spans.some((span) => span.attributes['agent_audit.run.id'] === runId));
      expect(retryWaits()).toEqual([3_600_000, 3_600_000]);
    } finally {
      await exporter.stop();
    }
  }, 60_000);
});
