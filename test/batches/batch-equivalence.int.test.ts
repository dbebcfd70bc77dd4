import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, createRun, createThread, expireLeases } from '../support/lifecycle.js';
import { threadState } from '../write-path/support.js';
import { sendAlone, sendBatch, type Event, type EventResult } from './support.js';
import { random } from '../support/random.js';

// SEMANTICS.md, "Batches", as a property: random event sequences over several runs of a thread
// (claims and their retries, replays, conflicts, stale epochs, lost and expired leases, tool
// starts bound through resume ancestry), sent one by one as their own mutations and sent in
// random batches, give identical results per event and identical stored state. A run's claim
// comes before its events in the script; a batch may carry both, since a fresh run's first claim
// takes epoch 1.

const TRIALS = Number(process.env.BATCH_PROPERTY_TRIALS ?? 3);
const STEPS = Number(process.env.BATCH_PROPERTY_STEPS ?? 70);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '600000' });
});
afterAll(() => t.close());

/** An event of the script: its run by label, its epoch relative to the one claimed (0: the right one). */
interface ScriptEvent {
  kind: 'event';
  label: string;
  epochOffset: number;
  event: [string, Record<string, unknown>];
}
/** Between batches: a lease expired by the database clock, or a run ended and resumed by a new run. */
type Control = { kind: 'expire'; label: string } | { kind: 'resume'; label: string; next: string };
type Step = ScriptEvent | Control;

function script(seed: number): { steps: Step[]; initial: string[] } {
  const rnd = random(seed);
  const initial = ['r0', 'r1', 'r2'];
  const labels = [...initial];
  const sequence = new Map<string, number>();
  const models = new Map<string, string[]>();
  const calls = new Map<string, string[]>(); // declared, reachable from the run (its own and its ancestors')
  const started = new Map<string, string[]>();
  const sent = new Map<string, ScriptEvent[]>();
  const steps: Step[] = [];
  const at = (n: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, 0, n)).toISOString();
  let counter = 0;
  const claimOf = (label: string): ScriptEvent => {
    const claim: ScriptEvent = { kind: 'event', label, epochOffset: 0, event: ['claimRun', { claimId: `claim-${label}`, leaseSeconds: 60 }] };
    sent.set(label, [...(sent.get(label) ?? []), claim]);
    return claim;
  };
  for (const label of initial) steps.push(claimOf(label));
  for (let step = 0; step < STEPS; step++) {
    const label = rnd.pick(labels);
    const seq = (sequence.get(label) ?? 0) + 1;
    sequence.set(label, seq);
    const observed = { observedAt: at(seq), sequence: String(seq) };
    const roll = rnd.next();
    const own = (map: Map<string, string[]>) => map.get(label) ?? [];
    let event: ScriptEvent['event'] | undefined;
    let epochOffset = 0;
    if (roll < 0.04) {
      steps.push({ kind: 'expire', label });
      continue;
    } else if (roll < 0.1) {
      const next = `r${labels.length}`;
      labels.push(next);
      calls.set(next, [...own(calls)]);
      steps.push({ kind: 'resume', label, next }, claimOf(next));
      // The resumed run starts a call its ancestor declared and did not start.
      const inherited = own(calls).filter((id) => !own(started).includes(id));
      if (inherited.length > 0) {
        const id = rnd.pick(inherited);
        started.set(next, [id]);
        sequence.set(next, 1);
        const first: ScriptEvent = { kind: 'event', label: next, epochOffset: 0, event: ['toolStarted', { toolCallId: id, name: 'search', effectiveInput: { id }, observedAt: at(1), sequence: '1' }] };
        sent.get(next)!.push(first);
        steps.push(first);
      }
      continue;
    } else if (roll < 0.3 || own(models).length === 0) {
      const op = `${label}-m${counter++}`;
      models.set(label, [...own(models), op]);
      event = ['modelStarted', { operationId: op, model: 'm', input: { op }, ...observed }];
    } else if (roll < 0.45) {
      const declared = Array.from({ length: rnd.int(3) }, () => `c${counter++}`);
      calls.set(label, [...own(calls), ...declared]);
      event = ['modelFinished', { operationId: rnd.pick(own(models)), status: 'COMPLETED', toolCalls: declared.map((id) => ({ id, name: 'search' })), ...observed }];
    } else if (roll < 0.6) {
      const id = own(calls).length > 0 && rnd.next() < 0.9 ? rnd.pick(own(calls)) : `undeclared-${counter++}`;
      started.set(label, [...own(started), id]);
      event = ['toolStarted', { toolCallId: id, name: 'search', effectiveInput: { id }, ...observed }];
    } else if (roll < 0.7 && own(started).length > 0) {
      const id = rnd.pick(own(started));
      event = rnd.next() < 0.6
        ? ['toolFinished', { toolCallId: id, output: { content: `done ${id}` }, ...observed }]
        : ['toolError', { toolCallId: id, error: { message: `boom ${id}` }, ...observed }];
    } else if (roll < 0.8 && (sent.get(label) ?? []).length > 0) {
      // A replay, exact or (one in three) conflicting.
      const earlier = rnd.pick(sent.get(label)!);
      const [kind, input] = earlier.event;
      event = rnd.next() < 0.33 && kind === 'modelStarted' ? [kind, { ...input, input: { other: true } }] : [kind, input];
      epochOffset = earlier.epochOffset;
    } else if (roll < 0.83) {
      event = ['renewLease', { leaseSeconds: 60 }];
    } else if (roll < 0.86) {
      // The run claimed again: a retry of its claim, or (one in two) another claim.
      event = ['claimRun', { claimId: rnd.next() < 0.5 ? `claim-${label}` : `other-${counter++}`, leaseSeconds: 60 }];
    } else if (roll < 0.9) {
      event = ['modelStarted', { operationId: `${label}-stale-${counter++}`, ...observed }];
      epochOffset = 1;
    } else {
      event = ['finishRun', { status: rnd.pick(['COMPLETED', 'FAILED', 'INTERRUPTED']) }];
    }
    const scripted: ScriptEvent = { kind: 'event', label, epochOffset, event };
    sent.set(label, [...(sent.get(label) ?? []), scripted]);
    steps.push(scripted);
  }
  return { steps, initial };
}

