// A worker pool runs many streamText calls in one process: a `finished` it did not await (its own
// code threw while reading the stream) must not crash the process with an unhandled rejection
// when the recording fails, taking every other run of the pool down with it.
import { describe, expect, it } from 'vitest';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { scriptedModel, turn } from '../../src/cli/ai-sdk-agent.js';

/** A server that grants the claim, then answers every write LEASE_LOST (the owner cancelled the run). */
const cancelledAfterClaim: FetchLike = async (_url, init) => {
  const { operationName, variables } = JSON.parse(String(init.body)) as { operationName: string; variables: { input: { runId: string } } };
  if (operationName === 'ClaimRun') {
    return Response.json({ data: { claimRun: { runId: variables.input.runId, owner: 'w', epoch: 1, expiresAt: new Date(Date.now() + 60_000).toISOString() } } });
  }
  return Response.json({ data: null, errors: [{ message: 'the run was cancelled', extensions: { code: 'LEASE_LOST', runStatus: 'CANCELLED' } }] });
};

describe('streamText in a worker pool', () => {
  it('a failed recording whose `finished` nobody awaited is no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    // Vitest's own listener would fail the file: this test looks at it itself.
    const vitestListeners = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    process.on('unhandledRejection', onUnhandled);
    try {
      const worker = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch: cancelledAfterClaim, batching: false });
      const { result, finished } = await new AiSdkAudit(worker).streamText('run-1', { model: scriptedModel([turn('Hello there.')]), prompt: 'Hi.' });
      // The caller's own code fails while it reads: it never reaches `await finished`.
      await (async () => {
        for await (const _part of result.fullStream) throw new Error('the caller\'s handler crashed');
      })().catch(() => {});
      // Let the recording end and the event loop report what nobody handled.
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      // Awaited later, it still rejects with the recording's error.
      await expect(finished).rejects.toMatchObject({ name: 'AuditLeaseLostError' });
    } finally {
      process.off('unhandledRejection', onUnhandled);
      for (const listener of vitestListeners) process.on('unhandledRejection', listener);
    }
  });
});
