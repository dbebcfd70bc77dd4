// SIGTERM while workers write: the server drains and exits 0, and a new server process on the
// same database serves every write that was acknowledged, with the leases still valid.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient, SequenceCounter, TRANSPORT_ERROR, isAuditApiError, type RunLease, type ThreadAuditItem } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { LiveConnection } from './support/live.js';
import { e2eActors, killServers, startServer } from './support/server.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { withTimeout } from './support/wait.js';

const WORKERS = 4;
/** Acknowledged writes, over all workers, before the SIGTERM. */
const WRITES_BEFORE_SIGTERM = 40;
/** Four audits per step: a thread stays far below threadAudits' 500. */
const MAX_STEPS = 100;

let storage: TestStorage;
const connections: LiveConnection[] = [];

beforeAll(async () => {
  storage = await createTestStorage();
});

afterAll(async () => {
  await Promise.allSettled(connections.map((connection) => connection.close()));
  await killServers();
  await storage?.remove();
});

/** A write the server answered with success. */
interface Acknowledged {
  call: 'recordModelStarted' | 'recordModelFinished' | 'recordToolStarted' | 'recordToolFinished';
  operationId: string;
  sequence: string;
}

interface Writer {
  owner: string;
  worker: string;
  threadId: string;
  lease: RunLease;
  acknowledged: Acknowledged[];
  /** Resolves with the error that stopped the writer. */
  stopped?: Promise<unknown>;
}

/** model (declaring one tool) -> tool, again and again, until a call fails. */
async function writeUntilRefused(client: AuditClient, writer: Writer): Promise<unknown> {
  const { lease, acknowledged } = writer;
  const sequence = new SequenceCounter(1);
  try {
    for (let step = 1; step <= MAX_STEPS; step++) {
      const operationId = `model-${step}`;
      const toolCallId = `call-${step}`;
      let at = sequence.next();
      await client.recordModelStarted({ lease, operationId, sequence: at, model: 'e2e-model', input: { step } });
      acknowledged.push({ call: 'recordModelStarted', operationId, sequence: at });
      at = sequence.next();
      const toolCalls = [{ id: toolCallId, name: 'echo', args: { step } }];
      await client.recordModelFinished({ lease, operationId, status: 'COMPLETED', toolCalls, sequence: at });
      acknowledged.push({ call: 'recordModelFinished', operationId, sequence: at });
      at = sequence.next();
      await client.recordToolStarted({ lease, toolCallId, name: 'echo', effectiveInput: { step }, sequence: at });
      acknowledged.push({ call: 'recordToolStarted', operationId: toolCallId, sequence: at });
      at = sequence.next();
      await client.recordToolFinished({ lease, toolCallId, output: { content: `echo ${step}`, status: 'success' }, sequence: at });
      acknowledged.push({ call: 'recordToolFinished', operationId: toolCallId, sequence: at });
    }
  } catch (error) {
    return error;
  }
  return new Error(`the writer ran all ${MAX_STEPS} steps without meeting the shutdown`);
}

/** What threadAudits must show for each acknowledged write. */
function expectAcknowledgedIn(items: ThreadAuditItem[], acknowledged: Acknowledged[]): void {
  const byKey = new Map(items.map((item) => [`${item.__typename}:${item.operationId}`, item]));
  for (const write of acknowledged) {
    const tool = write.call === 'recordToolStarted' || write.call === 'recordToolFinished';
    const item = byKey.get(`${tool ? 'ToolAudit' : 'ModelAudit'}:${write.operationId}`);
    const label = `${write.call} ${write.operationId} (sequence ${write.sequence})`;
    expect(item, label).toBeDefined();
    if (write.call === 'recordModelStarted' || write.call === 'recordToolStarted') {
      expect(item!.sequence, label).toBe(write.sequence);
    } else {
      expect({ status: item!.status, finishedSequence: item!.finishedSequence }, label).toEqual({ status: 'COMPLETED', finishedSequence: write.sequence });
    }
    if (write.call === 'recordToolFinished') {
      expect(item!.__typename === 'ToolAudit' && item!.toolCall.output, label).toBe(`echo ${write.operationId.slice('call-'.length)}`);
    }
  }
}

describe(`graceful shutdown of the server process (${backendName})`, () => {
  it('SIGTERM while several workers write: exit 0, and every acknowledged write is there after a restart', async () => {
    const first = await startServer(storage);
    const writers: Writer[] = [];
    for (let n = 0; n < WORKERS; n++) {
      const who = await e2eActors();
      const owner = new AuditClient({ url: first.url, token: who.owner });
      const { id: threadId } = await owner.createThread({ title: `shutdown writer ${n}` });
      const run = await owner.createRun({ threadId });
      const lease = await new AuditClient({ url: first.url, token: who.worker }).claimRun(run.id, 300);
      writers.push({ owner: who.owner, worker: who.worker, threadId, lease, acknowledged: [] });
    }
    // A dashboard stays connected through the shutdown; its socket must not hold the process.
    const dashboard = await LiveConnection.open(first.wsUrl, writers[0]!.owner);
    connections.push(dashboard);
    const events = dashboard.subscribe(`subscription ($threadId: ID!) { auditChanged(threadId: $threadId) { id status } }`, {
      threadId: writers[0]!.threadId,
    });

    // One attempt per call: after the SIGTERM a refused connection ends the writer.
    for (const writer of writers) {
      const client = new AuditClient({ url: first.url, token: writer.worker, retry: { maxAttempts: 1 } });
      writer.stopped = writeUntilRefused(client, writer);
    }
    const total = () => writers.reduce((sum, writer) => sum + writer.acknowledged.length, 0);
    await withTimeout(
      (async () => {
        while (total() < WRITES_BEFORE_SIGTERM) await new Promise((resolve) => setTimeout(resolve, 20));
      })(),
      60_000,
      () => `only ${total()} writes were acknowledged:\n${first.output()}`,
    );
    await events.waitFor(1);

    const exitCode = await first.stop('SIGTERM', 40_000);
    expect(exitCode, first.output()).toBe(0);
    const stoppedBy = await withTimeout(Promise.all(writers.map((writer) => writer.stopped)), 30_000, () => 'the writers did not stop');
    for (const error of stoppedBy) {
      // The server never answered an error while draining: the writers only lost the connection.
      expect(isAuditApiError(error, TRANSPORT_ERROR), String(error)).toBe(true);
    }

    const second = await startServer(storage);
    for (const writer of writers) {
      const { items } = await new AuditClient({ url: second.url, token: writer.owner }).threadAudits(writer.threadId);
      expectAcknowledgedIn(items, writer.acknowledged);
      // Beyond the acknowledged writes, at most the one that was in flight when the server went away.
      const startedAudits = writer.acknowledged.filter((write) => write.call.endsWith('Started')).length;
      expect(items.length - startedAudits).toBeGreaterThanOrEqual(0);
      expect(items.length - startedAudits).toBeLessThanOrEqual(1);

      // The lease survived the restart: the same worker ends its run on the new process.
      const ended = await new AuditClient({ url: second.url, token: writer.worker }).finishRun({ lease: writer.lease, status: 'COMPLETED' });
      expect(ended.status).toBe('COMPLETED');
    }
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 240_000);
});