/** One thread and its runs by label, driven by the script one way or the other. */
async function world(initial: string[]) {
  const who = await actors(t);
  const threadId = await createThread(t, who.owner);
  const runs = new Map<string, string>();
  for (const label of initial) runs.set(label, await createRun(t, who.owner, threadId));
  const materialize = ({ label, epochOffset, event: [kind, input] }: ScriptEvent): Event => ({
    [kind]: kind === 'claimRun' ? { ...input, runId: runs.get(label)! } : { ...input, lease: { runId: runs.get(label)!, epoch: 1 + epochOffset } },
  });
  async function control(step: Control) {
    const runId = runs.get(step.label)!;
    if (step.kind === 'expire') return expireLeases(t.app.db.driver, [runId]);
    // Ended by its worker if it still can, else cancelled by its owner (or already ended); then resumed.
    const ended = await sendAlone(t, who.worker, { finishRun: { lease: { runId, epoch: 1 }, status: 'INTERRUPTED' } });
    if (ended.error) await t.gql(`mutation($id: ID!) { cancelRun(runId: $id) { id } }`, { id: runId }, who.owner);
    runs.set(step.next, await createRun(t, who.owner, threadId, runId));
  }
  /** Run ids, the thread id and the principals as labels; ids and clock readings of the database dropped. */
  function normalize(value: unknown): unknown {
    let text = JSON.stringify(value);
    for (const [label, runId] of runs) text = text.replaceAll(runId, label);
    text = text.replaceAll(threadId, 'thread').replaceAll(who.ownerSub, 'owner').replaceAll(who.workerSub, 'worker');
    return JSON.parse(text, (key, v) => (key === 'id' || key.endsWith('At') || key === 'owner' || key === 'leaseOwner' ? undefined : v));
  }
  return { who, threadId, materialize, control, normalize, state: () => threadState({ t, owner: who.owner, threadId }) };
}

it(`gives identical results and state sent one by one and in batches (${TRIALS} trials of ${STEPS} steps)`, async () => {
  const seen = new Map<string, number>();
  const claims = new Set<string>();
  let claimRetriesReplayed = 0;
  let boundThroughAncestry = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const seed = 4500 + trial;
    const { steps, initial } = script(seed);
    const alone = await world(initial);
    const batched = await world(initial);
    const aloneResults: EventResult[] = [];
    const batchedResults: EventResult[] = [];

    const rnd = random(seed * 7);
    for (let i = 0; i < steps.length; ) {
      const step = steps[i]!;
      if (step.kind !== 'event') {
        await alone.control(step);
        await batched.control(step);
        i++;
        continue;
      }
      // The events up to the next control, in batches of random sizes.
      let end = i;
      while (end < steps.length && steps[end]!.kind === 'event') end++;
      for (let from = i; from < end; ) {
        const size = Math.min(end - from, 1 + rnd.int(8));
        const events = steps.slice(from, from + size) as ScriptEvent[];
        for (const event of events) aloneResults.push(await sendAlone(t, alone.who.worker, alone.materialize(event)));
        const response = await sendBatch(t, batched.who.worker, events.map(batched.materialize));
        expect(response.errors).toBeUndefined();
        batchedResults.push(...response.data!.result);
        from += size;
      }
      i = end;
    }

    const events = steps.filter((step): step is ScriptEvent => step.kind === 'event');
    expect(batchedResults.map((r) => batched.normalize({ ...r, index: undefined }))).toEqual(
      aloneResults.map((r) => alone.normalize({ ...r, index: undefined })),
    );
    expect(batched.normalize(await batched.state())).toEqual(alone.normalize(await alone.state()));

    for (const [index, result] of aloneResults.entries()) {
      const outcome = result.error?.code ?? 'applied';
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      const { label, event: [kind, input] } = events[index]!;
      if (kind === 'claimRun') {
        claims.add(outcome);
        // The same claim again, answered with its lease (not the run's first claim).
        if (!result.error && events.slice(0, index).some((e) => e.label === label && e.event[0] === 'claimRun')) claimRetriesReplayed++;
      }
      const id = String(input.toolCallId ?? '');
      // A call declared by another run (an ancestor) and started here: bound through resume ancestry.
      if (kind === 'toolStarted' && !result.error && steps.some((s) => s.kind === 'event' && s.label !== label && s.event[0] === 'modelFinished' && (s.event[1].toolCalls as { id: string }[]).some((c) => c.id === id))) {
        boundThroughAncestry++;
      }
    }
  }
  // The property exercised what it claims to.
  expect([...seen.keys()]).toEqual(expect.arrayContaining(['applied', 'LEASE_LOST', 'LEASE_EXPIRED', 'CONFLICT', 'INVALID_TRANSITION']));
  expect([...claims]).toEqual(expect.arrayContaining(['applied', 'INVALID_TRANSITION']));
  expect(claimRetriesReplayed).toBeGreaterThan(0);
  expect(boundThroughAncestry).toBeGreaterThan(0);
}, 240_000);
