// The batched write path (issue 45): W workers each drive R runs at once. On the server, each
// worker is one AuditClient whose batching writer (packages/client/src/event-writer.ts) sends the
// events that come while a request is in flight together in one `recordEvents`. The batch floor
// does the same events as the write floor's functions (lib/write-floor.ts), one transaction per
// batch: a worker's R runs step in lock-step, step k of all R runs in one transaction.
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { AuditClient, OPERATIONS, type FetchLike } from '@agent-audit/client';
import type { GraphQLHttp } from './graphql-http.js';
import { runScript, type Step } from './run-script.js';
import { serverCreateRun, serverCreateThread, serverStep, stepRequest, type Lease } from './server-worker.js';
import type { Sql } from './sql.js';
import { summarize, type Summary } from './stats.js';
import { floorCreateRun, floorCreateThread, floorStep } from './write-floor.js';
import { atEdges, createRunsAhead, type WindowEdges, type WriteTarget } from './write-path.js';

/** The clients' lifecycle requests: how many, and (while `timing`: the window) each one's latency to its answer's headers. */
interface RequestCounter {
  requests: number;
  timing: boolean;
  latenciesMs: number[];
}

/** A fetch that counts and times the requests sent through it (the clients with `--client-fetch`). */
function countingFetch(counter: RequestCounter): FetchLike {
  return async (input, init) => {
    counter.requests++;
    if (!counter.timing) return fetch(input, init);
    const sent = performance.now();
    const response = await fetch(input, init);
    counter.latenciesMs.push(performance.now() - sent);
    return response;
  };
}

/**
 * Counts and times the requests the clients send through their default transport, Node's HTTP
 * client (its diagnostics channels: no other request of this process goes through it; the bench's
 * own go through undici). Returns the function that stops counting.
 */
function countHttpRequests(counter: RequestCounter): () => void {
  const sentAt = new WeakMap<object, number>();
  const started = ({ request }: { request: object }) => {
    counter.requests++;
    if (counter.timing) sentAt.set(request, performance.now());
  };
  const answered = ({ request }: { request: object }) => {
    const sent = sentAt.get(request);
    if (sent !== undefined) counter.latenciesMs.push(performance.now() - sent);
  };
  diagnostics.subscribe('http.client.request.start', started as (message: unknown) => void);
  diagnostics.subscribe('http.client.response.finish', answered as (message: unknown) => void);
  return () => {
    diagnostics.unsubscribe('http.client.request.start', started as (message: unknown) => void);
    diagnostics.unsubscribe('http.client.response.finish', answered as (message: unknown) => void);
  };
}

/**
 * The server through the batching client: `measureWritePath` over W×R loops, each a run at a
 * time, the loops of one worker sharing its client (so its writer coalesces their events).
 * `requests` counts the lifecycle requests the clients sent (the events per request is the
 * batch size the writer reached).
 * `clientFetch`: the clients send through the global fetch (their transport before runs BC…)
 * instead of their default. `stop()` ends the counting once the window is done.
 */
export function batchedServerTarget(url: string, http: GraphQLHttp, ownerToken: string, workerTokens: string[], runsAtOnce: number, clientFetch = false) {
  const counter: RequestCounter = { requests: 0, timing: false, latenciesMs: [] };
  const fetchImpl = clientFetch ? countingFetch(counter) : undefined;
  const stop = clientFetch ? () => {} : countHttpRequests(counter);
  const clients = new Map<number, AuditClient>();
  const target: WriteTarget = {
    async prepare(loop) {
      const worker = Math.floor(loop / runsAtOnce);
      let client = clients.get(worker);
      if (!client) clients.set(worker, (client = new AuditClient({ url, token: workerTokens[worker]!, fetch: fetchImpl })));
      const threadId = await serverCreateThread(http, ownerToken, `bench batched worker ${worker}.${loop % runsAtOnce}`);
      return {
        createRun: () => serverCreateRun(http, ownerToken, threadId),
        step: (runId, lease, step) => clientStep(client, runId, lease, step),
      };
    },
  };
  return { target, counter, stop };
}

