import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { backendName, onPostgres, servicesRequired } from '../support/database.js';
import { runningRun, type WorkerSession } from '../support/lifecycle.js';
import { sseStream, subscribeSse, subscribeWs, waitFor, type Stream } from '../support/streams.js';
import { testRedisUrl } from '../subscriptions/support.js';
import { DELETE_THREAD, rowsLeft } from './support.js';

// SEMANTICS.md "Deletion and retention": a thread deleted while its worker writes and dashboards
// watch it, on two instances sharing PostgreSQL and Redis (one instance on PGlite): its streams end
// with THREAD_DELETED on both instances, its worker's next write is NOT_FOUND, nothing of it is
// left in any table, and another thread's writes and streams carry on untouched.

const twoInstances = onPostgres && Boolean(testRedisUrl);
if (servicesRequired && !twoInstances) throw new Error('REQUIRE_SERVICES=1: TEST_DATABASE_URL and TEST_REDIS_URL must both be set');

let a: TestApp;
let b: TestApp;
let urlA: string;
let urlB: string;

beforeAll(async () => {
  a = await startTestApp(twoInstances ? { REDIS_URL: testRedisUrl! } : {});
  urlA = await a.app.start(0);
  if (twoInstances) {
    b = await startTestApp({ REDIS_URL: testRedisUrl! }, { databaseUrl: a.config.databaseUrl });
    urlB = await b.app.start(0);
  } else {
    [b, urlB] = [a, urlA];
  }
});
afterAll(async () => {
  if (b !== a) await b?.close();
  await a?.close();
});

