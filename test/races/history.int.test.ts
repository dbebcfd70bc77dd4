import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, createThread, expireLeases, type Actors } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeLive, type Stream } from '../support/streams.js';
import { sendAlone, sendBatch, type Event, type EventResult } from '../batches/support.js';
import { random, type Rng } from '../support/random.js';

// SEMANTICS.md ("Runs and leases", "Batches", "Run terminal convergence", "Change cursors"), checked
// the way a platform engineer checks a store before adopting it: a randomized history of workers
// racing on the same runs, mixing single lifecycle mutations and batches (sent one after another,
// at once, or as two batches of one run interleaving), retrying (the same claimId, a batch sent
// again after a lost answer, and again after the run was taken over), while the owner cancels
// runs, expires leases (the server's sweeper ends the run), resumes ended runs (racing the sweep)
// and deletes a thread mid-run. Then, from outside only (GraphQL through yoga's fetch, a live
// threadChanges stream), the record must be exact: every accepted write is there once, every
// refused one changed nothing, no ToolCall is in two states, threadAudits, Run.toolCalls,
// toolCallStats, toolCallLedger and toolActivity agree with a recount of the accepted writes, a
// worker whose lease is gone never writes again, and threadChanges delivered every change once, in
// commit order. Each actor draws from its own generator seeded from SEED, so a failure is rerun
// with RACE_SEED=<seed> (the test's name carries it); timing still varies between runs.

const SEED = Number(process.env.RACE_SEED ?? 20261207);
const WORKERS = 3;
/** A worker stops after this many claims, or once the chaos is over and no run is left to claim. */
const MAX_SESSIONS = 30;
const CHAOS_STEPS = 60;
const TOOLS = ['search', 'fetch', 'calc'];
const LEASE_CODES = ['LEASE_LOST', 'LEASE_EXPIRED', 'NOT_FOUND'];

let t: TestApp;
beforeAll(async () => {
  // The sweeper ends expired leases soon after the owner expires them: the takeover path.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '50' });
});
afterAll(() => t.close());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One event as sent and what became of it. `sent` and `answered` are ticks of one logical clock shared by every actor. */
interface Sent {
  worker: string;
  runId: string;
  kind: string;
  input: Record<string, unknown>;
  sent: number;
  answered: number;
  result: EventResult;
  /** Sent again as it was, after an earlier answer (a retry after a lost answer). */
  resend: boolean;
}

/** What the test knows of a run from the answers it got. */
interface RunInfo {
  id: string;
  threadId: string;
  label: string;
  resumedFrom: string | null;
  /** Tool call ids declared by accepted model finishes in this run. */
  declared: string[];
}

