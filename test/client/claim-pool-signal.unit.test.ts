import { describe, expect, it, vi } from 'vitest';
import { getEventListeners } from 'node:events';
import { AuditClient, type FetchLike } from '@agent-audit/client';

describe('claimRun with one pool-wide signal', () => {
  it('claims in flight at once share one listener on the signal, taken off when they answer', async () => {
    let release!: () => void;
    const answered = new Promise<void>((resolve) => (release = resolve));
    const fetch: FetchLike = async (_url, init) => {
      await answered;
      const { variables } = JSON.parse(String(init.body)) as { variables: { input: { runId: string } } };
      return Response.json({ data: { claimRun: { runId: variables.input.runId, owner: 'w', epoch: 1, expiresAt: new Date(Date.now() + 60_000).toISOString() } } });
    };
    const worker = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch, batching: false });
    const shutdown = new AbortController();
    const claims = Array.from({ length: 30 }, (_, run) => worker.claimRun(`run-${run}`, 30, undefined, { signal: shutdown.signal }));
    await vi.waitFor(() => expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1));
    release();
    await Promise.all(claims);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });
});