/** One step of the run script through a client's methods, with the same inputs the unbatched path sends (server-worker.ts). */
export async function clientStep(client: AuditClient, runId: string, lease: Lease | null, step: Step): Promise<Lease | null> {
  if (step.op === 'claimRun') {
    const claimed = await client.claimRun(runId, step.leaseSeconds);
    return { runId: claimed.runId, epoch: claimed.epoch };
  }
  const input = stepRequest(runId, lease, step).variables.input as never;
  if (step.op === 'recordModelStarted') await client.recordModelStarted(input);
  else if (step.op === 'recordModelFinished') await client.recordModelFinished(input);
  else if (step.op === 'recordToolStarted') await client.recordToolStarted(input);
  else if (step.op === 'recordToolFinished') await client.recordToolFinished(input);
  else {
    await client.finishRun(input);
    return null;
  }
  return lease;
}

export interface BatchFloorWindow {
  workers: number;
  runsAtOnce: number;
  seconds: number;
  events: number;
  eventsPerSecond: number;
  /** Transactions (one per batch) that ended inside the window. */
  batches: number;
  /** With runs created ahead: the runs still created in the window (a worker ran out). */
  runsCreatedInWindow: number;
  /** Each counted batch's transaction, ms (its wait for a connection included). */
  batchLatenciesMs: number[];
}

/**
 * The batch floor: W workers, each driving R runs in lock-step until the window ends; each step
 * of the R runs (the claims too) is one transaction of R floor calls. Events of transactions that
 * start after the warm-up and end inside the window count.
 */
export async function measureBatchFloor(
  sql: Sql,
  ownerSub: string,
  workerSubs: string[],
  workers: number,
  runsAtOnce: number,
  warmupMs: number,
  measureMs: number,
  runsAhead = 0,
  edges?: WindowEdges,
): Promise<BatchFloorWindow> {
  const threads = await Promise.all(Array.from({ length: workers }, () => floorCreateThread(sql, ownerSub)));
  const ahead = await createRunsAhead(
    threads.map((threadId) => () => floorCreateRun(sql, ownerSub, threadId)),
    runsAhead,
  );
  let runsCreatedInWindow = 0;
  const windowStart = performance.now() + warmupMs;
  const windowEnd = windowStart + measureMs;
  const edgesCalled = atEdges(edges, windowStart, windowEnd);
  const steps = runScript();
  let events = 0;
  let batches = 0;
  const batchLatenciesMs: number[] = [];
  await Promise.all(
    threads.map(async (threadId, worker) => {
      const sub = workerSubs[worker]!;
      while (performance.now() < windowEnd) {
        const runIds = ahead[worker]!.splice(0, runsAtOnce);
        if (runIds.length < runsAtOnce) {
          if (runsAhead > 0) runsCreatedInWindow += runsAtOnce - runIds.length;
          await sql.transaction(async (tx) => {
            while (runIds.length < runsAtOnce) runIds.push(await floorCreateRun(tx, ownerSub, threadId));
          });
        }
        let leases: (Lease | null)[] = runIds.map(() => null);
        for (const step of steps) {
          const began = performance.now();
          // One transaction per batch; its calls one after another, as a batch applies them in order.
          leases = await sql.transaction(async (tx) => {
            const next: (Lease | null)[] = [];
            for (const [index, runId] of runIds.entries()) next.push(await floorStep(tx, sub, runId, leases[index]!, step));
            return next;
          });
          const ended = performance.now();
          if (began >= windowStart && ended <= windowEnd) {
            events += runsAtOnce;
            batches++;
            batchLatenciesMs.push(ended - began);
          }
        }
      }
    }),
  );
  await edgesCalled;
  return { workers, runsAtOnce, seconds: measureMs / 1000, events, eventsPerSecond: events / (measureMs / 1000), batches, runsCreatedInWindow, batchLatenciesMs };
}

