// docs/debug-ui.md's merge recipe, exactly as the guide gives it: its documents
// (examples/debug-ui/timeline.graphql) and its rule (examples/debug-ui/timeline.ts) applied to a
// live threadChanges stream while several runs write at once, then compared with a fresh read.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Timeline, type Entity } from '../../examples/debug-ui/timeline.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, claim, createRun, createThread, must, type WorkerSession } from '../support/lifecycle.js';
import { eventually, wsClient } from '../support/streams.js';

const DOCUMENTS = readFileSync(join(import.meta.dirname, '../../examples/debug-ui/timeline.graphql'), 'utf8');
/** One operation of the guide's file, with the fragments it needs. */
const operation = (name: string) => ({ query: DOCUMENTS, operationName: name });

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp();
  url = await t.app.start(0);
});
afterAll(() => t.close());

async function read(name: string, variables: Record<string, unknown>, token: string) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ ...operation(name), variables }),
  });
  const body = await response.json();
  expect(body.errors, JSON.stringify(body)).toBeUndefined();
  return body.data;
}

/** The guide's steps 1 and 2: the audits with their cursor, then the runs. */
async function snapshot(threadId: string, token: string) {
  const { threadAudits } = await read('Timeline', { threadId }, token);
  const { thread } = await read('Runs', { threadId }, token);
  return { threadAudits, runs: thread.runs as Entity[] };
}

const readRunIds = (threadId: string, token: string) => async () =>
  ((await read('Runs', { threadId }, token)).thread.runs as Entity[]).map((run) => run.id);

/** `view` cut to the fields `raw` selected, so a merged view compares with a read's answer. */
function shapedLike(view: unknown, raw: unknown): unknown {
  if (Array.isArray(raw)) return raw.map((item, i) => shapedLike((view as unknown[] | undefined)?.[i], item));
  if (raw && typeof raw === 'object' && view && typeof view === 'object' && '__typename' in raw) {
    return Object.fromEntries(Object.keys(raw).map((key) => [key, shapedLike((view as Record<string, unknown>)[key], (raw as Record<string, unknown>)[key])]));
  }
  return view;
}

const tools = (prefix: string) => [
  { id: `${prefix}-a`, name: 'search', args: { q: prefix } },
  { id: `${prefix}-b`, name: 'fetch', args: { url: prefix } },
];

/** A run whose two tools run in parallel: one finishes, one ends in a bare error; the run fails. */
async function failingRun(session: WorkerSession, prefix: string) {
  await session.declare(`${prefix}-m1`, tools(prefix));
  await Promise.all([session.toolStarted(`${prefix}-a`, 'search'), session.toolStarted(`${prefix}-b`, 'fetch')].map(async (p) => must(await p)));
  await Promise.all([
    session.toolFinished(`${prefix}-a`, { content: 'found', status: 'success' }),
    session.toolError(`${prefix}-b`, { message: 'timeout' }),
    session.renew(30),
  ]);
  must(await session.finish('FAILED', { error: { message: 'gave up' } }));
}

/** A run that completes: its model call and tool close before the run does. */
async function completingRun(session: WorkerSession, prefix: string) {
  await session.declare(`${prefix}-m1`, tools(prefix).slice(0, 1));
  must(await session.toolStarted(`${prefix}-a`, 'search'));
  must(await session.toolFinished(`${prefix}-a`, { content: 'ok', status: 'success', artifact: { n: 1 } }));
  await session.declare(`${prefix}-m2`, []);
  must(await session.finish('COMPLETED'));
}

