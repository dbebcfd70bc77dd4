import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { createRun, createThread, must } from '../support/lifecycle.js';

let t: TestApp;
let alice: string;
let bob: string;
let admin: string;
let superadmin: string;
const aliceThreads: string[] = []; // oldest first
const bobThreads: string[] = [];
beforeAll(async () => {
  t = await startTestApp();
  [alice, bob, admin, superadmin] = await Promise.all([
    t.token('alice', 'user'),
    t.token('bob', 'user'),
    t.token('ada', 'admin'),
    t.token('root', 'superadmin'),
  ]);
  // Created one after another, several in the same millisecond: the order must still be total.
  for (let i = 0; i < 5; i++) {
    aliceThreads.push(await createThread(t, alice, `alice ${i}`));
    bobThreads.push(await createThread(t, bob, `bob ${i}`));
  }
});
afterAll(() => t.close());

const THREADS = `query($first: Int, $after: String) {
  result: threads(first: $first, after: $after) {
    edges { cursor node { id title latestRun { id status } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** Every page of `threads` for `token`, `first` at a time. */
async function allPages(token: string, first: number) {
  const pages: { ids: string[]; hasNextPage: boolean }[] = [];
  let after: string | null = null;
  for (;;) {
    const threads: any = must(await t.gql(THREADS, { first, after }, token));
    pages.push({ ids: threads.edges.map((edge: any) => edge.node.id), hasNextPage: threads.pageInfo.hasNextPage });
    if (!threads.pageInfo.hasNextPage) return pages;
    expect(threads.pageInfo.endCursor).toBe(threads.edges.at(-1).cursor);
    after = threads.pageInfo.endCursor;
  }
}

describe(`Query.threads (${backendName})`, () => {
  it('pages a user through its own threads, newest first, each once', async () => {
    const pages = await allPages(alice, 2);
    expect(pages.map((page) => page.ids.length)).toEqual([2, 2, 1]);
    expect(pages.map((page) => page.hasNextPage)).toEqual([true, true, false]);
    expect(pages.flatMap((page) => page.ids)).toEqual([...aliceThreads].reverse());
  });

  it('shows admins and superadmins every thread', async () => {
    const everyThread = [...aliceThreads, ...bobThreads];
    for (const token of [admin, superadmin]) {
      const ids = (await allPages(token, 3)).flatMap((page) => page.ids);
      expect(new Set(ids)).toEqual(new Set(everyThread));
      expect(ids).toHaveLength(everyThread.length);
    }
  });

  it('keeps a cursor in place when newer threads are created', async () => {
    const first = must(await t.gql(THREADS, { first: 2 }, bob));
    await createThread(t, bob, 'newer');
    const next = must(await t.gql(THREADS, { first: 2, after: first.pageInfo.endCursor }, bob));
    expect(next.edges.map((edge: any) => edge.node.id)).toEqual([bobThreads[2], bobThreads[1]]);
  });

  it("carries each thread's latest run", async () => {
    const [threadId] = aliceThreads;
    await createRun(t, alice, threadId!);
    const latest = await createRun(t, alice, threadId!);
    const threads = must(await t.gql(THREADS, { first: 100 }, alice));
    const edge = threads.edges.find((candidate: any) => candidate.node.id === threadId);
    expect(edge.node.latestRun).toEqual({ id: latest, status: 'QUEUED' });
    expect(threads.edges.find((candidate: any) => candidate.node.id === aliceThreads[1]).node.latestRun).toBeNull();
  });

  it.each([0, 101, -1])('refuses first: %i', async (first) => {
    const response = await t.gql(THREADS, { first }, alice);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(response.data).toBeNull();
  });

  const forged = (createdAt: string) => Buffer.from(JSON.stringify([createdAt, '01a24586-c93f-747a-89bb-5c743949eac2'])).toString('base64url');
  it.each(['garbage', Buffer.from('["x","y"]').toString('base64url'), '', forged('0000-01-01T00:00:00Z'), forged('+275760-09-13T00:00:00.000Z'), forged('9999-12-31T23:59:59-23:59'), forged('2026-02-30T00:00:00Z')])('refuses a malformed cursor: %j', async (after) => {
    expect(errorCode(await t.gql(THREADS, { first: 2, after }, alice))).toBe('BAD_USER_INPUT');
  });

  it('filters by a piece of the title, any case, its LIKE characters taken literally, paging within the filter', async () => {
    const owner = await t.token('carol', 'user');
    const made: Record<string, string> = {};
    for (const title of ['Invoices March', 'refund 100%', 'invoices april', 'weather', 'refund_x', 'INVOICES May']) made[title] = await createThread(t, owner, title);
    const TITLED = `query($title: String, $first: Int, $after: String) {
      result: threads(title: $title, first: $first, after: $after) { edges { node { id title } } pageInfo { hasNextPage endCursor } }
    }`;
    const titles = async (title: string, first = 20, after: string | null = null, token = owner) => {
      const page: any = must(await t.gql(TITLED, { title, first, after }, token));
      return { titles: page.edges.map((edge: any) => edge.node.title), ...page.pageInfo };
    };
    expect((await titles('invoices')).titles).toEqual(['INVOICES May', 'invoices april', 'Invoices March']);
    expect((await titles('0%')).titles).toEqual(['refund 100%']);
    expect((await titles('d_')).titles).toEqual(['refund_x']);
    expect((await titles('  ')).titles).toHaveLength(6);
    // Another user's threads never show; an admin's filter sees every owner's.
    expect((await titles('invoices', 20, null, alice)).titles).toEqual([]);
    expect((await titles('alice', 20, null, admin)).titles).toHaveLength(5);
    const first = await titles('invoices', 2);
    expect(first).toMatchObject({ titles: ['INVOICES May', 'invoices april'], hasNextPage: true });
    expect(await titles('invoices', 2, first.endCursor)).toMatchObject({ titles: ['Invoices March'], hasNextPage: false });
    const tooLong = await t.gql(TITLED, { title: 'x'.repeat(100_000) }, owner);
    expect(errorCode(tooLong)).toBe('BAD_USER_INPUT');
  });

  it("counts the filter's threads on every page, not only a page's, and past 10,000 says only that there are more", async () => {
    const COUNTED = `query($title: String, $ownerId: String, $first: Int, $after: String) {
      result: threads(title: $title, ownerId: $ownerId, first: $first, after: $after) { totalCount edges { node { id } } pageInfo { endCursor } }
    }`;
    const read = async (token: string, variables: Record<string, unknown> = {}): Promise<any> => must(await t.gql(COUNTED, { first: 2, ...variables }, token));
    const first = await read(alice);
    expect(first.totalCount).toBe(5);
    expect((await read(alice, { after: first.pageInfo.endCursor })).totalCount).toBe(5);
    expect((await read(alice, { title: 'ALICE 3' })).totalCount).toBe(1);
    const bobs = (await allPages(bob, 100))[0]!.ids.length;
    expect((await read(admin, { ownerId: 'bob' })).totalCount).toBe(bobs);
    expect((await read(bob)).totalCount).toBe(bobs);
    // Another owner's threads are no user's to count.
    expect((await read(bob, { ownerId: 'alice' })).totalCount).toBe(0);
    expect(errorCode(await t.gql(COUNTED, { title: 'x'.repeat(100_000) }, alice))).toBe('BAD_USER_INPUT');

    // An owner of 10,001 threads: counted as 10,001, "more than 10,000"; one deleted, exactly 10,000.
    const fleet = await t.token('fleet', 'user');
    await t.app.deps.db.query(`INSERT INTO thread (id, owner_id, title) SELECT gen_random_uuid(), 'fleet', 'fleet ' || k FROM generate_series(1, 10001) k`);
    expect((await read(fleet)).totalCount).toBe(10_001);
    await t.app.deps.db.query(`UPDATE thread SET deleted_at = now() WHERE owner_id = 'fleet' AND title = 'fleet 7'`);
    expect((await read(fleet)).totalCount).toBe(10_000);
    expect((await read(fleet, { title: 'fleet 1000' })).totalCount).toBe(3);
  });

  it('needs a token', async () => {
    expect(errorCode(await t.gql(THREADS, {}, null))).toBe('UNAUTHENTICATED');
  });
});
