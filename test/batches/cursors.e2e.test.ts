import { afterAll, beforeAll, expect, it } from 'vitest';
import { EVENTS_PER_CALL } from '../../src/domain/lifecycle-events.js';
import { actors, claim, createRun, createThread, runningRun } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeLive } from '../support/streams.js';
import { startListeningApp, type ListeningApp } from '../subscriptions/support.js';
import { RunEvents, sendAlone, sendBatch, type Event } from './support.js';

// docs/subscriptions.md: a thread's cursors are contiguous integers in commit order, a refused
// event takes none, and threadChanges delivers each once. A call of the batch function updates a
// thread's row at its first change and at its end only (migration
// 20261212000000_one_cursor_update_per_call): the guarantees hold across its calls, refusals,
// threads, and batches into one thread at once.

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const THREAD_CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor } }`;
const cursorOf = async (token: string, threadId: string) =>
  counterOf((await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, token)).data.thread.changeCursor);

it("updates a thread's row twice in a call of the batch function (its first change, the call's end), not once per change", async () => {
  // Each version of the row stays while any older snapshot is open (a pg_dump, a long report),
  // and every later change of the thread walked them all (bench/cursor-chains.ts).
  const { workerSub, session } = await runningRun(t);
  const threadUpdatesOf = (renewals: number) =>
    t.app.db.sql.transaction(async (tx) => {
      const threadUpdates = async () =>
        Number((await tx.query<{ updates: bigint }>("SELECT n_tup_upd AS updates FROM pg_stat_xact_user_tables WHERE relname = 'thread'"))[0]!.updates);
      const before = await threadUpdates(); // PGlite's include its earlier transactions' (not yet flushed)
      const events = Array.from({ length: renewals }, () => ({ kind: 'renewLease', ...session.lease, leaseSeconds: 30 }));
      const results = await tx.query<{ result: { ok?: unknown } }>('SELECT audit_record_events($1, $2::jsonb) AS result', [workerSub, JSON.stringify(events)]);
      expect(results.filter(({ result }) => result.ok)).toHaveLength(renewals);
      return (await threadUpdates()) - before;
    });
  expect(await threadUpdatesOf(EVENTS_PER_CALL)).toBe(2);
  expect(await threadUpdatesOf(1)).toBe(1); // a single event's call, as before
});

it("gives back the cursor values a refused event's sub-block took, in a call's count as when sent alone", async () => {
  // No rule refuses after taking a value today (each checks before it writes); a sub-block rolled
  // back takes the call's count back with it all the same. Rolled back whole: nothing is written.
  const { threadId } = await runningRun(t);
  const taken = await t.app.db.sql
    .transaction(async (tx) => {
      const next = async () => BigInt((await tx.query<{ cursor: string }>('SELECT cursor::text FROM audit_next_change($1::uuid)', [threadId]))[0]!.cursor);
      const taken: bigint[][] = [];
      for (const count of ['', '{}']) {
        await tx.query("SELECT set_config('audit.call_cursors', $1, true)", [count]); // '{}': inside a call
        await tx.query('SAVEPOINT refused');
        const refused = [await next(), await next()];
        await tx.query('ROLLBACK TO SAVEPOINT refused');
        taken.push(refused, [await next(), await next()]);
        await tx.query('ROLLBACK TO SAVEPOINT refused');
      }
      throw Object.assign(new Error('roll back'), { taken });
    })
    .catch((error: { taken?: bigint[][] }) => {
      if (!error.taken) throw error;
      return error.taken;
    });
  const [first] = taken[0]!;
  expect(taken).toEqual(Array(4).fill([first, first! + 1n]));
});

it('keeps cursors contiguous, in commit order and delivered once, across calls, refusals, threads and concurrent batches', async () => {
  const who = await actors(t);
  const threads = [await createThread(t, who.owner, 'A'), await createThread(t, who.owner, 'B')];
  // Three batches at once, each a run of its own in both threads, each longer than two calls.
  const workers = await Promise.all(
    [0, 1, 2].map(async () => Promise.all(threads.map(async (threadId) => new RunEvents((await claim(t, who.worker, await createRun(t, who.owner, threadId))).lease)))),
  );
  const start = await Promise.all(threads.map((threadId) => cursorOf(who.owner, threadId)));
  const streams = await Promise.all(threads.map((threadId) => subscribeLive(t.app, t.url, 'changes', THREAD_CHANGES, { threadId }, who.owner)));

  const batches = workers.map(([a, b]) => {
    const batch: { thread: number; event: Event }[] = [];
    for (let k = 0; k < 22; k++) {
      batch.push(
        { thread: 0, event: a!.modelStarted(`a${k}`) },
        { thread: 1, event: b!.modelStarted(`b${k}`) },
        { thread: 0, event: a!.toolFinished(`missing-${k}`) }, // refused: no such tool call
        { thread: 0, event: a!.modelFinished(`a${k}`) },
        { thread: 1, event: b!.modelFinished(`b${k}`) },
        { thread: 1, event: b!.renew() },
      );
    }
    return batch;
  });
  expect(batches[0]!.length).toBeGreaterThan(2 * EVENTS_PER_CALL);
  const responses = await Promise.all(batches.map((batch) => sendBatch(t, who.worker, batch.map(({ event }) => event))));

  // Every event changes one entity of its thread, once, or is refused and changes nothing.
  const applied = [0, 0];
  responses.forEach((response, w) => {
    const results = response.data!.result;
    expect(results.filter((result) => result.error).map((result) => result.error!.code)).toEqual(Array(22).fill('INVALID_TRANSITION'));
    results.forEach((result, index) => result.error || applied[batches[w]![index]!.thread]!++);
  });
  expect(applied).toEqual([3 * 22 * 2, 3 * 22 * 3]);

  // One more change of each thread, alone (a single event's own call), delivered after all before it.
  for (const runs of workers[0]!) expect((await sendAlone(t, who.worker, runs.renew())).error).toBeNull();
  for (const [thread, threadId] of threads.entries()) {
    const changes = applied[thread]! + 1;
    expect(await cursorOf(who.owner, threadId)).toBe(start[thread]! + BigInt(changes));
    for (const stream of streams[thread]!) {
      await stream.until((results) => payloads(results, 'threadChanges').length >= changes, `every change of thread ${thread}`);
      const cursors = payloads(stream.results, 'threadChanges').map((change: { cursor: string }) => counterOf(change.cursor));
      expect(cursors).toEqual(Array.from({ length: changes }, (_, i) => start[thread]! + BigInt(i + 1)));
    }
  }
});
