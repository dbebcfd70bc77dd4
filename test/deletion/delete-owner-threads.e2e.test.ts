// docs/deletion.md, "Erasing one person's threads": examples/operations/delete-owner-threads.ts
// pages threads(ownerId:) and deletes each, against a server process, as an operator runs it.
import { describe, expect, it } from 'vitest';
import { runAsWritten, runScript, serverForFile, tokenFor } from '../e2e/support/server.js';

/** docs/deletion.md's command, as written (the code-blocks test checks it is here); run by bash with this server's admin token and owner in place. */
const ERASE = 'AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/delete-owner-threads.ts <owner sub>';

const server = serverForFile();

async function gql(token: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as { data?: any; errors?: { extensions?: { code?: string } }[] };
}

const CREATE = `mutation($title: String) { createThread(input: { title: $title }) { id } }`;
const THREADS_OF = `query($ownerId: String, $after: String) { threads(ownerId: $ownerId, first: 2, after: $after) { edges { node { id ownerId } } pageInfo { hasNextPage endCursor } } }`;

describe("erasing one person's threads", () => {
  it('threads(ownerId:) pages only that owner\'s threads, for admins; a user gets only its own', async () => {
    const [alice, bob, admin] = await Promise.all([tokenFor('alice-pages', 'user'), tokenFor('bob-pages', 'user'), tokenFor('ops', 'admin')]);
    for (let i = 0; i < 3; i++) await gql(alice, CREATE, { title: `alice ${i}` });
    await gql(bob, CREATE, { title: 'bob' });
    const first = await gql(admin, THREADS_OF, { ownerId: 'alice-pages' });
    const second = await gql(admin, THREADS_OF, { ownerId: 'alice-pages', after: first.data.threads.pageInfo.endCursor });
    const owners = [...first.data.threads.edges, ...second.data.threads.edges].map((edge: { node: { ownerId: string } }) => edge.node.ownerId);
    expect(owners).toEqual(['alice-pages', 'alice-pages', 'alice-pages']);
    expect(second.data.threads.pageInfo.hasNextPage).toBe(false);
    expect((await gql(bob, THREADS_OF, { ownerId: 'alice-pages' })).data.threads.edges).toEqual([]);
    expect((await gql(alice, THREADS_OF, { ownerId: 'alice-pages' })).data.threads.edges).toHaveLength(2);
  });

  it("the example deletes every thread of the owner, with a receipt each, and no one else's", async () => {
    const [carol, dave, admin] = await Promise.all([tokenFor('carol-erased', 'user'), tokenFor('dave-kept', 'user'), tokenFor('ops', 'admin')]);
    const carols: string[] = [];
    for (let i = 0; i < 105; i++) carols.push((await gql(carol, CREATE, { title: `carol ${i}` })).data.createThread.id);
    const daves = (await gql(dave, CREATE, { title: 'dave' })).data.createThread.id as string;

    const { code, output } = await runAsWritten(ERASE, { '<admin or superadmin token>': admin, '<owner sub>': 'carol-erased' }, { AUDIT_URL: server.url });
    expect(code, output).toBe(0);
    const receipts = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { threadId: string; verifiedAt: string });
    expect(receipts.map((receipt) => receipt.threadId).sort()).toEqual([...carols].sort());
    expect(receipts.every((receipt) => receipt.verifiedAt)).toBe(true);
    expect(output).toMatch(/105 threads of carol-erased deleted/);
    expect((await gql(admin, THREADS_OF, { ownerId: 'carol-erased' })).data.threads.edges).toEqual([]);
    expect((await gql(admin, `query($id: ID!) { thread(id: $id) { id } }`, { id: daves })).data.thread).toEqual({ id: daves });
  }, 180_000);

  it('without a token or an owner, it says how to run it', async () => {
    const { code, output } = await runScript('examples/operations/delete-owner-threads.ts', [], { AUDIT_URL: server.url, AUDIT_ADMIN_TOKEN: '' });
    expect(code).toBe(2);
    expect(output).toMatch(/^usage: AUDIT_ADMIN_TOKEN=/m);
  });
});
