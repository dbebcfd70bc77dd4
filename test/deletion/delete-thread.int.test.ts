import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient, AuditApiError } from '@agent-audit/client';
import { onLogLine } from '../../src/log.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { THREAD_AUDITS, actors, claim, createRun, createThread, must, runningRun, claimRunMutation } from '../support/lifecycle.js';
import { sendRacing, untilEachOutcome } from '../support/races.js';
import { bulkSeed } from '../../bench/lib/bulk-seed.js';
import { sqlOverDriver } from '../../bench/lib/sql.js';
import { DELETE_THREAD, rowsLeft } from './support.js';

// SEMANTICS.md "Deletion and retention": who may delete, what the receipt says, and that nothing
// of the thread is left or reachable afterwards.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

/** A thread with history, an ended run with a model call and two tools, and a RUNNING run mid-tool. */
async function populatedThread() {
  const ctx = await runningRun(t);
  must(await t.gql(`mutation($input: AppendMessageInput!) { result: appendMessage(input: $input) { id } }`, {
    input: { threadId: ctx.threadId, role: 'USER', content: { text: 'hello' } },
  }, ctx.owner));
  await ctx.session.declare('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'fetch' }]);
  must(await ctx.session.toolStarted('c1', 'search'));
  must(await ctx.session.toolFinished('c1', { ok: true }));
  must(await ctx.session.toolStarted('c2', 'fetch'));
  must(await ctx.session.finish('INTERRUPTED'));
  const resumeId = await createRun(t, ctx.owner, ctx.threadId, ctx.runId);
  const resumed = await claim(t, ctx.worker, resumeId);
  await resumed.declare('m2', [{ id: 'c3', name: 'search' }]);
  must(await resumed.toolStarted('c3', 'search')); // left RUNNING, lease held
  return { ...ctx, resumeId, resumed };
}

describe(`deleteThread (${backendName})`, () => {
  it('removes the thread and everything under it, and says so in its receipt', async () => {
    const ctx = await populatedThread();
    const before = Date.now();
    const response = await t.gql(DELETE_THREAD, { id: ctx.threadId }, ctx.owner);
    expect(response.errors).toBeUndefined();
    const receipt = response.data.deleteThread;
    // 2 runs; audits: m1, tool c1, tool c2, m2, tool c3; tool calls c1, c2, c3; one chat message.
    expect(receipt).toMatchObject({ threadId: ctx.threadId, runs: 2, audits: 5, toolCalls: 3, messages: 1 });
    expect(new Date(receipt.verifiedAt).getTime()).toBeGreaterThanOrEqual(before - 5_000);
    expect(await rowsLeft(t, ctx.threadId, [ctx.runId, ctx.resumeId])).toEqual({});
  });

  it('logs each receipt it answers, with who asked, as the sweeper logs its own', async () => {
    const ctx = await runningRun(t);
    const admin = await t.token('ops-erasure', 'admin');
    const logged: Record<string, unknown>[] = [];
    const stopReading = onLogLine((line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.event === 'thread_deleted') logged.push(entry);
    });
    let receipt: Record<string, unknown>;
    try {
      receipt = must(await t.gql(DELETE_THREAD.replace('deleteThread', 'result: deleteThread'), { id: ctx.threadId }, admin));
      expect(errorCode(await t.gql(DELETE_THREAD, { id: ctx.threadId }, admin))).toBe('NOT_FOUND'); // a refusal is no receipt
    } finally {
      stopReading();
    }
    expect(logged).toEqual([
      {
        level: 'info', time: expect.any(String), msg: 'thread deleted', event: 'thread_deleted', reason: 'request',
        requestId: expect.any(String), deletedBy: { sub: 'ops-erasure', role: 'admin' }, ...receipt,
      },
    ]);
  });

  it('the TypeScript client deletes a thread and returns the receipt; a second deletion is NOT_FOUND', async () => {
    const ctx = await runningRun(t);
    const owner = new AuditClient({ url: 'http://test/graphql', token: ctx.owner, fetch: async (url, init) => t.app.yoga.fetch(url, init) });
    const receipt = await owner.deleteThread(ctx.threadId);
    expect(receipt).toEqual({ threadId: ctx.threadId, runs: 1, audits: 0, toolCalls: 0, messages: 0, verifiedAt: expect.any(String) });
    const again = await owner.deleteThread(ctx.threadId).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(AuditApiError);
    expect((again as AuditApiError).code).toBe('NOT_FOUND');
  });

  it('leaves the thread NOT_FOUND for every read, write and second deletion', async () => {
    const ctx = await populatedThread();
    const other = await populatedThread();
    must(await t.gql(DELETE_THREAD.replace('deleteThread', 'result: deleteThread'), { id: ctx.threadId }, ctx.owner));

    const admin = await t.token('admin-reader', 'admin');
    const reads = [
      t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: ctx.threadId }, ctx.owner),
      t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: ctx.threadId }, admin),
      t.gql(`query($id: ID!) { run(id: $id) { id } }`, { id: ctx.runId }, ctx.owner),
      t.gql(THREAD_AUDITS, { threadId: ctx.threadId }, ctx.owner),
      t.gql(`query($id: ID!) { toolCallStats(threadId: $id) { name } }`, { id: ctx.threadId }, ctx.owner),
      t.gql(`mutation($id: ID!) { createRun(input: { threadId: $id }) { id } }`, { id: ctx.threadId }, ctx.owner),
      t.gql(`mutation($id: ID!, $c: JSON!) { appendMessage(input: { threadId: $id, role: USER, content: $c }) { id } }`, { id: ctx.threadId, c: {} }, ctx.owner),
      t.gql(`mutation($id: ID!) { cancelRun(runId: $id) { id } }`, { id: ctx.resumeId }, ctx.owner),
      t.gql(DELETE_THREAD, { id: ctx.threadId }, ctx.owner),
      // The worker still holding the RUNNING run's lease.
      ctx.resumed.toolFinished('c3', { ok: true }),
      ctx.resumed.renew(),
      ctx.resumed.finish('COMPLETED'),
      t.gql(claimRunMutation, { input: { runId: ctx.resumeId } }, ctx.worker),
    ];
    expect((await Promise.all(reads)).map(errorCode)).toEqual(reads.map(() => 'NOT_FOUND'));

    const list = await t.gql(`{ threads(first: 100) { edges { node { id } } } }`, {}, admin);
    expect(list.data.threads.edges.map((edge: { node: { id: string } }) => edge.node.id)).not.toContain(ctx.threadId);

    // The other thread is untouched and still written to.
    must(await other.resumed.toolFinished('c3', { ok: true }));
    const audits = await t.gql(THREAD_AUDITS, { threadId: other.threadId }, other.owner);
    expect(audits.data.threadAudits.items).toHaveLength(5);
  });

  it('is for the owner, an admin or a superadmin; a worker is FORBIDDEN, another user gets what thread(id) gives', async () => {
    const owner = await t.token('owner-user', 'user');
    const threadOf = () => createThread(t, owner);
    const outcomes: Record<string, unknown> = {};
    for (const [who, token] of [
      ['owner', owner],
      ['admin', await t.token('an-admin', 'admin')],
      ['superadmin', await t.token('a-superadmin', 'superadmin')],
      ['another user', await t.token('another-user', 'user')],
      ['worker', await t.token('a-worker', 'worker')],
    ] as const) {
      const threadId = await threadOf();
      const deleted = await t.gql(DELETE_THREAD, { id: threadId }, token);
      const read = await t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: threadId }, token);
      outcomes[who] = deleted.errors ? errorCode(deleted) : 'deleted';
      if (who === 'another user') expect(errorCode(read)).toBe(errorCode(deleted));
      // A refused deletion changed nothing.
      const stillThere = await t.gql(`query($id: ID!) { thread(id: $id) { id } }`, { id: threadId }, owner);
      expect(stillThere.data?.thread?.id ?? null).toBe(deleted.errors ? threadId : null);
    }
    expect(outcomes).toEqual({
      owner: 'deleted',
      admin: 'deleted',
      superadmin: 'deleted',
      'another user': 'FORBIDDEN',
      worker: 'FORBIDDEN',
    });
    // A worker is FORBIDDEN whether or not the thread exists; anyone else is told NOT_FOUND for none.
    const missing = '00000000-0000-4000-8000-000000000000';
    expect(errorCode(await t.gql(DELETE_THREAD, { id: missing }, await t.token('a-worker', 'worker')))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(DELETE_THREAD, { id: missing }, owner))).toBe('NOT_FOUND');
    expect(errorCode(await t.gql(DELETE_THREAD, { id: missing }))).toBe('UNAUTHENTICATED');
    expect(errorCode(await t.gql(DELETE_THREAD, { id: ' ' }, owner))).toBe('BAD_USER_INPUT');
  });

  it('removes a thread in bounded batches of rows: the counts add up over the batches', async () => {
    const { deleteThread } = await import('../../src/domain/deletion.js');
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runIds: string[] = [];
    for (let r = 0; r < 3; r++) {
      const runId = await createRun(t, who.owner, threadId, runIds.at(-1));
      runIds.push(runId);
      const session = await claim(t, who.worker, runId);
      for (let m = 0; m < 4; m++) await session.declare(`m${m}`, [{ id: `r${r}m${m}`, name: 'tool' }]);
      must(await session.toolStarted(`r${r}m0`, 'tool'));
      must(await session.finish('INTERRUPTED'));
    }
    const principal = { sub: who.ownerSub, role: 'superadmin' as const, expiresAtMs: Date.now() + 60_000 };
    const receipt = await deleteThread(t.app.deps, principal, threadId, { batchRows: 1 });
    expect(receipt).toMatchObject({ runs: 3, audits: 15, toolCalls: 12, messages: 0 });
    expect(await rowsLeft(t, threadId, runIds)).toEqual({});
  });

  it('a run of more audits than a batch may hold is removed in batches too: no statement removes more than 5,000 rows', async () => {
    // A long agent run: 8,000 audits and 4,000 ToolCalls in ONE run (bulk seeded as 2,000 runs, then merged).
    const owner = 'one-long-run';
    const [threadId] = await bulkSeed(sqlOverDriver(t.app.db.driver), { ownerSub: owner, threads: 1, auditsPerThread: 8_000, title: 'long run' });
    await t.app.db.sql.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      const [first] = await tx.query<{ id: string }>('SELECT id FROM run WHERE thread_id = $1::uuid ORDER BY created_order LIMIT 1', [threadId]);
      await tx.query(`UPDATE message SET run_id = $2::uuid, operation_id = operation_id || '-' || id WHERE thread_id = $1::uuid`, [threadId, first!.id]);
      await tx.query(`UPDATE tool_call SET run_id = $2::uuid, tool_call_id = tool_call_id || '-' || id WHERE thread_id = $1::uuid`, [threadId, first!.id]);
      await tx.query('DELETE FROM run WHERE thread_id = $1::uuid AND id <> $2::uuid', [threadId, first!.id]);
    });
    // Every statement's own count of what it removed (each batch returns it).
    const removedPerStatement: number[] = [];
    const watched = {
      ...t.app.deps,
      db: {
        ...t.app.deps.db,
        query: async <Row>(text: string, params?: unknown[]) => {
          const rows = await t.app.deps.db.query<Row>(text, params);
          const [row] = rows as Record<string, unknown>[];
          if (/^\s*WITH/.test(text) && /DELETE/.test(text) && row && 'audits' in row) {
            removedPerStatement.push(['runs', 'audits', 'toolCalls', 'messages'].reduce((sum, kind) => sum + Number(row[kind]), 0));
          }
          return rows;
        },
      },
    };
    const { deleteThread } = await import('../../src/domain/deletion.js');
    const receipt = await deleteThread(watched, { sub: owner, role: 'user', expiresAtMs: Date.now() + 60_000 }, threadId!);
    expect(receipt).toMatchObject({ runs: 1, audits: 8_000, toolCalls: 4_000, messages: 0 });
    expect(removedPerStatement.reduce((sum, n) => sum + n, 0)).toBe(1 + 8_000 + 4_000);
    // docs/deletion.md: "A batch is sized to take about 20 ms (from 20 to 5,000 rows)": on PGlite
    // every other write waits for the statement in progress, however many audits its run has.
    expect(Math.max(...removedPerStatement)).toBeLessThanOrEqual(5_000);
    expect(await rowsLeft(t, threadId!, [])).toEqual({});
  }, 180_000); // seeding and removing 12,000 rows took 29–34 s on PGlite beside other test files: only a hang fails

  it('a deletion a crash cut short: the receipt of its finish counts what the whole deletion removed', async () => {
    const { finishAbandonedDeletions, markDeleted, removeMarkedThread } = await import('../../src/domain/deletion.js');
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runIds: string[] = [];
    for (let r = 0; r < 3; r++) {
      const runId = await createRun(t, who.owner, threadId, runIds.at(-1));
      runIds.push(runId);
      const session = await claim(t, who.worker, runId);
      await session.declare('m0', [{ id: `r${r}c0`, name: 'tool' }, { id: `r${r}c1`, name: 'tool' }]);
      must(await session.finish('INTERRUPTED'));
    }
    expect(await markDeleted(t.app.deps, threadId, () => true)).toBe(true);
    // The instance dies after its first batches (no tool audits, then one ToolCall): every later statement fails.
    let statements = 0;
    const crash = new Error('the process died');
    const dying = {
      ...t.app.deps,
      db: {
        ...t.app.deps.db,
        query: <Row>(text: string, params?: unknown[]) =>
          ++statements > 2 ? Promise.reject(crash) : t.app.deps.db.query<Row>(text, params),
      },
    };
    await expect(removeMarkedThread(dying, threadId, { batchRows: 1 })).rejects.toBe(crash);
    expect((await rowsLeft(t, threadId, runIds))['tool_call.thread_id']).toBe(5);

    // Ten minutes later, another instance's sweeper finishes it.
    await t.app.db.sql.query(`UPDATE thread SET deleted_at = now() - interval '11 minutes' WHERE id = $1::uuid`, [threadId]);
    const receipts = await finishAbandonedDeletions(t.app.deps, { batchRows: 1 });
    expect(receipts.find((receipt) => receipt.threadId === threadId)).toMatchObject({ runs: 3, audits: 3, toolCalls: 6, messages: 0 });
    expect(await rowsLeft(t, threadId, runIds)).toEqual({});
  });

  it("an owner's write racing the deletion is counted by the receipt or NOT_FOUND: an OK is never a row the receipt misses", async () => {
    // Every trial is checked, not only until each outcome occurred: the write that got past the
    // thread's lookup before the mark and committed after it was one trial in ten or so (PostgreSQL).
    const seen = new Set<string>();
    for (let trial = 0; trial < 40; trial++) {
      const who = await actors(t);
      const threadId = await createThread(t, who.owner);
      const [deleted, [message, run]] = await sendRacing(
        trial,
        () => t.gql(DELETE_THREAD, { id: threadId }, who.owner),
        () =>
          Promise.all([
            t.gql(`mutation($input: AppendMessageInput!) { result: appendMessage(input: $input) { id } }`, {
              input: { threadId, role: 'USER', content: { text: 'racing' } },
            }, who.owner),
            t.gql(`mutation($input: CreateRunInput!) { result: createRun(input: $input) { id } }`, { input: { threadId } }, who.owner),
          ]),
      );
      expect(deleted.errors).toBeUndefined();
      const outcomes = [message, run].map((write) => (write.errors ? String(errorCode(write)) : 'written'));
      outcomes.forEach((outcome) => seen.add(outcome));
      expect(outcomes.filter((outcome) => outcome !== 'written' && outcome !== 'NOT_FOUND'), `trial ${trial}`).toEqual([]);
      const { messages, runs } = deleted.data.deleteThread;
      expect({ trial, messages, runs }).toEqual({ trial, messages: outcomes[0] === 'written' ? 1 : 0, runs: outcomes[1] === 'written' ? 1 : 0 });
    }
    expect([...seen].sort()).toEqual(['NOT_FOUND', 'written']);
  });

  it('a worker write racing the deletion is either removed with the thread or NOT_FOUND, never anything else; both happened', async () => {
    const outcomes = await untilEachOutcome(['NOT_FOUND', 'written'], async (trial) => {
      const ctx = await runningRun(t);
      must(await ctx.session.modelStarted('m1'));
      const [deleted, write] = await sendRacing(
        trial,
        () => t.gql(DELETE_THREAD, { id: ctx.threadId }, ctx.owner),
        () => ctx.session.modelStarted('m2'),
      );
      expect(deleted.errors).toBeUndefined();
      const outcome = write.errors ? String(errorCode(write)) : 'written';
      // A write that got in first is counted by the receipt and removed with the rest.
      expect(deleted.data.deleteThread.audits).toBe(outcome === 'written' ? 2 : 1);
      expect(await rowsLeft(t, ctx.threadId, [ctx.runId])).toEqual({});
      return outcome;
    });
    expect(outcomes).toEqual(['NOT_FOUND', 'written']);
  });
});

