import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { backendName } from '../support/database.js';
import { runningRun } from '../support/lifecycle.js';
import { wsClient } from '../support/streams.js';
import { startListeningApp, type ListeningApp } from './support.js';

// Queries and mutations over graphql-ws run through yoga's envelop as over HTTP (the executor of
// each operation is looked up by its arguments, src/server/graphql-ws.ts): scope auth, error codes,
// masking, and custom scalars written inline.

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

function once(url: string, token: string, query: string, variables: Record<string, unknown> = {}) {
  const client = wsClient(url, token);
  onTestFinished(() => client.dispose());
  type Result = { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
  return new Promise<Result>((resolve, reject) => {
    let result: Result;
    client.subscribe(
      { query, variables },
      {
        next: (value) => (result = value as Result),
        // An operation refused before it runs (validation) gets graphql-ws's `error` message: its errors.
        error: (error) => (Array.isArray(error) ? resolve({ errors: error }) : reject(error)),
        complete: () => resolve(result),
      },
    );
  });
}

describe(`queries and mutations over graphql-ws (${backendName})`, () => {
  it('a query answers as over HTTP', async () => {
    const { owner, threadId, runId } = await runningRun(t);
    const result = await once(t.url, owner, `query($id: ID!) { thread(id: $id) { id runs { id status } } }`, { id: threadId });
    expect(result).toEqual({ data: { thread: { id: threadId, runs: [{ id: runId, status: 'RUNNING' }] } } });
  });

  it('a mutation with custom scalars written inline records them; a malformed one is BAD_USER_INPUT', async () => {
    const { session } = await runningRun(t);
    const lease = `{ runId: ${JSON.stringify(session.lease.runId)}, epoch: ${session.lease.epoch} }`;
    const started = await once(
      t.url,
      session.token,
      `mutation { recordModelStarted(input: { lease: ${lease}, operationId: "m1", sequence: "7",
        observedAt: "2026-11-29T21:00:00Z", input: { prompt: "hi", n: [1, null] } }) { sequence input startedAt } }`,
    );
    expect(started).toEqual({ data: { recordModelStarted: { sequence: '7', input: { prompt: 'hi', n: [1, null] }, startedAt: '2026-11-29T21:00:00.000Z' } } });
    const refused = await once(
      t.url,
      session.token,
      `mutation { recordModelStarted(input: { lease: ${lease}, operationId: "m2", sequence: "x", observedAt: "2026-11-29T21:00:00Z" }) { id } }`,
    );
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
