// A worker whose identity service hands out short-lived tokens: the TypeScript client takes a
// function giving the token before each request, so one client (and its lease) outlives any one
// token; a request refused for a token that expired meanwhile is sent again with the fresh one.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { mintToken } from '../../src/auth/jwt.js';
import { TEST_JWT_SECRET, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** The in-process server as the client's fetch, noting each request's bearer token. */
function recordingFetch(sent: string[]): FetchLike {
  return (url, init) => {
    sent.push(String((init.headers as Record<string, string>).authorization).replace(/^Bearer /, ''));
    return Promise.resolve(t.app.yoga.fetch(url, init));
  };
}

it("a worker's run survives its token's renewal: each request carries the provider's current token", async () => {
  const owner = new AuditClient({ url: 'http://test/graphql', token: await t.token('provider-owner', 'superadmin'), fetch: recordingFetch([]) });
  const { id: threadId } = await owner.createThread({ title: 'renewed tokens' });
  const { id: runId } = await owner.createRun({ threadId });

  const sent: string[] = [];
  let current = await mintToken(TEST_JWT_SECRET, { sub: 'provider-worker', role: 'worker' }, '1h');
  const worker = new AuditClient({ url: 'http://test/graphql', token: () => current, fetch: recordingFetch(sent), batching: false });
  const lease = await worker.claimRun(runId, 60);
  const first = current;
  // The identity service renewed it (same sub, a later exp): the lease is the sub's, not the token's.
  current = await mintToken(TEST_JWT_SECRET, { sub: 'provider-worker', role: 'worker' }, '2h');
  expect(current).not.toBe(first);
  await worker.renewLease(lease, 60);
  const run = await worker.finishRun({ lease, status: 'COMPLETED' });
  expect(run.status).toBe('COMPLETED');
  expect(sent).toEqual([first, current, current]);
});

it('a request refused for an expired token is sent again once with the fresh token the provider then gives', async () => {
  const expired = await mintToken(TEST_JWT_SECRET, { sub: 'provider-owner-2', role: 'superadmin' }, Math.floor(Date.now() / 1000) - 60);
  const fresh = await t.token('provider-owner-2', 'superadmin');
  const given = [expired, fresh];
  const sent: string[] = [];
  const owner = new AuditClient({ url: 'http://test/graphql', token: async () => given.shift() ?? fresh, fetch: recordingFetch(sent) });
  const thread = await owner.createThread({ title: 'refreshed' });
  expect(thread.ownerId).toBe('provider-owner-2');
  expect(sent).toEqual([expired, fresh]);
  // A provider with nothing newer: the refusal is the answer, sent once.
  const stale = new AuditClient({ url: 'http://test/graphql', token: () => expired, fetch: recordingFetch(sent) });
  await expect(stale.createThread({ title: 'stale' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  expect(sent).toEqual([expired, fresh, expired]);
});
