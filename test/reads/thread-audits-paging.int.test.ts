import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, createThread } from '../support/lifecycle.js';
import { insertAudits, insertRun } from './support.js';

// Paging back through a long thread with `threadAudits(before:)`: every audit exactly once, in
// the read's order, however the runs' sequences overlap or tie.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const PAGE = `query($threadId: ID!, $limit: Int, $before: ID) {
  threadAudits(threadId: $threadId, limit: $limit, before: $before) { truncated items { id runId sequence } }
}`;

/** Model audits sharing one sequence in one run: the read's last tie-breakers (role, id) decide. */
async function insertTiedAudits(threadId: string, runId: string, count: number, sequence: number) {
  const rows = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(), threadId, runId, role: 'ASSISTANT' as const, messageType: 'model_audit' as const,
    operationId: `tied-${i}`, name: 'tied-model', sequence: BigInt(sequence), status: 'COMPLETED' as const,
  }));
  await t.app.db.prisma.message.createMany({ data: rows });
  return rows.map((row) => row.id);
}

async function readAll(owner: string, threadId: string, limit: number) {
  const pages: { id: string }[][] = [];
  let before: string | null = null;
  for (;;) {
    const response = await t.gql(PAGE, { threadId, limit, before }, owner);
    expect(response.errors).toBeUndefined();
    const { items, truncated } = response.data.threadAudits as { items: { id: string }[]; truncated: boolean };
    pages.unshift(items);
    if (!truncated) break;
    before = items[0]!.id;
  }
  return pages;
}

describe('threadAudits paged back with before', () => {
  it('returns every audit exactly once, in order, across runs whose sequences restart and tie', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const expected: string[] = [];
    // Three runs: the later ones restart at sequence 1 (a resume), the middle one also holds
    // audits tied on one sequence, and the last is longer than a page.
    for (const [count, tied] of [[37, 0], [20, 9], [123, 0]] as const) {
      const runId = await insertRun(t.app.db.prisma, threadId);
      const ordered = await insertAudits(t.app.db.prisma, { threadId, runId, count });
      if (tied) {
        // The model audit at sequence 5 (index 4) and the tied ones: all ASSISTANT, so ordered by id.
        const atFive = [ordered[4]!, ...(await insertTiedAudits(threadId, runId, tied, 5))].sort();
        ordered.splice(4, 1, ...atFive);
      }
      expected.push(...ordered);
    }
    const whole = (await t.gql(PAGE, { threadId, limit: 500 }, owner)).data.threadAudits;
    expect(whole.items.map((item: { id: string }) => item.id)).toEqual(expected);

    for (const limit of [1, 7, 50, 189]) {
      const pages = await readAll(owner, threadId, limit);
      const ids = pages.flat().map((item) => item.id);
      expect(ids, `limit ${limit}`).toEqual(expected);
      expect(pages.slice(1).every((page) => page.length === limit), `limit ${limit}: every page but the oldest is full`).toBe(true);
    }
  });

  it('the oldest audit as before: no items, not truncated', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const [oldest] = await insertAudits(t.app.db.prisma, { threadId, runId: await insertRun(t.app.db.prisma, threadId), count: 4 });
    const { items, truncated } = (await t.gql(PAGE, { threadId, before: oldest }, owner)).data.threadAudits;
    expect({ items, truncated }).toEqual({ items: [], truncated: false });
  });

  it('a before that is not an audit of this thread is BAD_USER_INPUT; the access rule comes first', async () => {
    const { owner } = await actors(t);
    const threadId = await createThread(t, owner);
    const other = await createThread(t, owner);
    const [ofOther] = await insertAudits(t.app.db.prisma, { threadId: other, runId: await insertRun(t.app.db.prisma, other), count: 2 });
    for (const before of [ofOther, randomUUID(), 'not-a-uuid', '']) {
      const response = await t.gql(PAGE, { threadId, before }, owner);
      expect(errorCode(response), before).toBe('BAD_USER_INPUT');
      expect(response.errors![0]!.message).toBe('before must be the id of an audit of this thread');
    }
    // Another superadmin: the thread does not exist for them, whatever the cursor.
    const stranger = (await actors(t)).owner;
    expect(errorCode(await t.gql(PAGE, { threadId: other, before: ofOther }, stranger))).toBe('NOT_FOUND');
    // A user may not read audits at all.
    expect(errorCode(await t.gql(PAGE, { threadId: other, before: ofOther }, await t.token('plain-user', 'user')))).toBe('FORBIDDEN');
  });
});
