// A lease whose length is not a multiple of 3 s gives its keeper a fractional per-renewal timeout
// (a third of it): every renewal failed at once with "The value of "delay" is out of range", and the
// lease was lost. A policy's timeoutMs need not be a whole number of milliseconds.
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { fakeFetch, graphqlData } from './fake-fetch.js';

describe('a timeout of a fraction of a millisecond', () => {
  it('is honoured, not a network error', async () => {
    const lease = { runId: 'run-1', owner: 'w', epoch: 1, expiresAt: new Date(Date.now() + 4_000).toISOString() };
    const worker = new AuditClient({ url: 'http://audit.test/graphql', token: 't', fetch: fakeFetch(graphqlData('renewLease', lease)) });
    await expect(worker.renewLease(lease, 4, { maxAttempts: 1, timeoutMs: 4_000 / 3 })).resolves.toMatchObject({ runId: 'run-1' });
  });
});