/** A lifecycle step as one event of `recordEvents` (the schema's LifecycleEventInput). */
function batchEventOf(runId: string, lease: Lease, step: Step): Record<string, unknown> {
  const input = stepRequest(runId, lease, step).variables.input;
  const field = { recordModelStarted: 'modelStarted', recordModelFinished: 'modelFinished', recordToolStarted: 'toolStarted', recordToolFinished: 'toolFinished', finishRun: 'finishRun' }[
    step.op as Exclude<Step['op'], 'claimRun'>
  ];
  return { [field]: input };
}

const IDLE_MS = 2000;

export interface FixedBatchesWindow {
  workers: number;
  batchSize: number;
  /** Seconds spent sending the batches (setup excluded), summed over the passes. */
  seconds: number;
  events: number;
  requests: number;
  eventsPerSecond: number;
  /** The server's CPU (user + system) while only the batches were in flight, per event. */
  serverCpuMsPerEvent: number;
  /**
   * The server's CPU per second while idle (timers, pollers, the probe), read for 2 s before the
   * passes, and the CPU per event without that much per second of the batches: the idle part
   * weighs more the fewer events a second the database lets through.
   */
  serverIdleCpuMsPerSecond: number;
  serverCpuMsPerEventNetOfIdle: number;
  /** Each batch request's latency. */
  requestLatencyMs: Summary;
}

/**
 * Server cost per event in batches of exactly `batchSize` (issue 45's "≤ 0.15 ms in batches of
 * 50"), which the batching client reaches only when that many events wait. Each pass: every worker
 * creates and claims `batchSize` runs (not measured), then, all together, sends each later step of
 * its runs as one `recordEvents` of `batchSize` events (nine requests a worker); the server's CPU is
 * read around that part only.
 */
export async function measureFixedBatches(
  http: GraphQLHttp,
  ownerToken: string,
  workerTokens: string[],
  workers: number,
  batchSize: number,
  passes: number,
  serverCpuUs: () => Promise<number>,
  around: (body: () => Promise<void>) => Promise<void> = (body) => body(),
): Promise<FixedBatchesWindow> {
  const steps = runScript();
  const [claim, ...later] = steps;
  const threads = await Promise.all(Array.from({ length: workers }, (_, worker) => serverCreateThread(http, ownerToken, `bench fixed batches ${worker}`)));
  let seconds = 0;
  let events = 0;
  let requests = 0;
  let cpuUs = 0;
  const latencies: number[] = [];
  const idleFrom = await serverCpuUs();
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const idleCpuMsPerSecond = ((await serverCpuUs()) - idleFrom) / IDLE_MS;
  for (let pass = 0; pass < passes; pass++) {
    const leases = await Promise.all(
      threads.map(async (threadId, worker) => {
        const runs: Lease[] = [];
        for (let run = 0; run < batchSize; run++) {
          const runId = await serverCreateRun(http, ownerToken, threadId);
          runs.push((await serverStep(http, workerTokens[worker]!, runId, null, claim!))!);
        }
        return runs;
      }),
    );
    await around(async () => {
      const cpuBefore = await serverCpuUs();
      const began = performance.now();
      await Promise.all(
        leases.map(async (runs, worker) => {
          for (const step of later) {
            const sent = performance.now();
            const data = await http.must(OPERATIONS.recordEvents.document, { events: runs.map((lease) => batchEventOf(lease.runId, lease, step)) }, workerTokens[worker]!);
            latencies.push(performance.now() - sent);
            const refused = (data.recordEvents as { error: { code: string; message: string } | null }[]).find((result) => result.error);
            if (refused) throw new Error(`A fixed batch's event was refused: ${refused.error!.code} ${refused.error!.message}`);
            events += runs.length;
            requests++;
          }
        }),
      );
      seconds += (performance.now() - began) / 1000;
      cpuUs += (await serverCpuUs()) - cpuBefore;
    });
  }
  return {
    workers,
    batchSize,
    seconds,
    events,
    requests,
    eventsPerSecond: events / seconds,
    serverCpuMsPerEvent: cpuUs / 1000 / events,
    serverIdleCpuMsPerSecond: idleCpuMsPerSecond,
    serverCpuMsPerEventNetOfIdle: (cpuUs / 1000 - idleCpuMsPerSecond * seconds) / events,
    requestLatencyMs: summarize(latencies),
  };
}
