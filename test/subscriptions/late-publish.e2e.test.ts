import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { CommittedChange } from '../../src/domain/events.js';
import { ARRIVAL_WAIT_MS } from '../../src/realtime/change-stream.js';
import { backendName, onPostgres } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeOn, waitFor, wsClient, type Stream } from '../support/streams.js';
import { testRedisUrl } from './support.js';

// SEMANTICS.md, "Subscriptions": a subscriber that keeps up gets live delivery, never a folded
// catch-up; "Change cursors": live delivery is one event per change. On an overloaded server a
// command's publish can come more than ARRIVAL_WAIT_MS after its commit, after later changes of
// the thread were delivered. Played here by holding back the publish of one change (the tool
// named LATE starting): subscribers that read promptly must still get every change once, in
// commit order, each in the state its own change committed. The held publish is released once
// changes committed after it have waited HELD_MS (1.5 waits) for it.

const LATE = 'late-tool';
const HELD_MS = ARRIVAL_WAIT_MS * 1.5;

/**
 * Holds back the publish of the command whose changes include LATE's start until `release`: the
 * seam is the domain's `publish` (what an overloaded event loop delays). `release` waits until
 * changes committed after it have been published and have waited HELD_MS, then publishes it.
 */
function holdBackLateStart(t: TestApp) {
  const publish = t.app.deps.publish;
  let held: CommittedChange[] | null = null;
  const publishedAfterIt: bigint[] = [];
  const isLateStart = (change: CommittedChange) => change.kind === 'audit' && change.row.name === LATE && change.row.status === 'RUNNING';
  t.app.deps.publish = (changes) => {
    if (changes.some(isLateStart)) return void (held = changes);
    if (held) publishedAfterIt.push(...changes.map((change) => change.cursor));
    publish(changes);
  };
  onTestFinished(() => void (t.app.deps.publish = publish));
  return {
    async release(laterChanges: number) {
      await waitFor(() => publishedAfterIt.length >= laterChanges, 'later changes published first');
      const lateCursor = held!.find(isLateStart)!.cursor;
      expect(publishedAfterIt.every((cursor) => cursor > lateCursor)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, HELD_MS));
      publish(held!);
    },
  };
}

/** The server's look-ups of changes whose publish had not arrived (GET /metrics): the path this suite exercises. */
async function lookUps(url: string): Promise<number> {
  const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
  return Number(/^agent_audit_subscription_look_ups_total (\d+)/m.exec(text)?.[1]);
}

const SUBSCRIPTIONS = {
  toolStatusChanged: `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id name status } }`,
  threadChanges: `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id status } run { id status } } }`,
};

async function subscribed(instances: { t: TestApp; url: string }[], who: Actors, threadId: string) {
  const streams: { label: string; kind: keyof typeof SUBSCRIPTIONS; stream: Stream }[] = [];
  for (const [index, { t, url }] of instances.entries()) {
    const client = wsClient(url, who.owner);
    onTestFinished(() => client.dispose());
    for (const kind of ['toolStatusChanged', 'threadChanges'] as const) {
      streams.push({ label: `${kind} on instance ${index}`, kind, stream: subscribeOn(client, SUBSCRIPTIONS[kind], { threadId }) });
    }
    await waitFor(() => t.app.pubsub.subscriberCount('audit', threadId) === 1 && t.app.pubsub.subscriberCount('changes', threadId) === 1, `instance ${index}'s subscriptions`);
  }
  return streams;
}

/** Every stream got every change once, in commit order, unfolded: each tool RUNNING then COMPLETED, every cursor in turn. */
async function everyChangeOnce(streams: Awaited<ReturnType<typeof subscribed>>, t: TestApp, who: Actors, threadId: string, fromCursor: bigint, tools: number) {
  const { data } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner);
  const finalCursor = counterOf(data.thread.changeCursor);
  for (const { label, kind, stream } of streams) {
    const done = (results: Stream['results']) => {
      const items = payloads(results, kind);
      return kind === 'threadChanges'
        ? items.some((item: { cursor: string }) => counterOf(item.cursor) === finalCursor)
        : items.filter((item: { status: string }) => item.status === 'COMPLETED').length === tools;
    };
    await stream.until(done, `the last change on ${label}`, 15_000);
    const items = payloads(stream.results, kind);
    if (kind === 'threadChanges') {
      const counters = items.map((item: { cursor: string }) => counterOf(item.cursor));
      expect(counters, label).toEqual(Array.from({ length: Number(finalCursor - fromCursor) }, (_, i) => fromCursor + 1n + BigInt(i)));
    } else {
      const byTool = new Map<string, string[]>();
      for (const { name, status } of items) byTool.set(name, [...(byTool.get(name) ?? []), status]);
      expect(Object.fromEntries(byTool), label).toEqual(Object.fromEntries([...byTool.keys()].map((name) => [name, ['RUNNING', 'COMPLETED']])));
      expect(byTool.size, label).toBe(tools);
    }
  }
}

