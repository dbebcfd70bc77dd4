import { describe, expect, it } from 'vitest';
import { AuditClient, LeaseKeeper, type RunLease } from '@agent-audit/client';
import { fakeFetch, hang, type RecordedRequest } from './fake-fetch.js';

// The keeper gives up the hung renewal at two thirds of the lease and sends the next at seven
// ninths: 30 s leaves 6.7 s before expiry, which a loaded CI machine's timers do not eat (9 s left
// 2 s, and one run's did).
const LEASE_SECONDS = 30;
const leaseFrom = (now: number): RunLease => ({ runId: 'run-1', owner: 'worker-1', epoch: 1, expiresAt: new Date(now + LEASE_SECONDS * 1000).toISOString(), grantedAt: new Date(now).toISOString() });

describe('LeaseKeeper over a server that does not answer one renewal', () => {
  it('sends the next renewal before the lease expires, not after the hung one times out', { timeout: 45_000 }, async () => {
    const first = leaseFrom(Date.now());
    const renewed: RecordedRequest[] = [];
    // The first renewal is never answered (packets dropped, a stalled proxy); the next ones are.
    const fetch = fakeFetch(hang, (request) => {
      renewed.push(request);
      return Response.json({ data: { renewLease: leaseFrom(Date.now()) } });
    });
    const client = new AuditClient({ url: 'http://audit.invalid/graphql', token: 't', fetch, batching: false });
    const keeper = new LeaseKeeper(client, first, { leaseSeconds: LEASE_SECONDS });
    try {
      // Until a later renewal is answered, or the first lease has run out.
      await expect
        .poll(() => renewed.length > 0 || Date.now() >= Date.parse(first.expiresAt), { timeout: 40_000, interval: 100 })
        .toBe(true);
      expect(renewed.length, 'a renewal answered before the lease expired').toBeGreaterThan(0);
      expect(Date.parse(keeper.lease.expiresAt)).toBeGreaterThan(Date.parse(first.expiresAt));
    } finally {
      keeper.stop();
    }
  });
});
