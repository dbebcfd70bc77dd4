import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { backendName } from '../support/database.js';
import type { GraphQLResponse } from '../support/app.js';
import { actors, claim, createRun, createThread, must, runningRun, type WorkerSession } from '../support/lifecycle.js';
import { counterOf, eventually, payloads, sseEvents, subscribeLive, subscribeSse, subscribeWs, THREAD_SNAPSHOT, waitFor, type Stream, type ThreadChange } from '../support/streams.js';
import { startListeningApp, testRedisUrl, type ListeningApp } from './support.js';

let t: ListeningApp;
beforeAll(async () => {
  t = await startListeningApp();
});
afterAll(() => t.close());

const CHANGES = `subscription($threadId: ID!, $after: String, $runId: ID) {
  threadChanges(threadId: $threadId, after: $after, runId: $runId) {
    cursor committedAt
    audit { id status ... on ToolAudit { toolCallId } }
    run { id status }
  }
}`;
const TOOLS = `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { toolCallId status } }`;

/** What a dashboard holds: each entity's latest state, applied by id. */
function applied(changes: ThreadChange[]): Map<string, string> {
  const view = new Map<string, string>();
  for (const change of changes) {
    const entity = change.audit ?? change.run!;
    view.set(entity.id, entity.status);
  }
  return view;
}

async function committedView(threadId: string, token: string) {
  const { data } = await t.gql(THREAD_SNAPSHOT, { threadId }, token);
  const view = new Map<string, string>();
  for (const entity of [...data.thread.runs, ...data.threadAudits.items]) view.set(entity.id, entity.status);
  return { view, cursor: data.threadAudits.cursor as string, threadCursor: data.thread.changeCursor as string };
}

const cursorsOf = (changes: ThreadChange[]) => changes.map((change) => change.cursor);

function expectIncreasing(changes: ThreadChange[]) {
  const counters = cursorsOf(changes).map(counterOf);
  for (let i = 1; i < counters.length; i++) expect(counters[i]! > counters[i - 1]!).toBe(true);
}

async function toolRoundTrips(session: WorkerSession, prefix: string, n: number) {
  for (let i = 0; i < n; i++) {
    await session.declare(`${prefix}-m${i}`, [{ id: `${prefix}-c${i}`, name: 'search' }]);
    must(await session.toolStarted(`${prefix}-c${i}`, 'search'));
    must(await session.toolFinished(`${prefix}-c${i}`, { content: `result ${i}` }));
  }
}

