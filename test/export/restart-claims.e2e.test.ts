// Issue 42: after a kill -9 in the middle of an export batch, the restarted server (the same
// INSTANCE_ID) takes back the claims its dead start held at once, instead of waiting for them to
// expire. The dead start's claim is pushed an hour out while no server runs, so spans that arrive
// within the test's time can only have come from a claim taken back, however slow the restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { openDatabase } from '../../src/db/database.js';
import { e2eActors, killServers, startServer } from '../e2e/support/server.js';

let receiver: OtlpReceiver;
let storage: TestStorage;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  storage = await createTestStorage();
});
afterAll(async () => {
  await killServers();
  await receiver?.close();
  await storage?.remove();
});

describe(`export after a kill -9 (${backendName}, the server process)`, () => {
  it('the restarted instance sends the batch its dead start had claimed, before that claim would expire', async () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_TIMEOUT: '60000',
      EXPORT_POLL_MS: '50',
      INSTANCE_ID: 'restart-claims-test',
    };
    const first = await startServer(storage, env);
    receiver.hold = true;
    const who = await e2eActors();
    const owner = new AuditClient({ url: first.url, token: who.owner });
    const worker = new AuditClient({ url: first.url, token: who.worker });
    const thread = await owner.createThread({ title: 'killed mid-export' });
    const run = await owner.createRun({ threadId: thread.id });
    const lease = await worker.claimRun(run.id, 300);
    await worker.finishRun({ lease, status: 'COMPLETED' });
    // The batch is in flight (its thread claimed) when the process dies.
    await expect.poll(() => receiver.requests.length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    expect(receiver.spans).toEqual([]);
    receiver.hold = false;
    const db = await openDatabase({ url: storage.env.DATABASE_URL || undefined, dataDir: storage.env.DATA_DIR || undefined });
    const extended = await db.sql
      .query<{ threadId: string }>(
        `UPDATE export_pending SET claimed_until = now() + interval '1 hour' WHERE claimed_by IS NOT NULL RETURNING thread_id`,
      )
      .finally(() => db.close());
    expect(extended).toEqual([{ threadId: thread.id }]);

    await startServer(storage, env);
    await receiver.waitFor((spans) => spans.some((span) => span.attributes['agent_audit.run.id'] === run.id), 60_000);
  }, 150_000);
});
