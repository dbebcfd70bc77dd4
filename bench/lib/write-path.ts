import { performance } from 'node:perf_hooks';
import type { GraphQLHttp } from './graphql-http.js';
import { runScript, type Step } from './run-script.js';
import { serverCreateRun, serverCreateThread, serverStep, type Lease } from './server-worker.js';
import type { Sql } from './sql.js';
import { summarize, type Summary } from './stats.js';
import { floorCreateRun, floorCreateThread, floorStep } from './write-floor.js';

/** One simulated worker's way of driving runs: over the server's HTTP API, or through the floor's functions. */
export interface WriteTarget {
  /** Per-worker setup, not measured: the worker's thread. */
  prepare(worker: number): Promise<{
    createRun(): Promise<string>;
    step(runId: string, lease: Lease | null, step: Step): Promise<Lease | null>;
  }>;
}

export function serverTarget(http: GraphQLHttp, ownerToken: string, workerTokens: string[]): WriteTarget {
  return {
    async prepare(worker) {
      const threadId = await serverCreateThread(http, ownerToken, `bench worker ${worker}`);
      const token = workerTokens[worker]!;
      return {
        createRun: () => serverCreateRun(http, ownerToken, threadId),
        step: (runId, lease, step) => serverStep(http, token, runId, lease, step),
      };
    },
  };
}

/** The write floor (lib/write-floor.ts): one function call per event. */
export function floorTarget(sql: Sql, ownerSub: string, workerSubs: string[]): WriteTarget {
  return {
    async prepare(worker) {
      const threadId = await floorCreateThread(sql, ownerSub);
      const sub = workerSubs[worker]!;
      return {
        createRun: () => floorCreateRun(sql, ownerSub, threadId),
        step: (runId, lease, step) => floorStep(sql, sub, runId, lease, step),
      };
    },
  };
}

export interface WriteResult {
  workers: number;
  seconds: number;
  runs: number;
  /** Lifecycle events (claim … finishRun) completed inside the measured windows. */
  events: number;
  eventsPerSecond: number;
  latencyMs: Record<string, Summary>;
  /** Every lifecycle event's latency pooled (createRun excluded). */
  eventLatencyMs: Summary;
  /** Every lifecycle event of the phases (warm-ups and the runs' tails included), for per-event costs. */
  phaseEvents: number;
  /** With runs created ahead: the runs a loop still had to create in the window (it ran out). */
  runsCreatedInWindow: number;
}

/** One measured window: its counts and every call's latency. */
export interface WriteWindow extends Omit<WriteResult, 'latencyMs' | 'eventLatencyMs'> {
  latencies: Map<string, number[]>;
}

/** Several windows of one target as one result: counts added up, latencies pooled. */
export function combineWindows(windows: WriteWindow[]): WriteResult {
  const sum = (pick: (window: WriteWindow) => number) => windows.reduce((total, window) => total + pick(window), 0);
  const pooled = new Map<string, number[]>();
  for (const window of windows) for (const [op, values] of window.latencies) pooled.set(op, [...(pooled.get(op) ?? []), ...values]);
  const seconds = sum((window) => window.seconds);
  return {
    workers: windows[0]!.workers,
    seconds,
    runs: sum((window) => window.runs),
    events: sum((window) => window.events),
    eventsPerSecond: sum((window) => window.events) / seconds,
    latencyMs: Object.fromEntries([...pooled].map(([op, values]) => [op, summarize(values)])),
    eventLatencyMs: summarize([...pooled].flatMap(([op, values]) => (op === 'createRun' ? [] : values))),
    phaseEvents: sum((window) => window.phaseEvents),
    runsCreatedInWindow: sum((window) => window.runsCreatedInWindow),
  };
}

/**
 * The runs the batched section creates ahead, outside its windows: as many as
 * `RUNS_AHEAD_PER_SECOND` runs a second over warm-up and window need, shared out over the loops.
 * 800 runs (8,000 lifecycle events) a second is above what any target reached on this machine; a
 * loop that runs out creates its runs in the window, counted in `runsCreatedInWindow`.
 */