describe(`threadChanges (${backendName}, ${testRedisUrl ? 'Redis' : 'in-process'})`, () => {
  it('continues a threadAudits read with after: cursor, with no gap and no duplicate', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await toolRoundTrips(session, 'before', 2);
    const snapshot = await committedView(threadId, owner);
    expect(snapshot.cursor).toBe(snapshot.threadCursor);

    const stream = subscribeWs(t.url, CHANGES, { threadId, after: snapshot.cursor }, owner);
    onTestFinished(() => stream.close());
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
    await toolRoundTrips(session, 'after', 2);
    must(await session.finish('COMPLETED'));

    const final = await committedView(threadId, owner);
    const results = await stream.until(
      (all) => all.length > 0 && all[all.length - 1]!.data?.threadChanges.cursor === final.cursor,
      'the latest cursor',
    );
    const changes = payloads(results, 'threadChanges') as ThreadChange[];
    expectIncreasing(changes);
    expect(new Set(cursorsOf(changes)).size).toBe(changes.length);
    // Nothing from before the read is sent again.
    expect(changes.every((change) => counterOf(change.cursor) > counterOf(snapshot.cursor))).toBe(true);
    const view = new Map([...snapshot.view, ...applied(changes)]);
    expect(view).toEqual(final.view);
  });

  it('cursors increase as strings, as the contract says ("a greater cursor"): a client may compare them', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const before = await committedView(threadId, owner);
    const stream = subscribeWs(t.url, CHANGES, { threadId }, owner);
    onTestFinished(() => stream.close());
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
    await toolRoundTrips(session, 'order', 30); // past 9, 99 and 100 changes: where a number's digits change in count
    const final = await committedView(threadId, owner);
    const results = await stream.until((all) => all.at(-1)?.data?.threadChanges.cursor === final.cursor, 'the latest cursor');
    const cursors = [before.cursor, ...cursorsOf(payloads(results, 'threadChanges') as ThreadChange[])];
    expect(cursors.length).toBeGreaterThan(100);
    const outOfOrder = cursors.flatMap((cursor, i) => (i > 0 && !(cursor > cursors[i - 1]!) ? [[cursors[i - 1], cursor]] : []));
    expect(outOfOrder).toEqual([]);
  });

  it('takes a cursor as the version before handed it out (base64url of thread, counter and database): during a rolling upgrade, a subscriber of an older instance resumes here', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const before = await committedView(threadId, owner);
    const older = Buffer.from(`${threadId}:${counterOf(before.cursor)}:${t.app.deps.databaseId}`).toString('base64url');
    await toolRoundTrips(session, 'upgrade', 1);
    const final = await committedView(threadId, owner);
    const stream = subscribeWs(t.url, CHANGES, { threadId, after: older }, owner);
    onTestFinished(() => stream.close());
    const results = await stream.until((all) => all.at(-1)?.data?.threadChanges.cursor === final.cursor || Boolean(all.at(-1)?.errors), 'the latest cursor');
    const changes = payloads(results, 'threadChanges') as ThreadChange[];
    expect(changes.every((change) => counterOf(change.cursor) > counterOf(before.cursor))).toBe(true);
    expect(new Map([...before.view, ...applied(changes)])).toEqual(final.view);
  });

  it('a tool started and finished back to back reaches every subscriber RUNNING, then COMPLETED', async () => {
    const { session, owner, threadId } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'fast' }]);
    const tools = [0, 1, 2].map(() => subscribeWs(t.url, TOOLS, { threadId }, owner));
    const changes = [0, 1].map(() => subscribeWs(t.url, CHANGES, { threadId }, owner));
    const sse = [await subscribeSse(t.app, TOOLS, { threadId }, owner), await subscribeSse(t.app, CHANGES, { threadId }, owner)];
    for (const stream of [...tools, ...changes, ...sse]) onTestFinished(() => stream.close());
    await waitFor(
      () => t.app.pubsub.subscriberCount('audit', threadId) === 4 && t.app.pubsub.subscriberCount('changes', threadId) === 3,
      'the subscriptions to start',
    );
    // Back to back: the finish commits right after the start, before subscribers are served.
    must(await session.toolStarted('c1', 'fast'));
    must(await session.toolFinished('c1', { content: 'done' }));

    for (const stream of [...tools, sse[0]!]) {
      expect(payloads(await stream.take(2), 'toolStatusChanged').map((tool) => tool.status)).toEqual(['RUNNING', 'COMPLETED']);
    }
    for (const stream of [...changes, sse[1]!]) {
      const delivered = payloads(await stream.take(2), 'threadChanges') as ThreadChange[];
      expect(delivered.map((change) => change.audit?.status)).toEqual(['RUNNING', 'COMPLETED']);
    }
  });

  it('refuses a malformed cursor and one of another thread with BAD_USER_INPUT', async () => {
    const { owner, threadId } = await runningRun(t);
    const other = await createThread(t, owner);
    const foreign = (await committedView(other, owner)).cursor;
    for (const after of ['not a cursor', 'MTIz', foreign]) {
      const stream = subscribeWs(t.url, CHANGES, { threadId, after }, owner);
      onTestFinished(() => stream.close());
      const ending = await stream.ended();
      const errors = ending.kind === 'error' ? (ending.error as GraphQLResponse['errors']) : stream.results[0]?.errors;
      expect(errors?.[0]?.extensions?.code, JSON.stringify(ending)).toBe('BAD_USER_INPUT');
    }
    const response = await subscribeSseRaw(threadId, owner, { after: 'not a cursor' });
    const text = await response.text();
    expect(text).toContain('BAD_USER_INPUT');
  });

  it('refuses after: "" as a malformed cursor, over graphql-ws and SSE: an empty cursor never passes for "live from now"', async () => {
    const { owner, threadId } = await runningRun(t);
    const ws = subscribeWs(t.url, CHANGES, { threadId, after: '' }, owner);
    onTestFinished(() => ws.close());
    const sse = await subscribeSse(t.app, CHANGES, { threadId, after: '' }, owner);
    onTestFinished(() => sse.close());
    for (const stream of [ws, sse]) {
      expect(await stream.ended(), stream.label).toEqual({ kind: 'complete' });
      expect(stream.results).toHaveLength(1);
      expect(stream.results[0]!.data ?? null).toBeNull();
      expect(stream.results[0]!.errors).toEqual([expect.objectContaining({ message: 'Cursor "" is malformed', extensions: { code: 'BAD_USER_INPUT' } })]);
    }
    expect(t.app.pubsub.subscriberCount('changes', threadId)).toBe(0);
  });

  it('takes an empty Last-Event-ID as none, as the SSE standard does (a browser never sends one): `after` applies', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const { cursor } = await committedView(threadId, owner);
    // Committed after the cursor, before the stream starts: only a resume from `after` delivers it.
    await toolRoundTrips(session, 'missed', 1);
    const final = await committedView(threadId, owner);
    const response = await subscribeSseRaw(threadId, owner, { after: cursor }, '');
    const events = await readSseEvents(response, (all) => all.at(-1)?.id === final.cursor);
    const changes = events.map((event) => event.data.threadChanges as ThreadChange);
    expect(changes.every((change) => counterOf(change.cursor) > counterOf(cursor))).toBe(true);
    expect(changes.map((change) => change.audit?.status ?? change.run?.status)).toContain('COMPLETED');
    // Without `after`, it is a stream from now on, as a first EventSource connection.
    const live = await subscribeSseRaw(threadId, owner, {}, '');
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the live stream to start');
    expect(live.status).toBe(200);
  });

  it('refuses a runId that is no run of the thread with BAD_USER_INPUT, as threadAudits does; takes a run id in any case', async () => {
    const { owner, threadId, runId, session } = await runningRun(t);
    const other = await runningRun(t);
    const TOOLS_OF_RUN = `subscription($threadId: ID!, $runId: ID) { toolStatusChanged(threadId: $threadId, runId: $runId) { toolCallId status } }`;
    for (const document of [CHANGES, TOOLS_OF_RUN]) {
      for (const notOfThread of ['nope', other.runId, '00000000-0000-4000-8000-000000000000']) {
        const stream = subscribeWs(t.url, document, { threadId, runId: notOfThread }, owner);
        onTestFinished(() => stream.close());
        const ending = await stream.ended();
        const errors = ending.kind === 'error' ? (ending.error as GraphQLResponse['errors']) : stream.results[0]?.errors;
        expect(errors?.[0]?.extensions?.code, `${notOfThread}: ${JSON.stringify(ending)}`).toBe('BAD_USER_INPUT');
        expect(errors?.[0]?.message).toMatch(/runId must be the id of a run of this thread/);
      }
    }
    const sse = await subscribeSse(t.app, TOOLS_OF_RUN, { threadId, runId: 'nope' }, owner);
    onTestFinished(() => sse.close());
    await sse.until((results) => results.length > 0, 'an answer');
    expect(sse.results[0]?.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    // The run's own id, written in capitals, is the run.
    await session.declare('m-upper', [{ id: 'call-upper', name: 'search' }]);
    const upper = await subscribeLive(t.app, t.url, 'audit', TOOLS_OF_RUN, { threadId, runId: runId.toUpperCase() }, owner);
    must(await session.toolStarted('call-upper', 'search'));
    for (const stream of upper) expect(payloads(await stream.take(1), 'toolStatusChanged')).toEqual([{ toolCallId: 'call-upper', status: 'RUNNING' }]);
  });

  it('refuses a cursor of this thread beyond its counter with BAD_USER_INPUT: nothing could ever follow it', async () => {
    const { owner, threadId } = await runningRun(t);
    const { threadCursor } = await committedView(threadId, owner);
    const beyond = Buffer.from(`${threadId}:${counterOf(threadCursor) + 1n}`).toString('base64url');
    const stream = subscribeWs(t.url, CHANGES, { threadId, after: beyond }, owner);
    onTestFinished(() => stream.close());
    const ending = await stream.ended();
    const errors = ending.kind === 'error' ? (ending.error as GraphQLResponse['errors']) : stream.results[0]?.errors;
    expect(errors?.[0]?.extensions?.code, JSON.stringify(ending)).toBe('BAD_USER_INPUT');
    // As an EventSource would resume with it.
    const response = await subscribeSseRaw(threadId, owner, {}, beyond);
    expect(await response.text()).toContain('BAD_USER_INPUT');
    // The thread's own counter is still a cursor to resume after.
    const current = subscribeWs(t.url, CHANGES, { threadId, after: threadCursor }, owner);
    onTestFinished(() => current.close());
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription at the current cursor to start');
  });

  it('a subscriber that reads nothing for a while is caught up, never interrupted', async () => {
    const { session, owner, threadId } = await runningRun(t);
    must(await session.renew(600)); // 280 writes outlast the default lease on a busy machine
    // yoga's SSE stream pulls a result only when its reader asks for one: this one asks for none yet.
    const response = await subscribeSseRaw(threadId, owner, {});
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
    // Far more changes than a subscriber may hold queued (256).
    await toolRoundTrips(session, 'burst', 70);
    must(await session.finish('COMPLETED'));
    const final = await committedView(threadId, owner);
    const events = await readSseEvents(response, (all) => all.at(-1)?.id === final.cursor);
    const changes = events.map((event) => event.data.threadChanges as ThreadChange);
    expectIncreasing(changes);
    expect(applied(changes)).toEqual(final.view);
  });

  it('over SSE each event carries id: <cursor>, and Last-Event-ID resumes after it', async () => {
    const { session, owner, threadId } = await runningRun(t);
    const first = await subscribeSseRaw(threadId, owner, {});
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');
    await toolRoundTrips(session, 'one', 1);
    const seen = await readSseEvents(first, (all) => all.some((event) => event.data.threadChanges.audit?.status === 'COMPLETED'));
    for (const event of seen) expect(event.id).toBe(event.data.threadChanges.cursor);
    const lastEventId = seen.at(-1)!.id!;
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 0, 'the dropped stream to end');

    // Written while no one listens.
    await toolRoundTrips(session, 'two', 1);
    must(await session.finish('COMPLETED'));
    const final = await committedView(threadId, owner);
    // As a browser's EventSource reconnects: the same request, plus Last-Event-ID.
    const resumed = await subscribeSseRaw(threadId, owner, {}, lastEventId);
    const events = await readSseEvents(resumed, (all) => all.at(-1)?.id === final.cursor);
    const changes = events.map((event) => event.data.threadChanges as ThreadChange);
    expect(changes.every((change) => counterOf(change.cursor) > counterOf(lastEventId))).toBe(true);
    expectIncreasing(changes);
    expect(new Map([...applied(seen.map((event) => event.data.threadChanges)), ...applied(changes)])).toEqual(final.view);
  });

  it('runId keeps only that run; concurrent writers and resuming subscribers all end with the committed state', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const sessions = await Promise.all(
      [0, 1, 2].map(async () => claim(t, who.worker, await createRun(t, who.owner, threadId))),
    );
    const onlyFirst = subscribeWs(t.url, CHANGES, { threadId, runId: sessions[0]!.lease.runId }, who.owner);
    onTestFinished(() => onlyFirst.close());
    await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the subscription to start');

    // Subscribers that disconnect and resume with their last cursor while three runs write at once.
    const start = (await committedView(threadId, who.owner)).cursor;
    const subscribers = [0, 1, 2].map(() => ({ changes: [] as ThreadChange[], stream: null as Stream | null }));
    let writing = true;
    const resumers = subscribers.map(async (subscriber, index) => {
      for (let round = 0; writing; round++) {
        const after = subscriber.changes.at(-1)?.cursor ?? start;
        const stream = subscribeWs(t.url, CHANGES, { threadId, after }, who.owner);
        subscriber.stream = stream;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200 * (index + 1)));
        await stream.close();
        subscriber.changes.push(...(payloads(stream.results, 'threadChanges') as ThreadChange[]));
      }
    });
    await Promise.all(sessions.map((session, index) => toolRoundTrips(session, `w${index}`, 4)));
    await Promise.all(sessions.map(async (session) => must(await session.finish('COMPLETED'))));
    writing = false;
    await Promise.all(resumers);

    const final = await committedView(threadId, who.owner);
    for (const subscriber of subscribers) {
      // The last leg: resume once more and read up to the final cursor.
      const after = subscriber.changes.at(-1)?.cursor ?? start;
      const stream = subscribeWs(t.url, CHANGES, { threadId, after }, who.owner);
      onTestFinished(() => stream.close());
      if (after !== final.cursor) {
        await stream.until((all) => all.at(-1)?.data?.threadChanges.cursor === final.cursor, 'the final cursor');
      }
      subscriber.changes.push(...(payloads(stream.results, 'threadChanges') as ThreadChange[]));
      expectIncreasing(subscriber.changes);
      expect(new Set(cursorsOf(subscriber.changes)).size).toBe(subscriber.changes.length);
      expect(applied(subscriber.changes)).toEqual(final.view);
    }
    const firstRun = sessions[0]!.lease.runId;
    await onlyFirst.until((all) => all.some((result) => result.data?.threadChanges.run?.status === 'COMPLETED'), `the first run to end ${JSON.stringify(onlyFirst.results.slice(0, 3))} ${JSON.stringify(onlyFirst.ending)}`);
    for (const change of payloads(onlyFirst.results, 'threadChanges') as (ThreadChange & { audit: { runId?: string } })[]) {
      expect(change.run ? change.run.id : firstRun).toBe(firstRun);
    }
  });
});

