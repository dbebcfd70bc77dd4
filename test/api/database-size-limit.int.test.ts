import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onLogLine } from '../../src/log.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { failingInserts } from '../support/failing-inserts.js';
import { runningRun } from '../support/lifecycle.js';
import { expectRejected, type Scene } from '../write-path/support.js';
import { RunEvents, sendBatch } from '../batches/support.js';

// A statement past one of the database's own size limits (SQLSTATE 54000 program_limit_exceeded:
// "total size of jsonb object elements exceeds the maximum of 268435455 bytes", which arrays of
// small numbers reached with MAX_JSON_BYTES=8 MiB) answered INTERNAL_SERVER_ERROR. It depends on
// the input alone: BAD_USER_INPUT, without SQL text. A trigger raises it for one operation id, on
// both backends, as the real statement would (which takes minutes and gigabytes to reach).

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

const DATABASE_TEXT = 'total size of jsonb object elements exceeds the maximum of 268435455 bytes';

describe(`a write past a size limit of the database (${backendName})`, () => {
  it('(54000) is BAD_USER_INPUT with a message of its own, no SQL text, and writes nothing; a batch holding it too', async () => {
    const run = await runningRun(t);
    const scene: Scene = { t, owner: run.owner, threadId: run.threadId };
    const logged: string[] = [];
    const stopReading = onLogLine((line) => void logged.push(line));
    const healed = await failingInserts(t, 'huge', '54000', DATABASE_TEXT);
    try {
      const { message, extensions } = await expectRejected(scene, 'BAD_USER_INPUT', () => run.session.modelStarted('huge'));
      expect(message).toMatch(/too large for the database/);
      expect(message).not.toMatch(/268435455|jsonb object elements/);
      expect(extensions).toMatchObject({ requestId: expect.any(String) });
      const events = new RunEvents(run.session.lease);
      const batch = await sendBatch(t, run.worker, [events.modelStarted('m1'), events.modelStarted('huge')]);
      expect(errorCode(batch), JSON.stringify(batch)).toBe('BAD_USER_INPUT');
    } finally {
      stopReading();
      await healed();
    }
    expect(logged.filter((line) => /unexpected error/.test(line))).toEqual([]);
    expect(logged.filter((line) => /past a size limit of the database/.test(line))).toHaveLength(2);
  });
});