export const RUNS_AHEAD_PER_SECOND = 800;

export function runsAheadPerLoop(loops: number, warmupMs: number, measureMs: number): number {
  return Math.ceil((RUNS_AHEAD_PER_SECOND * (warmupMs + measureMs)) / 1000 / loops);
}

/** Creates `count` runs for each loop, `concurrency` loops at a time (not measured). */
export async function createRunsAhead(createRuns: (() => Promise<string>)[], count: number, concurrency = 32): Promise<string[][]> {
  const runs: string[][] = createRuns.map(() => []);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, createRuns.length) }, async () => {
      while (next < createRuns.length) {
        const loop = next++;
        for (let run = 0; run < count; run++) runs[loop]!.push(await createRuns[loop]!());
      }
    }),
  );
  return runs;
}

/** Called as a measured window opens and as it closes, on timers set at its edges (lib/window-use.ts). */
export interface WindowEdges {
  open(): unknown;
  close(): unknown;
}

/** Calls the edges' functions at the window's start and end (performance.now() times); resolves after both. */
export function atEdges(edges: WindowEdges | undefined, windowStart: number, windowEnd: number): Promise<unknown> {
  if (!edges) return Promise.resolve();
  const at = (time: number, call: () => unknown) => new Promise((resolve) => setTimeout(resolve, time - performance.now())).then(call);
  return Promise.all([at(windowStart, () => edges.open()), at(windowEnd, () => edges.close())]);
}

/**
 * W workers each drive whole runs back to back (createRun, then the ten lifecycle events) for
 * `warmupMs + measureMs`. Only calls that start after the warm-up and end inside the window
 * count; a worker finishes the run it is in when the window closes, so no run is left open.
 * With `runsAhead`, each worker's runs are created before the warm-up (the batched section:
 * "lifecycle events" are claimRun … finishRun, and a createRun is the owner's request, outside
 * a worker's writer) and a worker takes the next of them instead of creating one.
 */
export async function measureWritePath(
  target: WriteTarget,
  workers: number,
  warmupMs: number,
  measureMs: number,
  runsAhead = 0,
  /** Called once the setup is done, as the warm-up begins. */
  started: () => Promise<void> = async () => {},
  edges?: WindowEdges,
): Promise<WriteWindow> {
  const prepared = await Promise.all(Array.from({ length: workers }, (_, worker) => target.prepare(worker)));
  const ahead = runsAhead > 0 ? await createRunsAhead(prepared.map((worker) => worker.createRun), runsAhead) : prepared.map((): string[] => []);
  await started();
  let runsCreatedInWindow = 0;
  const start = performance.now();
  const windowStart = start + warmupMs;
  const windowEnd = windowStart + measureMs;
  const edgesCalled = atEdges(edges, windowStart, windowEnd);
  const latencies = new Map<string, number[]>();
  let events = 0;
  let phaseEvents = 0;
  let runs = 0;
  const steps = runScript();

  const timed = async <T>(op: string, call: () => Promise<T>): Promise<T> => {
    const began = performance.now();
    const value = await call();
    const ended = performance.now();
    if (op !== 'createRun') phaseEvents++;
    if (began >= windowStart && ended <= windowEnd) {
      let list = latencies.get(op);
      if (!list) latencies.set(op, (list = []));
      list.push(ended - began);
      if (op !== 'createRun') events++;
    }
    return value;
  };

  await Promise.all(
    prepared.map(async (worker, index) => {
      while (performance.now() < windowEnd) {
        let runId = ahead[index]!.shift();
        if (runId === undefined) {
          if (runsAhead > 0) runsCreatedInWindow++;
          runId = await timed('createRun', () => worker.createRun());
        }
        let lease: Lease | null = null;
        for (const step of steps) lease = await timed(step.op, () => worker.step(runId, lease, step));
        if (performance.now() <= windowEnd) runs++;
      }
    }),
  );
  await edgesCalled;
  return {
    workers,
    seconds: measureMs / 1000,
    runs,
    events,
    eventsPerSecond: events / (measureMs / 1000),
    latencies,
    phaseEvents,
    runsCreatedInWindow,
  };
}
