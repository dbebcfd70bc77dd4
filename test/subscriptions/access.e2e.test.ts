import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import type { Role } from '../../src/domain/principal.js';
import { createRun, createThread } from '../support/lifecycle.js';
import { beforeTokenExpiry } from '../support/short-lived-token.js';
import { payloads, subscribeSse, subscribeWs, waitFor, type Stream } from '../support/streams.js';
import { TEST_JWT_SECRET } from '../support/app.js';
import { startListeningApp, type ListeningApp } from './support.js';

// SEMANTICS.md, "Principals" and "Subscriptions": access is checked when a subscription starts,
// over graphql-ws (token in connectionParams) and SSE (Authorization header). A refused one gets
// one result carrying the contract's code and no data, then the stream completes: never silence.

const SUBSCRIPTIONS = {
  toolStatusChanged: `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id status } }`,
  auditChanged: `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id status } }`,
  runChanged: `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`,
};
type Field = keyof typeof SUBSCRIPTIONS;

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const TRANSPORTS = {
  'graphql-ws': async (query: string, variables: Record<string, unknown>, token: string | null) => subscribeWs(t.url, query, variables, token),
  SSE: (query: string, variables: Record<string, unknown>, token: string | null) => subscribeSse(t.app, query, variables, token),
};
type Transport = keyof typeof TRANSPORTS;

async function subscribe(transport: Transport, field: Field, threadId: string, token: string | null) {
  const stream = await TRANSPORTS[transport](SUBSCRIPTIONS[field], { threadId }, token);
  onTestFinished(() => stream.close());
  return stream;
}

const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
const tokenFor = (role: Role, sub = unique(role)) => t.token(sub, role);

/** A caller, given a thread owned by `ownerSub`. */
type Caller = (ownerSub: string) => Promise<string | null>;
const ANONYMOUS: [string, Caller][] = [
  ['no token', async () => null],
  ['a malformed token', async () => 'not-a-jwt'],
  ['a token signed with another secret', async () => mintToken('another-secret-that-is-long-enough-for-hs256', { sub: unique('x'), role: 'superadmin' })],
];

/** The one result a refused subscription gets, and that it then completes. */
async function expectRefused(stream: Stream, code: string) {
  const [result] = await stream.take(1);
  expect(result?.data ?? null).toBeNull();
  expect(result?.errors?.map((error) => error.extensions?.code)).toEqual([code]);
  expect(await stream.ended()).toEqual({ kind: 'complete' });
  expect(stream.results).toHaveLength(1);
}

describe.each(Object.keys(TRANSPORTS) as Transport[])('access at subscription start over %s', (transport) => {
  describe.each(['toolStatusChanged', 'auditChanged'] as const)('%s: superadmins on threads they own', (field) => {
    const refusals: [string, Caller, string][] = [
      ...ANONYMOUS.map(([name, caller]): [string, Caller, string] => [name, caller, 'UNAUTHENTICATED']),
      ['a user', () => tokenFor('user'), 'FORBIDDEN'],
      ['an admin', () => tokenFor('admin'), 'FORBIDDEN'],
      ['a worker', () => tokenFor('worker'), 'FORBIDDEN'],
      // Even the owning sub with a lesser role: audits are for superadmins.
      ['the owner with the user role', (ownerSub) => tokenFor('user', ownerSub), 'FORBIDDEN'],
      ['a superadmin on a thread they do not own', () => tokenFor('superadmin'), 'NOT_FOUND'],
    ];
    it.each(refusals)('%s is refused', async (_name, caller, code) => {
      const ownerSub = unique('owner');
      const threadId = await createThread(t, await tokenFor('superadmin', ownerSub));
      await expectRefused(await subscribe(transport, field, threadId, await caller(ownerSub)), code);
    });

    it('a thread that does not exist is NOT_FOUND', async () => {
      const owner = await tokenFor('superadmin');
      await expectRefused(await subscribe(transport, field, randomUUID(), owner), 'NOT_FOUND');
      await expectRefused(await subscribe(transport, field, 'not-a-uuid', owner), 'NOT_FOUND');
    });
  });

  describe('runChanged: the owner, admins and superadmins', () => {
    const refusals: [string, Caller, string][] = [
      ...ANONYMOUS.map(([name, caller]): [string, Caller, string] => [name, caller, 'UNAUTHENTICATED']),
      ['another user', () => tokenFor('user'), 'FORBIDDEN'],
      ['a worker', () => tokenFor('worker'), 'FORBIDDEN'],
    ];
    it.each(refusals)('%s is refused', async (_name, caller, code) => {
      const ownerSub = unique('owner');
      const threadId = await createThread(t, await tokenFor('user', ownerSub));
      await expectRefused(await subscribe(transport, 'runChanged', threadId, await caller(ownerSub)), code);
    });

    it('a thread that does not exist is NOT_FOUND', async () => {
      await expectRefused(await subscribe(transport, 'runChanged', randomUUID(), await tokenFor('admin')), 'NOT_FOUND');
    });

    const allowed: [string, Caller][] = [
      ['the owner', (ownerSub) => tokenFor('user', ownerSub)],
      ['an admin', () => tokenFor('admin')],
      ['a superadmin who does not own the thread', () => tokenFor('superadmin')],
    ];
    it.each(allowed)('%s receives the run changes', async (_name, caller) => {
      const ownerSub = unique('owner');
      const owner = await tokenFor('user', ownerSub);
      const threadId = await createThread(t, owner);
      const stream = await subscribe(transport, 'runChanged', threadId, await caller(ownerSub));
      await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');
      const runId = await createRun(t, owner, threadId);
      expect(payloads(await stream.take(1), 'runChanged')).toEqual([{ id: runId, status: 'QUEUED' }]);
    });
  });
});

describe.each(Object.keys(TRANSPORTS) as Transport[])('a token that expires during the subscription, over %s', (transport) => {
  it('ends the stream with SUBSCRIPTION_INTERRUPTED (TOKEN_EXPIRED) once it expires, and stops listening', { timeout: 90_000 }, async () => {
    const ownerSub = unique('owner');
    const owner = await tokenFor('user', ownerSub);
    const threadId = await createThread(t, owner);
    const { value: stream, expiresAtMs } = await beforeTokenExpiry(async (expiresAtMs) => {
      const shortLived = await mintToken(TEST_JWT_SECRET, { sub: ownerSub, role: 'user' }, expiresAtMs / 1000);
      const stream = await subscribe(transport, 'runChanged', threadId, shortLived);
      try {
        await waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === 1, 'the subscription to be live');
        // Until then it receives every change.
        const runId = await createRun(t, owner, threadId);
        expect(payloads(await stream.take(1), 'runChanged')).toEqual([{ id: runId, status: 'QUEUED' }]);
        return stream;
      } catch (error) {
        await stream.close();
        throw error;
      }
    });

    expect(await stream.ended(30_000)).toEqual({ kind: 'complete' });
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAtMs);
    const last = stream.results.at(-1);
    expect(last?.data ?? null).toBeNull();
    expect(last?.errors?.[0]?.extensions).toMatchObject({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'TOKEN_EXPIRED' });
    expect(t.app.pubsub.subscriberCount('run', threadId)).toBe(0);
  });
});

