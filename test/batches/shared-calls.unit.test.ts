import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import type { DomainDeps } from '../../src/domain/command.js';
import { applyEvent, EVENTS_PER_CALL, MAX_SHARED_CALL_JSON, type SqlEvent } from '../../src/domain/lifecycle-events.js';
import type { Principal } from '../../src/domain/principal.js';

// How single events share calls (src/domain/lifecycle-events.ts), against a database that answers
// when told to: which events each call carries, and what a failed call does to the others. The
// rules each event is applied by are the database's, tested through the API
// (shared-calls.int.test.ts).

interface Call {
  workers: string[];
  events: SqlEvent[];
  answer: () => void;
  fail: (error: Error) => void;
}

function database() {
  const calls: Call[] = [];
  const db = {
    query: (_sql: string, [workers, json]: [string[], string]) =>
      new Promise((resolve, reject) => {
        const events = JSON.parse(json) as SqlEvent[];
        calls.push({
          workers,
          events,
          answer: () => resolve(events.map(() => ({ result: { ok: { changes: [] } } }))),
          fail: reject,
        });
      }),
    transaction: () => Promise.reject(new Error('no transaction here')),
  } as unknown as Db;
  return { db, calls };
}

const deps = (db: Db, writeCalls: number): DomainDeps => ({
  db,
  publish: () => {},
  limits: { leaseMinSeconds: 1, leaseMaxSeconds: 60, maxJsonBytes: 1000 },
  databaseId: 'test',
  writeCalls,
});
const worker = (n: number): Principal => ({ sub: `worker-${n}`, role: 'worker' }) as Principal;
const event = (n: number): SqlEvent => ({ kind: 'renewLease', runId: `run-${n}`, epoch: 1 });
/** A few turns of the event loop: a call that ended sends the next at its turn's end. */
const settled = async () => {
  for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
};

describe('single events', () => {
  it('go at once while calls are free, and those that waited go together, each as its own worker', async () => {
    const { db, calls } = database();
    const d = deps(db, 2);
    const answers = [1, 2, 3, 4, 5].map((n) => applyEvent(d, worker(n), event(n)));
    await settled();
    expect(calls.map((call) => call.workers)).toEqual([['worker-1'], ['worker-2']]);
    calls[1]!.answer();
    await settled();
    expect(calls.map((call) => call.workers)).toEqual([['worker-1'], ['worker-2'], ['worker-3', 'worker-4', 'worker-5']]);
    expect(calls[2]!.events.map((sent) => sent.runId)).toEqual(['run-3', 'run-4', 'run-5']);
    calls[0]!.answer();
    calls[2]!.answer();
    await expect(Promise.all(answers)).resolves.toHaveLength(5);
  });

  it(`carry at most ${EVENTS_PER_CALL} events a call`, async () => {
    const { db, calls } = database();
    const d = deps(db, 1);
    const answers = Array.from({ length: EVENTS_PER_CALL + 3 }, (_, n) => applyEvent(d, worker(n), event(n)));
    await settled();
    calls[0]!.answer();
    await settled();
    expect(calls.map((call) => call.events.length)).toEqual([1, EVENTS_PER_CALL]);
    calls[1]!.answer();
    await settled();
    expect(calls.map((call) => call.events.length)).toEqual([1, EVENTS_PER_CALL, 2]);
    calls[2]!.answer();
    await expect(Promise.all(answers)).resolves.toHaveLength(EVENTS_PER_CALL + 3);
  });

  it(`carry at most ${MAX_SHARED_CALL_JSON} characters of events' JSON a call, and one event whatever its size`, async () => {
    const { db, calls } = database();
    const d = deps(db, 1);
    const large = (n: number, length: number): SqlEvent => ({ ...event(n), payload: 'x'.repeat(length) });
    const answers = [
      applyEvent(d, worker(0), event(0)),
      ...[1, 2, 3].map((n) => applyEvent(d, worker(n), large(n, MAX_SHARED_CALL_JSON / 2 - 100))),
      applyEvent(d, worker(4), large(4, MAX_SHARED_CALL_JSON + 1)),
    ];
    for (let sent = 1; sent <= 4; sent++) {
      await settled();
      calls[sent - 1]!.answer();
    }
    await Promise.all(answers);
    expect(calls.map((call) => call.workers)).toEqual([['worker-0'], ['worker-1', 'worker-2'], ['worker-3'], ['worker-4']]);
  });

  it('that come as a call ends wait for the end of that turn of the event loop, and go together', async () => {
    const { db, calls } = database();
    const d = deps(db, 1);
    const first = applyEvent(d, worker(1), event(1));
    await settled();
    calls[0]!.answer();
    await first;
    // As on PGlite: the call has ended, and requests read in the same turn bring their events.
    const [second, third] = [2, 3].map((n) => applyEvent(d, worker(n), event(n)));
    expect(calls).toHaveLength(1);
    await settled();
    expect(calls.map((call) => call.workers)).toEqual([['worker-1'], ['worker-2', 'worker-3']]);
    calls[1]!.answer();
    await Promise.all([second, third]);
  });

  it('fail alone: a call that fails is sent again an event a call, and only the failing event fails its caller', async () => {
    const { db, calls } = database();
    const d = deps(db, 1);
    const first = applyEvent(d, worker(1), event(1));
    const [second, third] = [2, 3].map((n) => applyEvent(d, worker(n), event(n)));
    await settled();
    calls[0]!.answer();
    await first;
    await settled();
    expect(calls[1]!.workers).toEqual(['worker-2', 'worker-3']);
    calls[1]!.fail(new Error('statement timeout'));
    await settled();
    expect(calls.slice(2).map((call) => call.workers)).toEqual([['worker-2'], ['worker-3']]);
    calls[2]!.fail(new Error('statement timeout'));
    calls[3]!.answer();
    await expect(second).rejects.toThrow('statement timeout');
    await expect(third).resolves.toMatchObject({ changes: [] });
  });
});
