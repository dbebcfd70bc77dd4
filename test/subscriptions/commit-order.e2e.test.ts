import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { CommittedChange } from '../../src/domain/events.js';
import { ChangeStream } from '../../src/realtime/change-stream.js';
import { backendName, onPostgres, servicesRequired } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeOn, waitFor, wsClient, type Stream } from '../support/streams.js';
import { testRedisUrl } from './support.js';

// SEMANTICS.md, "Subscriptions": a subscriber that keeps up gets live delivery, never a folded
// catch-up. Changes of one thread committed by concurrent runs (on one instance, or on two
// through Redis) reach the fan-out in another order than they committed; the server puts them
// back in commit order. As a property, over many trials: subscribers over graphql-ws that read
// promptly, of every kind, get every tool RUNNING then COMPLETED, every run RUNNING then
// COMPLETED, and threadChanges every cursor, none skipped. The disorder itself is counted (a
// change offered to a stream after one with a later cursor), so the test shows it exercised it.

const RUNS = 6;
const ROUNDS = 8;
const TRIALS = Number(process.env.COMMIT_ORDER_TRIALS ?? 6);

const SUBSCRIPTIONS = {
  toolStatusChanged: `subscription($threadId: ID!) { toolStatusChanged(threadId: $threadId) { id status } }`,
  auditChanged: `subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id role status } }`,
  runChanged: `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`,
  threadChanges: `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id role status } run { id status } } }`,
} as const;
type Kind = keyof typeof SUBSCRIPTIONS;
const TOPIC_OF: Record<Kind, 'audit' | 'run' | 'changes'> = {
  toolStatusChanged: 'audit',
  auditChanged: 'audit',
  runChanged: 'run',
  threadChanges: 'changes',
};

/** Counts changes offered to a stream after a change with a later cursor: the disorder the server must undo. */
function countDisorder() {
  const highest = new WeakMap<ChangeStream, bigint>();
  let late = 0;
  const offer = ChangeStream.prototype.offer;
  const spy = vi.spyOn(ChangeStream.prototype, 'offer').mockImplementation(function (this: ChangeStream, change: CommittedChange) {
    const seen = highest.get(this) ?? 0n;
    if (change.cursor < seen) late++;
    else highest.set(this, change.cursor);
    offer.call(this, change);
  });
  onTestFinished(() => spy.mockRestore());
  return () => late;
}

/** Statuses delivered per entity id, in delivery order. */
function statusesById(items: { id: string; status: string }[]) {
  const byId = new Map<string, string[]>();
  for (const { id, status } of items) byId.set(id, [...(byId.get(id) ?? []), status]);
  return byId;
}