describe(`docs/debug-ui.md: the merge recipe on a live stream (${backendName})`, () => {
  it('after concurrent writes, the merged timeline equals a fresh threadAudits read, field for field', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);

    // Something before the read: an interrupted run whose tool a resume will run again.
    const first = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    await first.declare('i-m1', tools('i'));
    must(await first.toolStarted('i-a', 'search'));
    must(await first.toolError('i-a', { name: 'GraphInterrupt' }));
    must(await first.finish('INTERRUPTED'));

    const { threadAudits, runs } = await snapshot(threadId, who.owner);
    const timeline = new Timeline(threadAudits, runs, readRunIds(threadId, who.owner));
    // Step 3, applied as the changes arrive, while the writes below go on.
    const client = wsClient(url, who.owner);
    let applied = 0;
    const following = (async () => {
      for await (const result of client.iterate({ ...operation('Live'), variables: { threadId, after: timeline.cursor } })) {
        expect(result.errors).toBeUndefined();
        await timeline.apply((result.data as any).threadChanges);
        applied++;
      }
    })();

    // Runs created one after another (their creation order is the order their changes arrive in),
    // then written at once: two workers and the owner's cancel race on one thread.
    const resumed = await createRun(t, who.owner, threadId, first.lease.runId);
    // The stream is live once it has delivered this run: the writes below are delivered as they commit.
    await eventually(() => applied, (n) => n >= 1, { what: 'the first change' });
    const failing = await createRun(t, who.owner, threadId);
    const completing = await createRun(t, who.owner, threadId);
    const cancelled = await createRun(t, who.owner, threadId);
    const [resumedSession, failingSession, completingSession, cancelledSession] = await Promise.all([
      claim(t, who.worker, resumed),
      claim(t, who.worker, failing),
      claim(t, who.worker, completing),
      claim(t, who.worker, cancelled),
    ]);
    const writes = Promise.all([
      (async () => {
        must(await resumedSession.toolStarted('i-a', 'search'));
        must(await resumedSession.toolFinished('i-a', { content: 'resumed', status: 'success' }));
        must(await resumedSession.finish('COMPLETED'));
      })(),
      failingRun(failingSession, 'f'),
      completingRun(completingSession, 'c'),
      (async () => {
        await cancelledSession.declare('x-m1', tools('x'));
        must(await cancelledSession.toolStarted('x-a', 'search'));
        must(await t.gql('mutation($r: ID!) { result: cancelRun(runId: $r) { id } }', { r: cancelled }, who.owner));
      })(),
    ]);
    await writes;
    const { thread } = (await t.gql('query($t: ID!) { thread(id: $t) { changeCursor } }', { t: threadId }, who.owner)).data!;
    await eventually(() => timeline.cursor, (cursor) => cursor === thread.changeCursor, { what: 'the stream to reach the thread cursor' });
    await client.dispose();
    await following;

    const fresh = await snapshot(threadId, who.owner);
    // Field for field, as the read answers (the findings of issue 31: a closed audit's run status,
    // a model call's tool calls keeping toolCallId and name after their tools' changes).
    expect(shapedLike(timeline.items(), fresh.threadAudits.items)).toEqual(fresh.threadAudits.items);
    expect(shapedLike(timeline.runs(), fresh.runs)).toEqual(fresh.runs);
    // And as a whole: the same store as a timeline built from the fresh read.
    const rebuilt = new Timeline(fresh.threadAudits, fresh.runs, readRunIds(threadId, who.owner));
    expect(timeline.items()).toEqual(rebuilt.items());
    expect(timeline.runs()).toEqual(rebuilt.runs());

    // What the page would show went through every kind of change.
    const items = timeline.items() as any[];
    expect(items.find((item) => item.operationId === 'f-m1').run.status).toBe('FAILED');
    expect(items.find((item) => item.operationId === 'c-a').run.status).toBe('COMPLETED');
    expect(items.find((item) => item.operationId === 'f-m1').toolCalls).toEqual([
      expect.objectContaining({ toolCallId: 'f-a', name: 'search', status: 'COMPLETED' }),
      expect.objectContaining({ toolCallId: 'f-b', name: 'fetch', status: 'FAILED' }),
    ]);
    expect(items.filter((item) => item.operationId === 'i-a').map((item) => item.status)).toEqual(['INTERRUPTED', 'COMPLETED']);
    expect(items.find((item) => item.operationId === 'x-a').status).toBe('CANCELLED');
  }, 60_000);
});