/** A worker writing model calls and tools to its run one after another until told to stop or refused. */
function keepWriting(session: WorkerSession) {
  let stop = false;
  let written = 0;
  const done = (async (): Promise<GraphQLResponse | null> => {
    for (let i = 0; !stop; i++) {
      for (const write of [
        () => session.modelStarted(`m${i}`),
        () => session.modelFinished(`m${i}`, [{ id: `c${i}`, name: 'search' }]),
        () => session.toolStarted(`c${i}`, 'search'),
        () => session.toolFinished(`c${i}`, { ok: i }),
      ]) {
        const response = await write();
        if (response.errors) return response;
        written++;
        // In process on PGlite a write never waits for I/O: let deliveries and sockets have their turn.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return null;
  })();
  return {
    done,
    written: () => written,
    stop: () => {
      stop = true;
      return done;
    },
  };
}

const THREAD_CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor } }`;
const AUDITS = `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id status } }`;
const RUNS = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;
const TOOLS = `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id status } }`;

/** The index of the runChanged stream in what `watch` returns. */
const RUN_STREAM = 2;

/** graphql-ws and SSE streams of one thread on both instances, live once both instances count them. */
async function watch(threadId: string, token: string): Promise<Stream[]> {
  const streams = [
    subscribeWs(urlA, THREAD_CHANGES, { threadId }, token),
    await subscribeSse(urlA, AUDITS, { threadId }, token),
    subscribeWs(urlB, RUNS, { threadId }, token),
    await subscribeSse(urlB, TOOLS, { threadId }, token),
  ];
  const live = () =>
    a.app.pubsub.subscriberCount('changes', threadId) + a.app.pubsub.subscriberCount('audit', threadId) +
    (b === a ? 0 : b.app.pubsub.subscriberCount('run', threadId) + b.app.pubsub.subscriberCount('audit', threadId));
  await waitFor(() => live() === (b === a ? 3 : 4) && (b !== a || a.app.pubsub.subscriberCount('run', threadId) === 1), 'the streams to be live');
  return streams;
}

describe(`deleting a thread while it is written and watched (${backendName}${twoInstances ? ', two instances with Redis' : ', one instance'})`, () => {
  it('ends its streams with THREAD_DELETED everywhere, refuses its worker, leaves nothing, and touches no other thread', async () => {
    const doomed = await runningRun(b);
    const kept = await runningRun(b);
    const doomedStreams = await watch(doomed.threadId, doomed.owner);
    const keptStreams = await watch(kept.threadId, kept.owner);
    const doomedWriter = keepWriting(doomed.session);
    const keptWriter = keepWriting(kept.session);
    // Both threads are being written and delivered before the deletion.
    // (runChanged has nothing to deliver while the runs keep RUNNING: it is checked for its end only.)
    for (const streams of [doomedStreams, keptStreams]) for (const [i, stream] of streams.entries()) if (i !== RUN_STREAM) await stream.take(2);

    const deleted = await a.gql(DELETE_THREAD, { id: doomed.threadId }, doomed.owner);
    expect(deleted.errors).toBeUndefined();
    expect(deleted.data.deleteThread.runs).toBe(1);
    expect(deleted.data.deleteThread.audits).toBeGreaterThan(0);

    // The worker still holding the lease: its next write (the one in flight, or the one after) is NOT_FOUND.
    const refused = await doomedWriter.done;
    expect(errorCode(refused!)).toBe('NOT_FOUND');
    expect(errorCode(await doomed.session.modelStarted('after'))).toBe('NOT_FOUND');

    for (const stream of doomedStreams) {
      const ending = await stream.ended();
      expect({ label: stream.label, ending }).toEqual({ label: stream.label, ending: { kind: 'complete' } });
      expect(stream.results.at(-1)!.errors?.[0]?.extensions).toEqual({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'THREAD_DELETED' });
      // Everything before the end was an ordinary delivery.
      expect(stream.results.slice(0, -1).every((result) => !result.errors)).toBe(true);
    }
    expect(await rowsLeft(a, doomed.threadId, [doomed.runId])).toEqual({});

    // A resume of its threadChanges with the last cursor delivered is NOT_FOUND, as any new
    // subscription to it: over SSE with Last-Event-ID, and over graphql-ws with `after`.
    const lastCursor = doomedStreams[0]!.results.at(-2)!.data.threadChanges.cursor as string;
    for (const url of [urlA, urlB]) {
      const resumed = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${doomed.owner}`, 'last-event-id': lastCursor },
        body: JSON.stringify({ query: THREAD_CHANGES, variables: { threadId: doomed.threadId } }),
      });
      const sse = sseStream(resumed);
      await sse.ended();
      expect(sse.results.map(errorCode)).toEqual(['NOT_FOUND']);
      const ws = subscribeWs(url, `subscription($threadId: ID!, $after: String) { threadChanges(threadId: $threadId, after: $after) { cursor } }`, { threadId: doomed.threadId, after: lastCursor }, doomed.owner);
      await ws.ended();
      expect(ws.results.map(errorCode)).toEqual(['NOT_FOUND']);
      await ws.close();
    }

    // A new subscription to it is NOT_FOUND, on either instance and either transport.
    for (const url of [urlA, urlB]) {
      const sse = await subscribeSse(url, RUNS, { threadId: doomed.threadId }, doomed.owner);
      await sse.ended();
      expect(errorCode(sse.results[0]!)).toBe('NOT_FOUND');
      const ws = subscribeWs(url, RUNS, { threadId: doomed.threadId }, doomed.owner);
      await ws.ended();
      expect(errorCode(ws.results[0]!)).toBe('NOT_FOUND');
      await ws.close();
    }

    // The other thread: still written after the deletion, still delivered, no stream ended.
    const writtenAtDeletion = keptWriter.written();
    const deliveredAtDeletion = keptStreams.map((stream) => stream.results.length);
    await waitFor(() => keptWriter.written() >= writtenAtDeletion + 8, 'writes to the other thread after the deletion');
    expect(await keptWriter.stop()).toBeNull();
    for (const [i, stream] of keptStreams.entries()) {
      if (i !== RUN_STREAM) await stream.until((results) => results.length > deliveredAtDeletion[i]!, 'deliveries after the deletion');
      expect(stream.ending).toBeNull();
      expect(stream.results.every((result) => !result.errors)).toBe(true);
    }
    for (const stream of [...doomedStreams, ...keptStreams]) await stream.close();
  });
});