async function trial(instances: { t: TestApp; url: string }[], t: TestApp) {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const runIds = await Promise.all(Array.from({ length: RUNS }, () => createRun(t, who.owner, threadId)));
  // On every instance: one connection holding one subscription of each kind.
  const streams: { kind: Kind; stream: Stream; instance: number }[] = [];
  const clients = instances.map(({ url }) => wsClient(url, who.owner));
  onTestFinished(async () => void (await Promise.all(clients.map((client) => client.dispose()))));
  instances.forEach((_, index) => {
    for (const kind of Object.keys(SUBSCRIPTIONS) as Kind[]) {
      streams.push({ kind, instance: index, stream: subscribeOn(clients[index]!, SUBSCRIPTIONS[kind], { threadId }) });
    }
  });
  for (const [index, { t: on }] of instances.entries()) {
    for (const topic of ['audit', 'run', 'changes'] as const) {
      const expected = Object.values(TOPIC_OF).filter((each) => each === topic).length;
      await waitFor(() => {
        // A subscription that ended instead of starting fails here, with its reason.
        const ended = streams.find(({ stream }) => stream.ending);
        if (ended) throw new Error(`${ended.kind} on instance ${ended.instance} ended: ${JSON.stringify(ended.stream.ending)}`);
        return on.app.pubsub.subscriberCount(topic, threadId) === expected;
      }, `instance ${index}'s ${topic} subscriptions`);
    }
  }
  const { data: before } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner);

  // Each run, on its own instance: a model call declaring a tool, the tool started and finished, ROUNDS times.
  await Promise.all(
    runIds.map(async (runId, index) => {
      const on = instances[index % instances.length]!.t;
      const session = await claim(on, who.worker, runId, 120);
      for (let round = 0; round < ROUNDS; round++) {
        await session.declare(`r${index}-m${round}`, [{ id: `r${index}-c${round}`, name: 'search' }]);
        must(await session.toolStarted(`r${index}-c${round}`, 'search'));
        must(await session.toolFinished(`r${index}-c${round}`, { content: 'done' }));
      }
      must(await session.finish('COMPLETED'));
    }),
  );
  const { data: after } = await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner);
  const finalCursor = counterOf(after.thread.changeCursor);
  const entities = { toolStatusChanged: RUNS * ROUNDS, auditChanged: RUNS * ROUNDS * 2, runChanged: RUNS };
  // Done once each stream has its last event: the final cursor, or every entity in its terminal state.
  const complete = (kind: Kind, results: Stream['results']) => {
    const items = payloads(results, kind);
    if (kind === 'threadChanges') return items.length > 0 && counterOf(items.at(-1).cursor) === finalCursor;
    return new Set(items.filter((item: { status: string }) => item.status === 'COMPLETED').map((item: { id: string }) => item.id)).size === entities[kind];
  };
  for (const { kind, stream, instance } of streams) {
    await stream.until((results) => complete(kind, results), `the last ${kind} event on instance ${instance}`, 20_000);
  }

  const problems: string[] = [];
  for (const { kind, stream, instance } of streams) {
    const label = `${kind} on instance ${instance}`;
    const items = payloads(stream.results, kind);
    if (kind === 'threadChanges') {
      const counters = [counterOf(before.thread.changeCursor), ...items.map((change: { cursor: string }) => counterOf(change.cursor))];
      const skipped = counters.filter((counter, i) => i > 0 && counter !== counters[i - 1]! + 1n);
      if (skipped.length > 0) problems.push(`${label}: ${skipped.length} of ${counters.length - 1} cursors did not follow their predecessor`);
      continue;
    }
    const lives = [...statusesById(items).values()];
    const incomplete = lives.filter((statuses) => statuses.join() !== 'RUNNING,COMPLETED');
    if (incomplete.length > 0) problems.push(`${label}: ${incomplete.length} of ${lives.length} delivered ${JSON.stringify(incomplete[0])}, not RUNNING then COMPLETED`);
  }
  expect(problems).toEqual([]);
}

function property(name: string, instanceCount: 1 | 2) {
  const instances: { t: TestApp; url: string }[] = [];
  beforeAll(async () => {
    const first = await startTestApp(testRedisUrl ? { REDIS_URL: testRedisUrl } : {});
    instances.push({ t: first, url: await first.app.start(0) });
    if (instanceCount === 2) {
      const other = await startTestApp({ REDIS_URL: testRedisUrl! }, { databaseUrl: first.config.databaseUrl });
      instances.push({ t: other, url: await other.app.start(0) });
    }
  });
  afterAll(async () => {
    for (const { t } of instances.reverse()) await t.close();
  });

  it(`${RUNS} concurrent runs of one thread, ${TRIALS} trials: every subscription kind delivers every state, in commit order`, async () => {
    const disorder = countDisorder();
    let trialsWithDisorder = 0;
    let trialsRun = 0;
    // On PostgreSQL, on until disorder happened (bounded): the property must have been exercised,
    // and a quiet or a loaded machine may keep the commits in order for a few trials.
    for (let i = 0; i < TRIALS || (onPostgres && disorder() === 0 && i < 4 * TRIALS); i++) {
      const lateBefore = disorder();
      await trial(instances, instances[0]!.t);
      if (disorder() > lateBefore) trialsWithDisorder++;
      trialsRun++;
    }
    console.info(`[commit order] ${name}: ${trialsRun} trials, disorder in ${trialsWithDisorder}, ${disorder()} offers of a change to a stream after a later change`);
    // The property was exercised: changes did arrive out of commit order. PGlite runs every
    // command on its one connection, one after another, so its commands finish in commit order:
    // there the property holds with no disorder to undo.
    if (onPostgres) expect(disorder()).toBeGreaterThan(0);
  }, 300_000);
}

describe(`live delivery in commit order (${backendName})`, () => {
  describe('one instance', () => property('one instance', 1));
  if (testRedisUrl) describe('two instances through Redis', () => property('two instances, Redis', 2));
  else if (servicesRequired) {
    it('two instances through Redis', () => {
      throw new Error('TEST_REDIS_URL must be set when REQUIRE_SERVICES=1');
    });
  }
});
