import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// A list across the caller's threads, newest first, paged with `after` (the previous page's last
// entry): a thread deleted between two pages, the one that held that last entry, must not stop
// the paging. Its entry is gone, but its place in the order is not: the next page goes on after
// it, as it would have, without the deleted thread's entries. (A dashboard paging the ledger
// while the owner deletes a thread, or retention removes old ones, hit BAD_USER_INPUT and could
// never load the next page.)

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const LEDGER = `query($first: Int, $after: String) {
  toolCallLedger(first: $first, after: $after) { edges { node { toolCallId } } pageInfo { hasNextPage endCursor } }
}`;
const SEARCH = `query($first: Int, $after: ID) {
  searchAudits(name: "lookup", first: $first, after: $after) { hasMore items { audit { id ... on ToolAudit { toolCallId } } } }
}`;

/** A thread whose one run declares and runs `calls` (tool `lookup`), in that order. */
async function threadWith(who: Actors, calls: string[]) {
  const threadId = await createThread(t, who.owner, `calls ${calls.join(' ')}`);
  const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
  await worker.declare('plan', calls.map((id) => ({ id, name: 'lookup', args: { id } })));
  for (const id of calls) must(await worker.toolStarted(id, 'lookup', { effectiveInput: { id } }));
  return threadId;
}

const deleteThread = async (who: Actors, id: string) =>
  must(await t.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id }, who.owner));

/** A page of each list: its tool call ids, whether more follow, and what to pass as `after` for the next. */
const LISTS = {
  toolCallLedger: async (token: string, after?: string) => {
    const page = (await t.gql(LEDGER, { first: 2, after }, token)).data.toolCallLedger;
    return { ids: page.edges.map((edge: { node: { toolCallId: string } }) => edge.node.toolCallId), more: page.pageInfo.hasNextPage, after: page.pageInfo.endCursor };
  },
  searchAudits: async (token: string, after?: string) => {
    const page = (await t.gql(SEARCH, { first: 2, after }, token)).data.searchAudits;
    return { ids: page.items.map((hit: { audit: { toolCallId: string } }) => hit.audit.toolCallId), more: page.hasMore, after: page.items.at(-1)?.audit.id };
  },
};

describe('paging on after the thread of the last entry of a page was deleted', () => {
  it.each(Object.entries(LISTS))('%s: the next page follows the deleted entry', async (_name, read) => {
    const who = await actors(t);
    await threadWith(who, ['a1', 'a2']);
    const doomed = await threadWith(who, ['b1', 'b2']);
    const first = await read(who.owner);
    expect(first).toMatchObject({ ids: ['b2', 'b1'], more: true });
    await deleteThread(who, doomed);

    expect(await read(who.owner, first.after)).toMatchObject({ ids: ['a2', 'a1'], more: false });
  });
});