function lateStart(instanceCount: 1 | 2, env: Record<string, string>) {
  const instances: { t: TestApp; url: string }[] = [];
  beforeAll(async () => {
    const first = await startTestApp(env);
    instances.push({ t: first, url: await first.app.start(0) });
    if (instanceCount === 2) {
      const other = await startTestApp(env, { databaseUrl: first.config.databaseUrl });
      instances.push({ t: other, url: await other.app.start(0) });
    }
  });
  afterAll(async () => {
    for (const { t } of instances.reverse()) await t.close();
  });

  async function setUp() {
    const t = instances[0]!.t;
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const [late, other] = await Promise.all([createRun(t, who.owner, threadId), createRun(t, who.owner, threadId)]);
    const streams = await subscribed(instances, who, threadId);
    const { data } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner);
    const [lateRun, otherRun] = [await claim(t, who.worker, late!, 120), await claim(t, who.worker, other!, 120)];
    await lateRun.declare('m-late', [{ id: 'c-late', name: LATE }]);
    await otherRun.declare('m-other', [{ id: 'c-other', name: 'other-tool' }]);
    return { t, who, threadId, streams, lateRun, otherRun, fromCursor: counterOf(data.thread.changeCursor), lookUpsBefore: await lookUps(instances[0]!.url) };
  }

  it(`a change published ${HELD_MS} ms after later changes of other entities: each delivered once, in commit order, unfolded`, async () => {
    const { t, who, threadId, streams, lateRun, otherRun, fromCursor, lookUpsBefore } = await setUp();
    const held = holdBackLateStart(t);
    must(await lateRun.toolStarted('c-late', LATE));
    // Another run's tool starts and finishes while the late start's publish is held back.
    must(await otherRun.toolStarted('c-other', 'other-tool'));
    must(await otherRun.toolFinished('c-other', { content: 'done' }));
    await held.release(2);
    must(await lateRun.toolFinished('c-late', { content: 'done' }));
    await everyChangeOnce(streams, t, who, threadId, fromCursor, 2);
    expect(await lookUps(instances[0]!.url)).toBeGreaterThan(lookUpsBefore);
  });

  it(`a change published ${HELD_MS} ms after its own entity's next change: still delivered, then that one`, async () => {
    const { t, who, threadId, streams, lateRun, otherRun, fromCursor, lookUpsBefore } = await setUp();
    const held = holdBackLateStart(t);
    must(await lateRun.toolStarted('c-late', LATE));
    // The late tool finishes (its row now holds COMPLETED) while its start's publish is held back.
    must(await lateRun.toolFinished('c-late', { content: 'done' }));
    must(await otherRun.toolStarted('c-other', 'other-tool'));
    must(await otherRun.toolFinished('c-other', { content: 'done' }));
    await held.release(3);
    await everyChangeOnce(streams, t, who, threadId, fromCursor, 2);
    expect(await lookUps(instances[0]!.url)).toBeGreaterThan(lookUpsBefore);
  });
}

describe(`a publish later than ARRIVAL_WAIT_MS (${backendName})`, () => {
  describe('one instance', () => lateStart(1, testRedisUrl ? { REDIS_URL: testRedisUrl } : {}));
  if (testRedisUrl) describe('two instances through Redis', () => lateStart(2, { REDIS_URL: testRedisUrl! }));
  // Without Redis on PostgreSQL, the database poll finds the late change's cursor before its publish.
  if (onPostgres) describe('one instance, database poll (no Redis)', () => lateStart(1, { CHANGE_POLL_INTERVAL_MS: '200' }));
});
