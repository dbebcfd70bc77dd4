import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportConfigFromEnv } from '../../src/export/config.js';
import { startExporter } from '../../src/export/exporter.js';
import { onLogLine } from '../../src/log.js';
import { exportFailures } from '../../src/metrics.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must, runningRun } from '../support/lifecycle.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

/*
 * agent_audit_export_failures_total was one number: a receiver throttling, one that is down, one
 * that refuses the credentials and one whose certificate is not trusted all looked the same to an
 * operator, though only the first two pass by themselves. Each failed try now counts under its
 * reason, and its log line says it.
 */
describe(`why the export fails, as an operator sees it (${backendName})`, () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp(); // its own exporter is off: the ones below fail one way each
    const { session } = await runningRun(t);
    must(await session.finish('COMPLETED'));
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const failures = async (reason: string) => (await exportFailures.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;

  /** Runs an exporter against `url` until it failed once; returns the failure's log line. */
  async function failOnce(url: string, reason: string, env: Record<string, string> = {}) {
    const before = await failures(reason);
    const lines: Record<string, unknown>[] = [];
    const stopListening = onLogLine((line) => lines.push(JSON.parse(line)));
    const exporter = startExporter(t.app.db, exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TIMEOUT: '500', EXPORT_POLL_MS: '50', ...env })!, {
      instanceId: `failure-reasons-${reason}`,
      wait: (_ms, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())), // one try: the stop ends the wait
    });
    try {
      await expect.poll(() => failures(reason), { timeout: 10_000 }).toBeGreaterThan(before);
      await expect.poll(() => lines.find((line) => line.msg === 'export failed; retrying')).toBeDefined();
      return lines.find((line) => line.msg === 'export failed; retrying')!;
    } finally {
      await exporter.stop();
      stopListening();
    }
  }

  it('throttled (429), unavailable (503), refused (401), timeout, unreachable', async () => {
    receiver.script = [{ status: 429, headers: { 'retry-after': '30' } }];
    expect(await failOnce(receiver.url, 'throttled')).toMatchObject({ reason: 'throttled', status: 429, retryAfterMs: 30_000 });
    receiver.script = [{ status: 503 }];
    expect(await failOnce(receiver.url, 'unavailable')).toMatchObject({ reason: 'unavailable', status: 503 });
    receiver.script = [{ status: 401 }];
    expect(await failOnce(receiver.url, 'refused')).toMatchObject({ reason: 'refused', status: 401 });
    receiver.hold = true;
    expect(await failOnce(receiver.url, 'timeout')).toMatchObject({ reason: 'timeout' });
    receiver.hold = false;
    await receiver.down();
    try {
      expect(await failOnce(receiver.url, 'unreachable')).toMatchObject({ reason: 'unreachable', error: { code: 'ECONNREFUSED' } });
    } finally {
      await receiver.up();
    }
  }, 120_000);

  it('tls: a receiver whose certificate is not trusted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'export-tls-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      const server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) => res.end('{}'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
        expect(await failOnce(url, 'tls')).toMatchObject({ reason: 'tls', error: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' } });
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