/** A GET subscription over SSE, read by hand as a browser's EventSource would (sending Last-Event-ID when resuming). */
async function subscribeSseRaw(threadId: string, token: string, variables: Record<string, unknown>, lastEventId?: string) {
  const url = new URL(t.url);
  url.searchParams.set('query', CHANGES);
  url.searchParams.set('variables', JSON.stringify({ threadId, ...variables }));
  const controller = new AbortController();
  onTestFinished(() => controller.abort());
  return fetch(url, {
    headers: {
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
      ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
    },
    signal: controller.signal,
  });
}

interface NextEvent {
  id?: string;
  data: any;
}

/** Reads `next` events until `done` holds for them, then drops the connection. */
async function readSseEvents(response: Response, done: (events: NextEvent[]) => boolean): Promise<NextEvent[]> {
  const reader = response.body!.getReader();
  const events: NextEvent[] = [];
  const incoming = sseEvents(reader);
  try {
    await eventually(
      async () => {
        while (!done(events)) {
          const { value: fields, done: ended } = await incoming.next();
          if (ended) throw new Error(`the stream ended: ${JSON.stringify(events.at(-1))}`);
          if (fields.event !== 'next') continue;
          const result = JSON.parse(fields.data!) as GraphQLResponse;
          if (result.errors) throw new Error(`an error event: ${JSON.stringify(result.errors)}`);
          events.push({ id: fields.id, data: result.data });
        }
        return events;
      },
      () => true,
      { timeoutMs: 60_000, what: 'the events' },
    );
  } finally {
    await reader.cancel().catch(() => {});
  }
  return events;
}
