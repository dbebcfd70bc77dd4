// A worker pool passes one long-lived signal (its shutdown) to every run it records in the
// process: once a run has ended, nothing of it may stay attached to that signal, or thousands of
// runs pile up (MaxListenersExceededWarning, every ended run kept in memory).
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { LangGraphAudit } from '@agent-audit/client/langgraph';

/** A server that grants every claim and ends every run. */
const server: FetchLike = async (_url, init) => {
  const { operationName, variables } = JSON.parse(String(init.body)) as { operationName: string; variables: { input: { runId?: string; lease?: { runId: string } } } };
  const runId = variables.input.runId ?? variables.input.lease!.runId;
  const lease = { runId, owner: 'worker-1', epoch: 1, expiresAt: new Date(Date.now() + 60_000).toISOString() };
  if (operationName === 'ClaimRun') return Response.json({ data: { claimRun: lease } });
  if (operationName === 'FinishRun') return Response.json({ data: { finishRun: { id: runId, status: 'COMPLETED' } } });
  return Response.json({ data: null, errors: [{ message: `unexpected ${operationName}`, extensions: { code: 'BAD_USER_INPUT' } }] });
};

describe('one shutdown signal across many runs', () => {
  it('LangGraphAudit.invoke leaves no listener on the caller\'s signal once the run has ended', async () => {
    const worker = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch: server, batching: false });
    const audit = new LangGraphAudit(worker);
    const shutdown = new AbortController();
    const graph = { invoke: async () => ({ messages: [] }) };
    const failing = { invoke: async () => Promise.reject(new Error('tool crashed')) };
    for (let run = 0; run < 20; run++) {
      const { status } = await audit.invoke(`run-${run}`, graph, {}, { signal: shutdown.signal });
      expect(status).toBe('COMPLETED');
      await expect(audit.invoke(`failing-${run}`, failing, {}, { signal: shutdown.signal })).rejects.toThrow('tool crashed');
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('many runs in flight at once share one listener on it (no MaxListenersExceededWarning)', async () => {
    const worker = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch: server, batching: false });
    const audit = new LangGraphAudit(worker);
    const shutdown = new AbortController();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let invoked = 0;
    const graph = { invoke: async () => { invoked++; await gate; return { messages: [] }; } };
    const runs = Array.from({ length: 50 }, (_, run) => audit.invoke(`run-${run}`, graph, {}, { signal: shutdown.signal }));
    await expect.poll(() => invoked).toBe(50);
    expect(getEventListeners(shutdown.signal, 'abort').length).toBeLessThanOrEqual(1);
    open();
    await Promise.all(runs);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });
});