const THREAD_CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor audit { id runId status } run { id status } } }`;

const FINAL_STATE = `query($threadId: ID!) {
  thread(id: $threadId) {
    changeCursor
    runs(first: 500) { id status error leaseOwner resumedFrom { id } toolCalls { id toolCallId name status declaredBy { id } } }
  }
  threadAudits(threadId: $threadId, limit: 500) {
    truncated
    items {
      __typename id runId role operationId sequence finishedSequence status
      ... on ToolAudit { toolCallId name effectiveInput output error awaitingRunTerminal toolCall { id status } }
      ... on ModelAudit { model input output error }
    }
  }
  toolCallStats(threadId: $threadId) { name status count }
}`;

const LEDGER = `query($threadId: ID, $after: String) {
  toolCallLedger(threadId: $threadId, first: 100, after: $after) {
    edges { node { id toolCallId status auditId executedInRunId cases } }
    pageInfo { hasNextPage endCursor }
  }
}`;

const TOOL_ACTIVITY = `{ toolActivity(windowSeconds: 3600) { runningCount tools { name running completed failed otherEnded } } }`;

/** The world of one history: an owner, its threads (one deleted mid-run), workers, and the log of everything sent. */
class History {
  clock = 0;
  readonly log: Sent[] = [];
  readonly runs = new Map<string, RunInfo>();
  /** QUEUED runs a worker may try to claim. */
  readonly pool: string[] = [];
  /** Claims answered: run → accepted claims (worker, epoch), and how many were refused. */
  readonly claims = new Map<string, { worker: string; epoch: number; sent: number }[]>();
  /** When (logical clock) the end of a run was observed from outside: a cancel answered, a sweep seen, a finish accepted. */
  readonly observedEnd = new Map<string, number>();
  deletedAt: number | null = null;
  readonly tally = new Map<string, number>();
  /** Runs their worker ended INTERRUPTED. */
  readonly interrupted = new Set<string>();
  /** The tool name each declared call id was declared with. */
  readonly callNames = new Map<string, string>();
  private labels = 0;
  private ids = 0;

  constructor(
    readonly who: Actors,
    readonly threads: string[],
    readonly doomed: string,
    readonly workers: { sub: string; token: string }[],
  ) {}

  count(outcome: string, by = 1) {
    this.tally.set(outcome, (this.tally.get(outcome) ?? 0) + by);
  }
  tick() {
    return ++this.clock;
  }
  nextId(prefix: string) {
    return `${prefix}${this.ids++}`;
  }

  async createRun(threadId: string, resumedFrom: string | null = null, createId?: string): Promise<{ id?: string; code?: string }> {
    const response = await t.gql(`mutation($input: CreateRunInput!) { result: createRun(input: $input) { id } }`, { input: { threadId, resumeFromRunId: resumedFrom, createId } }, this.who.owner);
    if (response.errors) return { code: errorCode(response) as string };
    const id: string = response.data.result.id;
    if (!this.runs.has(id)) {
      this.runs.set(id, { id, threadId, label: `r${this.labels++}`, resumedFrom, declared: [] });
      this.pool.push(id);
    }
    return { id };
  }

  /** The tool call ids a start in `runId` may bind to: declared in the run or in its resume ancestors. */
  reachable(runId: string): string[] {
    const ids: string[] = [];
    for (let run = this.runs.get(runId); run; run = run.resumedFrom ? this.runs.get(run.resumedFrom) : undefined) ids.push(...run.declared);
    return ids;
  }

  /** Sends `events` of one worker as one batch or each alone, and logs every event with its answer. */
  async send(worker: { sub: string; token: string }, events: Event[], asBatch: boolean, resend = false): Promise<EventResult[]> {
    const sent = this.tick();
    let results: EventResult[];
    if (asBatch) {
      const response = await sendBatch(t, worker.token, events);
      expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
      results = response.data!.result;
    } else {
      results = [];
      for (const event of events) results.push(await sendAlone(t, worker.token, event));
    }
    const answered = this.tick();
    events.forEach((event, index) => {
      const [kind, input] = Object.entries(event)[0]! as [string, Record<string, unknown>];
      const runId = (kind === 'claimRun' ? input.runId : (input.lease as { runId: string }).runId) as string;
      const result = results[index]!;
      this.log.push({ worker: worker.sub, runId, kind, input, sent, answered, result, resend });
      if (!result.error && kind === 'modelFinished') {
        const info = this.runs.get(runId)!;
        for (const call of input.toolCalls as { id: string; name: string }[]) {
          if (!info.declared.includes(call.id)) info.declared.push(call.id);
          this.callNames.set(call.id, call.name);
        }
      }
      if (!result.error && kind === 'claimRun') {
        const accepted = this.claims.get(runId) ?? [];
        accepted.push({ worker: worker.sub, epoch: result.lease!.epoch as number, sent });
        this.claims.set(runId, accepted);
      }
      if (!result.error && kind === 'finishRun') {
        this.observedEnd.set(runId, Math.min(this.observedEnd.get(runId) ?? Infinity, answered));
        if (input.status === 'INTERRUPTED') this.interrupted.add(runId);
      }
    });
    return results;
  }
}

/** A worker's view of the run it holds: what it has sent, so that it can build the next events. */
class Session {
  sequence = 0;
  readonly openModels: string[] = [];
  readonly started: string[] = [];
  readonly sentEvents: Event[] = [];
  lost = false;

  constructor(
    readonly h: History,
    readonly worker: { sub: string; token: string },
    readonly lease: { runId: string; epoch: number },
    readonly rnd: Rng,
  ) {}

  private observed(input: Record<string, unknown>) {
    const sequence = ++this.sequence;
    return { lease: this.lease, observedAt: new Date(Date.UTC(2026, 11, 7, 6, 0, 0, sequence)).toISOString(), sequence: String(sequence), ...input };
  }

  /** The next event, planned as if every event before it was applied (a refusal is part of the history too). */
  next(): Event {
    const { rnd, h } = this;
    const label = h.runs.get(this.lease.runId)!.label;
    const startable = h.reachable(this.lease.runId).filter((id) => !this.started.includes(id));
    const roll = rnd.next();
    let event: Event;
    if (roll < 0.2 || (this.openModels.length === 0 && roll < 0.35)) {
      const operationId = h.nextId(`${label}-m`);
      this.openModels.push(operationId);
      event = { modelStarted: this.observed({ operationId, model: 'm', input: { operationId } }) };
    } else if (roll < 0.4 && this.openModels.length > 0) {
      const operationId = this.openModels.splice(rnd.int(this.openModels.length), 1)[0]!;
      const toolCalls = Array.from({ length: rnd.int(4) }, () => ({ id: h.nextId('c'), name: rnd.pick(TOOLS), args: { n: rnd.int(3) } }));
      event = { modelFinished: this.observed({ operationId, status: rnd.chance(0.9) ? 'COMPLETED' : 'FAILED', toolCalls, output: { text: operationId } }) };
    } else if (roll < 0.6 && (startable.length > 0 || rnd.chance(0.1))) {
      const toolCallId = startable.length > 0 && rnd.chance(0.9) ? rnd.pick(startable) : h.nextId('undeclared-');
      this.started.push(toolCallId);
      event = { toolStarted: this.observed({ toolCallId, name: h.callNames.get(toolCallId) ?? 'search', effectiveInput: { toolCallId } }) };
    } else if (roll < 0.78 && this.started.length > 0) {
      const toolCallId = rnd.pick(this.started);
      event = rnd.chance(0.7)
        ? { toolFinished: this.observed({ toolCallId, output: { content: `done ${toolCallId}`, status: rnd.chance(0.8) ? 'success' : 'error' } }) }
        : { toolError: this.observed({ toolCallId, error: { message: `boom ${toolCallId}` } }) };
    } else if (roll < 0.86 && this.sentEvents.length > 0) {
      // An earlier event again: the same (a replay), or with another input (a CONFLICT if it was applied).
      const [kind, input] = Object.entries(rnd.pick(this.sentEvents))[0]! as [string, Record<string, unknown>];
      event = { [kind]: kind === 'modelStarted' && rnd.chance(0.4) ? { ...input, input: { other: true } } : input };
    } else {
      event = { renewLease: { lease: this.lease, leaseSeconds: 60 } };
    }
    this.sentEvents.push(event);
    return event;
  }

  finish(): Event {
    const status = this.rnd.pick(['COMPLETED', 'COMPLETED', 'FAILED', 'INTERRUPTED', 'INTERRUPTED', 'CANCELLED'] as const);
    return { finishRun: { lease: this.lease, status, ...(status === 'FAILED' ? { error: { code: 'WORKER_FAILED' } } : {}) } };
  }

  /** Sends one chunk of events in a random way; a lease refusal ends the session. */
  async sendChunk(events: Event[], asOneBatch = false): Promise<EventResult[]> {
    const { h, worker, rnd } = this;
    const mode = asOneBatch ? 'batch' : rnd.pick(['batch', 'singles', 'at once', 'two batches', 'batch and singles'] as const);
    let results: EventResult[];
    if (mode === 'batch' || mode === 'singles' || events.length < 2) {
      results = await h.send(worker, events, mode !== 'singles');
    } else {
      const cut = 1 + rnd.int(events.length - 1);
      const parts = mode === 'at once' ? events.map((event) => [event]) : [events.slice(0, cut), events.slice(cut)];
      const answers = await Promise.all(parts.map((part, index) => h.send(worker, part, mode === 'two batches' || (mode === 'batch and singles' && index === 0))));
      results = answers.flat();
      if (answers.filter((answer) => answer.some((result) => !result.error)).length > 1) h.count(`interleaved ${mode}`);
    }
    // An answer lost: the same request sent again as it was.
    if (rnd.chance(0.2)) {
      const again = await h.send(worker, events, true, true);
      h.count('resent after a lost answer');
      again.forEach((result, index) => expectSameAgain(results[index]!, result, events[index]!, mode === 'batch' || mode === 'singles' || events.length < 2));
    }
    if (results.some((result) => result.error && LEASE_CODES.includes(result.error.code))) this.lost = true;
    return results;
  }
}

/**
 * An event sent again as it was: an applied one replays (the same row) unless the lease is gone
 * since; a refused one is not applied now. Events first sent in order replay in order; sent at
 * once, a bare error may have been applied after the tool's result with a later sequence, and a
 * bare error for an audit no longer RUNNING is then a CONFLICT (SEMANTICS.md, recordToolError).
 */
function expectSameAgain(first: EventResult, again: EventResult, event: Event, inOrder: boolean) {
  const what = `${JSON.stringify(event)}: first ${JSON.stringify(first)}, again ${JSON.stringify(again)}`;
  if (!inOrder && event.toolError && !first.error && again.error?.code === 'CONFLICT') return;
  if (again.error) {
    // A claim sent again once its lease is no longer current is INVALID_TRANSITION, as any other claim of a started run.
    if (!first.error) expect(event.claimRun ? ['INVALID_TRANSITION', 'NOT_FOUND'] : LEASE_CODES, what).toContain(again.error.code);
    if (first.error && LEASE_CODES.includes(first.error.code)) expect(LEASE_CODES, what).toContain(again.error.code);
    if (first.error?.code === 'CONFLICT') expect(['CONFLICT', ...LEASE_CODES], what).toContain(again.error.code);
    return;
  }
  if (first.error) {
    // Refused first, applied now: only a start or finish that overtook what it needed (sent at once).
    expect(['MODEL_NOT_FOUND', 'INVALID_TRANSITION'], what).toContain(first.error.code);
    return;
  }
  if (first.audit) expect(again.audit?.id, what).toBe(first.audit.id);
  if (first.lease) expect(again.lease?.epoch, what).toBe(first.lease.epoch);
}

/** A worker: claims runs from the pool and works on them, until the pool is empty and the chaos is over. */
async function worker(h: History, index: number, chaosOver: () => boolean) {
  const rnd = random(SEED * 31 + index);
  const me = h.workers[index]!;
  for (let session = 0; session < MAX_SESSIONS; ) {
    if (h.pool.length === 0) {
      if (chaosOver()) return;
      await pause(5);
      continue;
    }
    session++;
    // Often the newest run, as every worker polling a queue would: claims race.
    const runId = rnd.chance(0.5) ? h.pool.at(-1)! : rnd.pick(h.pool);
    const claim: Event = { claimRun: { runId, claimId: `${me.sub}-${runId}`, leaseSeconds: 60 } };
    // Claimed alone, twice at once (a retry racing the answer it lost), or as the first event of a batch.
    const how = rnd.pick(['alone', 'twice', 'in a batch'] as const);
    const lease = { runId, epoch: 1 };
    const work = new Session(h, me, lease, rnd);
    let first: EventResult;
    if (how === 'in a batch') {
      const events = [claim, ...Array.from({ length: 1 + rnd.int(4) }, () => work.next())];
      // One batch: sent apart, its events could overtake the claim they need.
      first = (await work.sendChunk(events, true))[0]!;
    } else if (how === 'twice') {
      const [a, b] = await Promise.all([h.send(me, [claim], false), h.send(me, [claim], true, true)]);
      first = a[0]!;
      if (!a[0]!.error && !b[0]!.error) h.count('claim retry got the same lease');
      if (!a[0]!.error || !b[0]!.error) expect(a[0]!.lease?.epoch ?? b[0]!.lease?.epoch).toBe((b[0]!.lease ?? a[0]!.lease)!.epoch);
      first = a[0]!.error ? b[0]! : a[0]!;
    } else {
      first = (await h.send(me, [claim], false))[0]!;
    }
    const at = h.pool.indexOf(runId);
    if (at >= 0) h.pool.splice(at, 1);
    if (first.error) {
      h.count(`claim refused ${first.error.code}`);
      continue;
    }
    lease.epoch = first.lease!.epoch as number;
    h.count('claim won');
    const steps = 2 + rnd.int(14);
    let finished = false;
    for (let step = 0; step < steps && !work.lost; ) {
      const size = Math.min(steps - step, 1 + rnd.int(6));
      const events = Array.from({ length: size }, () => work.next());
      step += size;
      const ending = step >= steps && rnd.chance(0.75);
      if (ending) events.push(work.finish());
      const results = await work.sendChunk(events);
      if (ending && !results.at(-1)!.error) finished = true;
    }
    if (!finished && !work.lost) h.count('worker walked away'); // its lease expires (the chaos) or the run is cancelled at the end
    // Late: the last events sent again (a batch retried after a lost answer, maybe after a takeover), and one new event.
    if (rnd.chance(0.6) && work.sentEvents.length > 0) {
      const late = [...work.sentEvents.slice(-3), work.next()];
      const results = await h.send(me, late, rnd.chance(0.5), true);
      h.count('late writes sent');
      if (results.every((result) => result.error && LEASE_CODES.includes(result.error.code))) h.count('late writes all refused by the fence');
    }
  }
}

/** A worker holding a run of the thread the owner deletes, writing on until it is told the run is gone. */
async function doomedWorker(h: History, me: { sub: string; token: string }, runId: string, chaosOver: () => boolean) {
  const rnd = random(SEED * 13);
  h.pool.splice(h.pool.indexOf(runId), 1);
  const [claimed] = await h.send(me, [{ claimRun: { runId, claimId: `${me.sub}-${runId}`, leaseSeconds: 60 } }], false);
  expect(claimed!.error).toBeNull();
  const work = new Session(h, me, { runId, epoch: claimed!.lease!.epoch as number }, rnd);
  // On until a chunk goes after the deletion's answer (those that raced it may go either way).
  for (let sent = 0; !chaosOver() && (h.deletedAt === null || sent <= h.deletedAt); ) {
    sent = h.clock + 1;
    const results = await work.sendChunk(Array.from({ length: 1 + rnd.int(3) }, () => work.next()));
    if (h.deletedAt !== null && sent < h.deletedAt) for (const result of results) h.count(`write raced the deletion: ${result.error?.code ?? 'applied'}`);
    await pause(rnd.int(10));
  }
}

/** The owner: cancels runs, expires leases (the sweeper takes the run over), resumes ended runs, and deletes a thread. */
async function chaos(h: History) {
  const rnd = random(SEED * 17);
  const claimedRuns = () => [...h.claims.keys()].filter((runId) => !h.observedEnd.has(runId));
  const expired: string[] = [];
  const resumable: string[] = [];
  for (let step = 0; step < CHAOS_STEPS; step++) {
    await pause(rnd.int(25));
    const roll = rnd.next();
    if (step === Math.floor(CHAOS_STEPS / 2)) {
      const response = await t.gql(`mutation($id: ID!) { deleteThread(id: $id) { runs } }`, { id: h.doomed }, h.who.owner);
      expect(response.errors).toBeUndefined();
      h.deletedAt = h.tick();
      h.count('thread deleted mid-run');
    } else if (roll < 0.2 && claimedRuns().length > 0) {
      const runId = rnd.pick(claimedRuns());
      if (h.runs.get(runId)!.threadId === h.doomed) continue;
      await expireLeases(t.app.db.driver, [runId]);
      expired.push(runId);
      // A resume sent at once races the sweep: refused while the run still runs, else created.
      const raced = await h.createRun(h.runs.get(runId)!.threadId, runId, `resume-${runId}`);
      h.count(raced.id ? 'resume raced the sweep: created' : `resume raced the sweep: refused ${raced.code}`);
      if (!raced.id) resumable.push(runId);
    } else if (roll < 0.4) {
      const candidates = [...h.runs.keys()].filter((runId) => !h.observedEnd.has(runId) && h.runs.get(runId)!.threadId !== h.doomed);
      if (candidates.length === 0) continue;
      const runId = rnd.pick(candidates);
      const response = await t.gql(`mutation($id: ID!) { result: cancelRun(runId: $id) { status } }`, { id: runId }, h.who.owner);
      const answered = h.tick();
      if (response.errors) h.count(`cancel refused ${errorCode(response)}`);
      else {
        h.count('cancelled');
        h.observedEnd.set(runId, Math.min(h.observedEnd.get(runId) ?? Infinity, answered));
      }
    } else if (roll < 0.75) {
      // Resume an ended run (once or twice at once with one createId), or retry a resume the sweep was behind.
      const ended = [...h.runs.keys()].filter((runId) => h.runs.get(runId)!.threadId !== h.doomed && (h.observedEnd.has(runId) || expired.includes(runId)));
      // Mostly a run the sweep was behind, or one its worker interrupted: a resume then runs its calls again.
      const interrupted = ended.filter((runId) => h.interrupted.has(runId));
      const runId =
        resumable.length > 0 && rnd.chance(0.5) ? resumable.shift()! : interrupted.length > 0 && rnd.chance(0.6) ? rnd.pick(interrupted) : ended.length > 0 ? rnd.pick(ended) : undefined;
      if (!runId) continue;
      const threadId = h.runs.get(runId)!.threadId;
      const createId = h.nextId('resume-');
      const answers = await Promise.all(Array.from({ length: rnd.chance(0.3) ? 2 : 1 }, () => h.createRun(threadId, runId, createId)));
      if (answers.length === 2 && answers[0]!.id) {
        expect(answers[1]!.id).toBe(answers[0]!.id);
        h.count('resume sent twice, one run');
      }
      if (answers[0]!.code) h.count(`resume refused ${answers[0]!.code}`);
      else if (expired.includes(runId)) h.count('resume of a swept run created');
    } else {
      await h.createRun(rnd.pick(h.threads));
    }
    // Sweeps seen from outside: an expired run that has ended.
    for (const runId of expired) {
      if (h.observedEnd.has(runId)) continue;
      const run = (await t.gql(`query($id: ID!) { run(id: $id) { status } }`, { id: runId }, h.who.owner)).data?.run;
      if (run && run.status !== 'RUNNING') h.observedEnd.set(runId, h.tick());
    }
  }
}

it(`keeps an exact record under racing workers, retries, takeovers, resumes and a deletion (${backendName}, seed ${SEED})`, async () => {
  const who = await actors(t);
  const threads = [await createThread(t, who.owner, 'kept A'), await createThread(t, who.owner, 'kept B')];
  const doomed = await createThread(t, who.owner, 'deleted mid-run');
  const workers = await Promise.all(Array.from({ length: WORKERS }, async (_, i) => ({ sub: `${who.workerSub}-${i}`, token: await t.token(`${who.workerSub}-${i}`, 'worker') })));
  const h = new History(who, threads, doomed, workers);

  const streams = new Map<string, Stream>();
  for (const threadId of threads) streams.set(threadId, (await subscribeLive(t.app, null, 'changes', THREAD_CHANGES, { threadId }, who.owner))[0]!);
  const cursorOf = async (threadId: string) => counterOf((await t.gql(`query($id: ID!) { thread(id: $id) { changeCursor } }`, { id: threadId }, who.owner)).data.thread.changeCursor);
  const start = new Map(await Promise.all(threads.map(async (threadId) => [threadId, await cursorOf(threadId)] as const)));

  for (const threadId of [...threads, doomed]) for (let i = 0; i < 2; i++) await h.createRun(threadId);
  const doomedRun = [...h.runs.values()].find((run) => run.threadId === doomed)!.id;
  const doomedSub = `${who.workerSub}-doomed`;
  const doomedHolder = { sub: doomedSub, token: await t.token(doomedSub, 'worker') };
  let chaosOver = false;
  await Promise.all([
    chaos(h).finally(() => (chaosOver = true)),
    doomedWorker(h, doomedHolder, doomedRun, () => chaosOver),
    ...workers.map((_, index) => worker(h, index, () => chaosOver)),
  ]);

  // Everything still going ends: cancelled by the owner (or already swept).
  const kept = [...h.runs.values()].filter((run) => run.threadId !== doomed);
  for (const run of kept) await t.gql(`mutation($id: ID!) { cancelRun(runId: $id) { id } }`, { id: run.id }, who.owner);

  const failures: string[] = [];
  const check = (holds: boolean, what: string) => void (holds || failures.push(what));
  const accepted = h.log.filter((entry) => !entry.result.error);

  // Deleted mid-run: from the deletion's answer on, every write to its runs is NOT_FOUND.
  for (const entry of h.log) {
    if (h.runs.get(entry.runId)?.threadId === doomed && h.deletedAt !== null && entry.sent > h.deletedAt) {
      check(entry.result.error?.code === 'NOT_FOUND', `a write to the deleted thread after its deletion: ${JSON.stringify(entry)}`);
      h.count('refused NOT_FOUND after the deletion');
    }
  }

  // One lease holder per run, and the fence: once the run's end was observed, or the worker was told its lease was gone, nothing it sends is applied.
  for (const [runId, claims] of h.claims) {
    check(new Set(claims.map((claim) => `${claim.worker}/${claim.epoch}`)).size === 1, `run ${runId} leased to several: ${JSON.stringify(claims)}`);
  }
  for (const entry of accepted) {
    if (entry.kind === 'claimRun') continue;
    const holder = h.claims.get(entry.runId)?.[0];
    check(holder?.worker === entry.worker, `an accepted write by a worker that never held run ${entry.runId}: ${JSON.stringify(entry)}`);
    const ended = h.observedEnd.get(entry.runId);
    check(ended === undefined || entry.sent < ended, `a write sent after the end of run ${entry.runId} was observed (${ended}) was applied: ${JSON.stringify(entry)}`);
    const toldGone = h.log.find((other) => other.worker === entry.worker && other.runId === entry.runId && other.answered < entry.sent && other.result.error && LEASE_CODES.includes(other.result.error.code));
    check(!toldGone, `a write applied after its worker was told the lease was gone (${JSON.stringify(toldGone?.result.error)}): ${JSON.stringify(entry)}`);
  }
  for (const entry of h.log) {
    const ended = h.observedEnd.get(entry.runId);
    if (entry.kind !== 'claimRun' && ended !== undefined && entry.sent > ended) h.count('refused after the end was observed');
  }

  for (const threadId of threads) {
    const response = await t.gql(FINAL_STATE, { threadId }, who.owner);
    expect(response.errors).toBeUndefined();
    const { thread, threadAudits, toolCallStats } = response.data;
    expect(threadAudits.truncated).toBe(false);
    const runs = new Map<string, any>(thread.runs.map((run: any) => [run.id, run]));
    const audits: any[] = threadAudits.items;
    const toolCalls: any[] = thread.runs.flatMap((run: any) => run.toolCalls.map((call: any) => ({ ...call, runId: run.id })));
    const ours = accepted.filter((entry) => h.runs.get(entry.runId)?.threadId === threadId);

    for (const run of runs.values()) check(!['QUEUED', 'RUNNING'].includes(run.status), `run ${run.id} still ${run.status} after the end`);

    // Every accepted start is there once, with the row every answer named; nothing else is.
    const keyOf = (runId: string, role: string, operationId: string) => `${runId}/${role}/${operationId}`;
    const byKey = new Map<string, any[]>();
    for (const audit of audits) byKey.set(keyOf(audit.runId, audit.role, audit.operationId), [...(byKey.get(keyOf(audit.runId, audit.role, audit.operationId)) ?? []), audit]);
    const eventKey = (entry: Sent) =>
      keyOf(entry.runId, entry.kind.startsWith('model') ? 'ASSISTANT' : 'TOOL', String(entry.input.operationId ?? entry.input.toolCallId));
    for (const entry of ours.filter((e) => e.result.audit)) {
      const found = byKey.get(eventKey(entry)) ?? [];
      check(found.length === 1 && found[0].id === entry.result.audit!.id, `accepted ${entry.kind} ${eventKey(entry)} answered ${entry.result.audit!.id}, stored ${JSON.stringify(found.map((a) => a.id))}`);
    }
    for (const audit of audits) {
      const started = ours.find((entry) => entry.kind.endsWith('Started') && eventKey(entry) === keyOf(audit.runId, audit.role, audit.operationId));
      check(started !== undefined && started.result.audit!.id === audit.id && String(audit.sequence) === started.input.sequence, `audit ${audit.id} (${audit.operationId}) has no accepted start`);
    }

    // Every ToolCall was declared by an accepted model finish of its run, once; and only those.
    const declared = new Map<string, { runId: string; name: string; by: string }>();
    for (const entry of ours.filter((e) => e.kind === 'modelFinished')) {
      for (const call of entry.input.toolCalls as { id: string; name: string }[]) declared.set(call.id, { runId: entry.runId, name: call.name, by: entry.result.audit!.id as string });
    }
    check(toolCalls.length === declared.size, `${toolCalls.length} ToolCalls stored, ${declared.size} declared by accepted finishes`);
    for (const call of toolCalls) {
      const expected = declared.get(call.toolCallId);
      check(expected !== undefined && expected.runId === call.runId && expected.name === call.name && expected.by === call.declaredBy.id, `ToolCall ${call.toolCallId} not as declared: ${JSON.stringify(call)} vs ${JSON.stringify(expected)}`);
    }

    // Each audit ended as its own accepted terminal says, else as its run's end closes it.
    for (const audit of audits) {
      const key = keyOf(audit.runId, audit.role, audit.operationId);
      const run = runs.get(audit.runId);
      const ending = run.status === 'FAILED' && run.error?.code === 'LEASE_EXPIRED' ? 'LEASE_EXPIRED' : run.status;
      const closedAs = ({ COMPLETED: 'ABANDONED', FAILED: 'FAILED', LEASE_EXPIRED: 'ABANDONED', CANCELLED: 'CANCELLED', INTERRUPTED: 'INTERRUPTED' } as Record<string, string>)[ending];
      const terminal = ours.find((entry) => eventKey(entry) === key && (entry.kind === 'toolFinished' || entry.kind === 'modelFinished'));
      const bare = ours.find((entry) => eventKey(entry) === key && entry.kind === 'toolError');
      let expected: string | undefined = closedAs;
      if (terminal?.kind === 'modelFinished') expected = terminal.input.status as string;
      if (terminal?.kind === 'toolFinished') expected = (terminal.input.output as { status: string }).status === 'error' ? 'FAILED' : 'COMPLETED';
      check(audit.status === expected, `audit ${key} is ${audit.status}, expected ${expected} (run ${run.status} ${JSON.stringify(run.error)}, terminal ${terminal?.kind})`);
      if (terminal?.kind === 'toolFinished') check(isDeepStrictEqual(audit.output, terminal.input.output), `audit ${key} output ${JSON.stringify(audit.output)}`);
      if (audit.__typename === 'ToolAudit') {
        if (bare) check(isDeepStrictEqual(audit.error, bare.input.error), `audit ${key} lost its bare error: ${JSON.stringify(audit.error)}`);
        check(audit.awaitingRunTerminal === false, `audit ${key} still awaits a verdict`);
        // Bound to the one declaration of its id, in its run or a resume ancestor.
        const declaration = toolCalls.find((call) => call.toolCallId === audit.toolCallId);
        check(declaration?.id === audit.toolCall.id && h.reachable(audit.runId).includes(audit.toolCallId), `audit ${key} bound to ${audit.toolCall.id}, declared ${declaration?.id}`);
        if (declaration && declaration.runId !== audit.runId) h.count('started through the resume ancestry');
      }
    }

    // No ToolCall in two states: at most one execution that was not interrupted, and the ToolCall mirrors it.
    const mirror: Record<string, string> = { RUNNING: 'RUNNING', COMPLETED: 'COMPLETED', FAILED: 'FAILED', ABANDONED: 'FAILED', CANCELLED: 'CANCELLED', INTERRUPTED: 'PENDING' };
    const latest = new Map<string, { status: string; auditId: string | null }>();
    for (const call of toolCalls) {
      const executions = audits.filter((audit) => audit.__typename === 'ToolAudit' && audit.toolCall.id === call.id);
      const live = executions.filter((audit) => audit.status !== 'INTERRUPTED');
      check(live.length <= 1, `ToolCall ${call.toolCallId} has ${live.length} executions not interrupted: ${JSON.stringify(live)}`);
      check(call.status === (live[0] ? mirror[live[0].status] : 'PENDING'), `ToolCall ${call.toolCallId} is ${call.status}; its executions ${JSON.stringify(executions.map((a) => a.status))}`);
      if (executions.length > 1) h.count('a call run again after an interrupt');
      latest.set(call.id, live[0] ? { status: live[0].status, auditId: live[0].id } : executions.length > 0 ? { status: 'INTERRUPTED', auditId: executions.length === 1 ? executions[0].id : null } : { status: 'PENDING', auditId: null });
    }

    // toolCallStats and the ledger agree with the recount.
    const stats = new Map<string, number>();
    for (const call of toolCalls) stats.set(`${call.name}/${call.status}`, (stats.get(`${call.name}/${call.status}`) ?? 0) + 1);
    const statsRead = new Map<string, number>(toolCallStats.map((stat: any) => [`${stat.name}/${stat.status}`, stat.count]));
    check(JSON.stringify([...statsRead].sort()) === JSON.stringify([...stats].sort()), `toolCallStats ${JSON.stringify([...statsRead])} vs recount ${JSON.stringify([...stats])}`);
    const ledger: any[] = [];
    for (let after: string | null = null; ; ) {
      const page: any = (await t.gql(LEDGER, { threadId, after }, who.owner)).data.toolCallLedger;
      ledger.push(...page.edges.map((edge: any) => edge.node));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    check(ledger.length === toolCalls.length, `the ledger lists ${ledger.length} calls of ${toolCalls.length}`);
    for (const entry of ledger) {
      const expected = latest.get(entry.id);
      check(expected !== undefined && expected.status === entry.status && (expected.auditId === null || expected.auditId === entry.auditId), `ledger entry ${entry.toolCallId}: ${JSON.stringify(entry)} vs ${JSON.stringify(expected)}`);
      // Every run has ended: a call never started can no longer start.
      if (expected?.status === 'PENDING') check(JSON.stringify(entry.cases) === '["NEVER_RUN"]', `ledger entry ${entry.toolCallId} never ran, cases ${JSON.stringify(entry.cases)}`);
    }

    // threadChanges: every change once, in commit order, and the fence in commit order: nothing of a run after its end.
    const end = BigInt(counterOf(thread.changeCursor));
    const stream = streams.get(threadId)!;
    await stream.until((results) => results.some((result) => result.data && counterOf(result.data.threadChanges.cursor) >= end), `the change ${end}`);
    const changes: any[] = payloads(stream.results, 'threadChanges');
    const counters = changes.map((change) => counterOf(change.cursor));
    const from = start.get(threadId)!;
    check(JSON.stringify(counters.map(String)) === JSON.stringify(Array.from({ length: Number(end - from) }, (_, i) => String(from + BigInt(i + 1)))), `threadChanges of ${threadId} delivered ${counters.length} changes, not ${from + 1n}..${end} once each in order`);
    const folded = new Map<string, string>();
    const endedAt = new Map<string, number>();
    changes.forEach((change, index) => {
      if (change.run) {
        folded.set(change.run.id, change.run.status);
        if (!['QUEUED', 'RUNNING'].includes(change.run.status) && !endedAt.has(change.run.id)) endedAt.set(change.run.id, index);
      }
      if (change.audit) {
        folded.set(change.audit.id, change.audit.status);
        const runEnded = endedAt.get(change.audit.runId);
        check(runEnded === undefined, `audit ${change.audit.id} changed (${change.audit.status}) after its run ${change.audit.runId} ended`);
      }
    });
    for (const audit of audits) check(folded.get(audit.id) === audit.status, `threadChanges leaves audit ${audit.id} ${folded.get(audit.id)}, stored ${audit.status}`);
    for (const run of runs.values()) check(folded.get(run.id) === run.status, `threadChanges leaves run ${run.id} ${folded.get(run.id)}, stored ${run.status}`);
    h.count('changes delivered', changes.length);
  }

  // toolActivity: the owner's threads that still exist, recounted from their audits.
  const recount = new Map<string, { running: number; completed: number; failed: number; otherEnded: number }>();
  for (const threadId of threads) {
    for (const audit of (await t.gql(FINAL_STATE, { threadId }, who.owner)).data.threadAudits.items) {
      if (audit.__typename !== 'ToolAudit') continue;
      const stat = recount.get(audit.name) ?? { running: 0, completed: 0, failed: 0, otherEnded: 0 };
      stat[audit.status === 'RUNNING' ? 'running' : audit.status === 'COMPLETED' ? 'completed' : audit.status === 'FAILED' ? 'failed' : 'otherEnded']++;
      recount.set(audit.name, stat);
    }
  }
  const activity = (await t.gql(TOOL_ACTIVITY, {}, who.owner)).data.toolActivity;
  check(activity.runningCount === 0, `toolActivity runningCount ${activity.runningCount} once every run ended`);
  const byName = (a: [string, unknown], b: [string, unknown]) => a[0].localeCompare(b[0]);
  const read = activity.tools.map(({ name, ...counts }: any) => [name, counts]).sort(byName);
  const expected = [...recount].sort(byName);
  check(JSON.stringify(read) === JSON.stringify(expected), `toolActivity ${JSON.stringify(read)} vs recount ${JSON.stringify(expected)}`);

  const tally = Object.fromEntries([...h.tally].sort());
  console.info(`[race history on ${backendName}, seed ${SEED}] ${h.log.length} events sent`, tally);
  expect(failures, `seed ${SEED}`).toEqual([]);
  // The history exercised what it claims to: each kind of race and retry really happened.
  for (const outcome of [
    'claim won',
    'claim refused INVALID_TRANSITION',
    'resent after a lost answer',
    'late writes all refused by the fence',
    'refused after the end was observed',
    'resume of a swept run created',
    'started through the resume ancestry',
    'cancelled',
    'thread deleted mid-run',
    'refused NOT_FOUND after the deletion',
  ]) {
    expect(h.tally.get(outcome) ?? 0, `${outcome} (seed ${SEED})`).toBeGreaterThan(0);
  }
  expect([...h.tally.keys()].some((outcome) => outcome.startsWith('interleaved')), 'requests of one run interleaved').toBe(true);
  expect([...h.tally.keys()].some((outcome) => outcome.startsWith('resume raced the sweep: refused')), 'a resume raced the sweep and lost').toBe(true);
}, 600_000);
