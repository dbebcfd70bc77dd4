import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { backendName } from '../support/database.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeSse, THREAD_SNAPSHOT, type ThreadChange } from '../support/streams.js';
import { startListeningApp, type ListeningApp } from './support.js';

// A warehouse copying a thread it has never seen (docs/subscriptions.md, "Copying threads into a
// warehouse") had no cursor to start threadChanges from: without `after` a stream delivers only
// what commits later, so the first copy had to take another road (threadAudits paged back, runs
// paged on, each page under the answer's payload limit) and only then switch to the cursors.
// `Thread.startCursor` is the cursor before the thread's first change: after it, the catch-up
// delivers every run and audit once, in its latest state, then continues live.

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const CHANGES = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status } run { id status } }
}`;
const CURSORS = `query($threadId: ID!) { thread(id: $threadId) { startCursor changeCursor } }`;

async function committedView(threadId: string, token: string) {
  const { data } = await t.gql(THREAD_SNAPSHOT, { threadId }, token);
  const view = new Map<string, string>();
  for (const entity of [...data.thread.runs, ...data.threadAudits.items]) view.set(entity.id, entity.status);
  return { view, cursor: data.thread.changeCursor as string };
}

/** The changes a stream after `after` delivers up to `last` (a cursor it must reach), then closed. */
async function changesUpTo(threadId: string, token: string, after: string, last: string): Promise<ThreadChange[]> {
  const stream = await subscribeSse(t.app, CHANGES, { threadId, after }, token);
  onTestFinished(() => stream.close());
  const results = await stream.until((all) => all.some((result) => result.data?.threadChanges.cursor === last), `the cursor ${last}`);
  stream.close();
  return payloads(results, 'threadChanges') as ThreadChange[];
}

const viewOf = (changes: ThreadChange[]) => new Map(changes.map((change) => [(change.audit ?? change.run)!.id, (change.audit ?? change.run)!.status]));

describe(`Thread.startCursor (${backendName})`, () => {
  it('is the changeCursor of a thread that has no change yet', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const { data } = await t.gql(CURSORS, { threadId }, who.owner);
    expect(data.thread.startCursor).toBe(data.thread.changeCursor);
  });

  it('threadChanges after it copies the whole thread, each entity once in its latest state; a copy cut short resumes with no gap', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const first = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    await first.declare('m1', [{ id: 'c1', name: 'search' }, { id: 'c2', name: 'search' }]);
    must(await first.toolStarted('c1', 'search'));
    must(await first.toolFinished('c1', { content: 'one' }));
    must(await first.toolStarted('c2', 'search'));
    must(await first.finish('INTERRUPTED'));
    const resumed = await claim(t, who.worker, await createRun(t, who.owner, threadId, first.lease.runId));
    must(await resumed.toolStarted('c2', 'search'));
    must(await resumed.toolFinished('c2', { content: 'two' }));
    must(await resumed.finish('COMPLETED'));

    const { data } = await t.gql(CURSORS, { threadId }, who.owner);
    const final = await committedView(threadId, who.owner);
    expect(data.thread.changeCursor).toBe(final.cursor);

    const copy = await changesUpTo(threadId, who.owner, data.thread.startCursor, final.cursor);
    expect(viewOf(copy)).toEqual(final.view);
    expect(copy).toHaveLength(final.view.size); // folded: each entity once

    // Cut after two changes, then resumed after the last one applied.
    const cut = copy.slice(0, 2);
    const rest = await changesUpTo(threadId, who.owner, cut.at(-1)!.cursor, final.cursor);
    expect(rest.every((change) => counterOf(change.cursor) > counterOf(cut.at(-1)!.cursor))).toBe(true);
    expect(viewOf([...cut, ...rest])).toEqual(final.view);
  });
});
