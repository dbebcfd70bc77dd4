// A creation whose answer is lost (a cut connection, a restart): the TypeScript client resends it
// with its createId, and the owner ends with the one thread and the one run it asked for.
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { losingFirstResponses } from './support/lossy-fetch.js';
import { e2eActors, serverForFile } from './support/server.js';

const server = serverForFile();

/** What the server holds: the owner's threads and, per thread, its runs. */
async function ownersRecord(token: string, ownerId: string) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({
      query: `query($ownerId: String!) { threads(first: 100, ownerId: $ownerId) { edges { node { id runCount runs { id status } } } } }`,
      variables: { ownerId },
    }),
  });
  const { data } = (await response.json()) as { data: { threads: { edges: { node: { id: string; runCount: number; runs: unknown[] } }[] } } };
  return data.threads.edges.map((edge) => edge.node);
}

describe(`creations whose answers are lost (${backendName})`, () => {
  it('createThread and createRun resent by the client leave one thread with one run', async () => {
    const who = await e2eActors();
    const network = losingFirstResponses((body) => /"operationName":"Create(Thread|Run)"/.test(body));
    const owner = new AuditClient({ url: server.url, token: who.owner, fetch: network, retry: { baseDelayMs: 1, maxDelayMs: 5 } });

    const thread = await owner.createThread({ title: 'lost answers' });
    const run = await owner.createRun({ threadId: thread.id });

    expect(network.lost).toEqual(['CreateThread', 'CreateRun']);
    expect(await ownersRecord(who.owner, who.ownerSub)).toEqual([{ id: thread.id, runCount: 1, runs: [{ id: run.id, status: 'QUEUED' }] }]);
  });

  it('a createId the caller keeps gets the same run from another client (a restarted orchestrator)', async () => {
    const who = await e2eActors();
    const before = new AuditClient({ url: server.url, token: who.owner });
    const thread = await before.createThread({ title: 'restarted', createId: 'order-42/thread' });
    const run = await before.createRun({ threadId: thread.id, createId: 'order-42/run-1' });

    const after = new AuditClient({ url: server.url, token: who.owner });
    expect((await after.createThread({ title: 'restarted', createId: 'order-42/thread' })).id).toBe(thread.id);
    expect((await after.createRun({ threadId: thread.id, createId: 'order-42/run-1' })).id).toBe(run.id);
    expect(await ownersRecord(who.owner, who.ownerSub)).toEqual([{ id: thread.id, runCount: 1, runs: [{ id: run.id, status: 'QUEUED' }] }]);
  });
});
