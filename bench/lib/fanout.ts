// Live fan-out: N graphql-ws or SSE subscribers (a separate process) on one thread, while one worker
// drives tool status changes through the server. Latency runs from the commit of each change
// (the server's COMMIT, stamped by the probe) to its receipt by each subscriber.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { GraphQLHttp } from './graphql-http.js';
import type { Stream, Transport } from './fanout-subscribers.js';
import { ipcClient } from './ipc.js';
import { runScript, type Step } from './run-script.js';
import type { ServerProcess } from './server-process.js';
import { serverCreateRun, serverStep, type Lease } from './server-worker.js';
import { summarize, type Summary } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SUBSCRIBERS = fileURLToPath(new URL('./fanout-subscribers.ts', import.meta.url));
const BROADCAST_FLOOR = fileURLToPath(new URL('./broadcast-floor.ts', import.meta.url));
const TOOLS_PER_RUN = 10;
const now = () => performance.timeOrigin + performance.now();

/**
 * The share of the machine's CPU time (all cores) that was busy from this call to the returned
 * function's: near 1, latency is queueing for a core (the subscribers' process shares the
 * machine). Null where /proc/stat cannot be read.
 */
function machineBusy(): () => number | null {
  const read = () => {
    try {
      // user nice system idle iowait irq softirq steal
      const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
      return { idle: ticks[3]! + ticks[4]!, total: ticks.reduce((sum, value) => sum + value, 0) };
    } catch {
      return null;
    }
  };
  const start = read();
  return () => {
    const end = read();
    if (!start || !end || end.total === start.total) return null;
    return 1 - (end.idle - start.idle) / (end.total - start.total);
  };
}

interface Mutation {
  op: string;
  sentAt: number;
  respondedAt: number;
  /** Tool mutations: the toolStatusChanged event they must cause. */
  event?: { toolCallId: string; status: string };
}

/** Lost, duplicated and out-of-order states, summed over the subscribers (lib/fanout-subscribers.ts). */
export interface Integrity {
  subscribers: number;
  states: number;
  lost: number;
  /** Tools whose terminal state was received without their RUNNING state (a folded catch-up); also counted in `lost`. */
  folded: number;
  duplicated: number;
  outOfOrder: number;
  subscribersAffected: number;
  /** The most any one subscriber lost, got twice, or got out of order. */
  worstSubscriber: { lost: number; duplicated: number; outOfOrder: number };
}

export interface FanoutResult {
  transport: Transport;
  /** Concurrent writers on the thread. */
  writers: number;
  stream: Stream;
  /** Where the server's events travel: its own process, or Redis (REDIS_URL). */
  pubsub: 'memory' | 'redis';
  integrity: Integrity;
  subscribers: number;
  connected: number;
  events: number;
  expectedDeliveries: number;
  delivered: number;
  fewestPerSubscriber: number;
  complete: boolean;
  payloadsWithLaterStatus: number;
  /** Null when the COMMITs could not be matched one to one with the mutations. */
  fromCommitMs: Summary | null;
  /** Per event, from the COMMIT to its first receipt by any subscriber. */
  firstReceiptMs: Summary | null;
  /** The ten events received last after their COMMIT, when in the run, first and last receipt. */
  slowestEvents: { index: number; atSeconds: number; firstMs: number; lastMs: number }[];
  fromSendMs: Summary;
  commitStamps: string;
  toolMutationMs: Summary;
  seconds: number;
  /** Mutations the writer sent in the measured phase (each one change of the thread). */
  mutations: number;
  /** SQL statements the fanning-out server ran during the measured phase, per delivered event. */
  statementsPerDelivery: number;
  /** CPU of the server the subscribers are connected to (with Redis, another instance than the writer's). */
  serverCpuSeconds: number;
  /** The machine's busy share of CPU during the measured phase (every process: servers, subscribers, database). */
  machineBusy: number | null;
  /** The longest pause of the fan-out server's event loop, and of the subscribers' process, during the measured phase. */
  loopDelayMaxMs: { server: number; subscribers: number };
  errors: number;
  firstError?: string;
}

/**
 * Waits for the slot of the next mutation, `intervalMs` after the previous one's (none without an
 * interval): an open-loop writer, so the thread changes at a steady rate, the same in every row.
 */
function pacer(intervalMs: number | undefined): () => Promise<void> {
  let first: number | null = null;
  let sent = 0;
  return async () => {
    if (!intervalMs) return;
    first ??= now();
    const wait = first + sent++ * intervalMs - now();
    if (wait > 0) await pause(wait);
  };
}

async function driveRun(
  http: GraphQLHttp,
  ownerToken: string,
  workerToken: string,
  threadId: string,
  steps: Step[],
  log: Mutation[],
  pace: () => Promise<void> = async () => {},
) {
  const timed = async <T>(op: string, call: () => Promise<T>, event?: Mutation['event']) => {
    const sentAt = now();
    const value = await call();
    log.push({ op, sentAt, respondedAt: now(), event });
    return value;
  };
  await pace();
  const runId = await timed('createRun', () => serverCreateRun(http, ownerToken, threadId));
  let lease: Lease | null = null;
  for (const step of steps) {
    const event =
      step.op === 'recordToolStarted'
        ? { toolCallId: step.toolCallId, status: 'RUNNING' }
        : step.op === 'recordToolFinished'
          ? { toolCallId: step.toolCallId, status: 'COMPLETED' }
          : undefined;
    await pace();
    lease = await timed(step.op, () => serverStep(http, workerToken, runId, lease, step), event);
  }
}

export async function measureFanout(options: {
  /** The server the worker writes to (its COMMITs are stamped). */
  server: ServerProcess;
  /** The server the subscribers connect to: the same, or another instance sharing Redis. */
  fanoutServer: ServerProcess;
  http: GraphQLHttp;
  ownerToken: string;
  workerToken: string;
  threadId: string;
  transport: Transport;
  stream: Stream;
  pubsub: 'memory' | 'redis';
  subscribers: number;
  events: number;
  /** One mutation (one change of the thread) every this many ms; unset: each as soon as the previous one is answered. */
  intervalMs?: number;
  /**
   * Concurrent writers, each driving its own runs of the thread and sending its mutations at the
   * same instants as the others (each every `writers × intervalMs`, so the thread changes at the
   * same rate as with one): their commits land close together, as concurrent agents' do.
   */
  writers?: number;
  log: (line: string) => void;
}): Promise<FanoutResult> {
  const { server, fanoutServer, http, ownerToken, workerToken, threadId, transport, stream, pubsub, subscribers, events, intervalMs, log } = options;
  const writers = options.writers ?? 1;
  const child = spawn(process.execPath, [...(process.env.TRACE_GC ? ['--trace-gc'] : []), '--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = ipcClient(child);
  const prefix = `fan-${transport}-${stream}-${pubsub}-${subscribers}-`;
  try {
    const { connected } = await ask<{ connected: number }>({
      command: 'start',
      transport,
      url: transport === 'ws' ? fanoutServer.wsUrl : fanoutServer.url,
      token: ownerToken,
      threadId,
      subscribers,
      measuredPrefix: prefix,
      stream,
    });
    if (connected < subscribers) throw new Error(`only ${connected} of ${subscribers} subscribers connected`);

    // Warm up until every subscription is live: each subscriber has seen a whole warm-up run.
    for (let round = 1; ; round++) {
      await driveRun(http, ownerToken, workerToken, threadId, runScript(1, `warm-${prefix}${round}`), []);
      await pause(200);
      const progress = await ask<{ minTotal: number; errors: number; firstError?: string }>({ command: 'progress' });
      if (progress.errors) throw new Error(`subscriber errors during warm-up: ${progress.firstError}`);
      if (progress.minTotal >= 2) break;
      if (round >= 30) throw new Error(`some subscribers never received an event (min ${progress.minTotal})`);
    }
    const rate = intervalMs ? `, the thread changing every ${intervalMs.toFixed(1)} ms` : ', each mutation when the previous one is answered';
    log(`    ${subscribers} subscribers live; ${writers} writer(s) driving ${events} tool status changes${rate}`);

    const mutations: Mutation[] = [];
    const before = await fanoutServer.counts();
    await ask({ command: 'loop-delay' });
    await server.traceStart('commits');
    const busy = machineBusy();
    const started = performance.now();
    // Writer w drives runs w, w + writers, …: together every run of the single writer's script.
    await Promise.all(
      Array.from({ length: writers }, async (_, writer) => {
        const pace = pacer(intervalMs && intervalMs * writers);
        for (let run = writer; run * TOOLS_PER_RUN * 2 < events; run += writers) {
          const tools = Math.min(TOOLS_PER_RUN, (events - run * TOOLS_PER_RUN * 2) / 2);
          await driveRun(http, ownerToken, workerToken, threadId, runScript(tools, `${prefix}r${run}`), mutations, pace);
        }
      }),
    );
    const { complete } = await ask<{ complete: boolean }>({ command: 'wait', events, idleTimeoutMs: 20_000 });
    const subscribersLoopDelayMaxMs = await ask<number>({ command: 'loop-delay' });
    const seconds = (performance.now() - started) / 1000;
    const busyShare = busy();
    const commits = (await server.traceTake()).filter((statement) => statement.sql === 'COMMIT');
    const after = await fanoutServer.counts();

    // Concurrent writers' responses are not in commit order: their COMMITs cannot be matched one to one.
    const matched = writers === 1 && commits.length === mutations.length;
    const expected = mutations.flatMap((mutation, index) =>
      mutation.event ? [{ ...mutation.event, sentAt: mutation.sentAt, committedAt: matched ? commits[index]!.at : null }] : [],
    );
    const summary = await ask<Omit<FanoutResult, 'transport' | 'complete' | 'connected' | 'toolMutationMs' | 'seconds' | 'commitStamps' | 'statementsPerDelivery' | 'serverCpuSeconds'>>({
      command: 'summarize',
      expected,
    });
    const integrity = await ask<Integrity>({
      command: 'integrity',
      expected: expected.map(({ toolCallId, status }) => ({ toolCallId, status })),
      perTool: writers > 1,
    });
    return {
      ...summary,
      transport,
      writers,
      stream,
      pubsub,
      integrity,
      connected,
      complete,
      commitStamps: matched ? 'server COMMIT' : `unmatched (${commits.length} COMMITs for ${mutations.length} mutations from ${writers} writer(s))`,
      toolMutationMs: summarize(mutations.filter((m) => m.event).map((m) => m.respondedAt - m.sentAt)),
      seconds,
      mutations: mutations.length,
      machineBusy: busyShare,
      loopDelayMaxMs: { server: after.loopDelayMaxMs, subscribers: subscribersLoopDelayMaxMs },
      statementsPerDelivery: (after.statements - before.statements) / Math.max(1, summary.delivered),
      serverCpuSeconds: (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1e6,
    };
  } finally {
    await ask({ command: 'stop' }).catch(() => {});
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

export interface FanoutFloorResult {
  subscribers: number;
  events: number;
  intervalMs: number;
  expectedDeliveries: number;
  delivered: number;
  fromCommitMs: Summary | null;
  firstReceiptMs: Summary | null;
  /** The bare server's CPU per frame handed to a socket (sends complete synchronously here). */
  cpuMsPerDelivery: number;
  machineBusy: number | null;
}

const floorAudit = (toolCallId: string, status: string, k: number) => ({
  __typename: 'ToolAudit',
  id: `00000000-0000-4000-8000-${String(k).padStart(12, '0')}`,
  runId: '00000000-0000-4000-8000-000000000000',
  role: 'TOOL',
  operationId: toolCallId,
  sequence: String(k + 3),
  finishedSequence: status === 'RUNNING' ? null : String(k + 4),
  status,
  startedAt: new Date().toISOString(),
  finishedAt: status === 'RUNNING' ? null : new Date().toISOString(),
  durationMs: status === 'RUNNING' ? null : 120,
  toolCallId,
  name: 'search',
  effectiveInput: { query: 'quarterly revenue by region' },
  output: status === 'RUNNING' ? null : { content: 'Result of search: revenue grew 4.2%.', status: 'success', id: `msg-${toolCallId}`, name: 'search' },
  error: null,
  awaitingRunTerminal: false,
});

/**
 * The floor of fan-out: the same subscriber fleet connected to a bare WebSocket server that sends
 * each event as one ready-made frame per socket, at the event rate the server run achieved.
 */
export async function measureFanoutFloor(subscribers: number, events: number, intervalMs: number): Promise<FanoutFloorResult> {
  const floor = spawn(process.execPath, ['--import', 'tsx', BROADCAST_FLOOR], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const fleet = spawn(process.execPath, ['--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const askFloor = ipcClient(floor);
  const askFleet = ipcClient(fleet);
  const prefix = `floor${subscribers}-`;
  try {
    const { port } = await askFloor<{ port: number }>({ command: 'listen' });
    const { connected } = await askFleet<{ connected: number }>({
      command: 'start', transport: 'ws', url: `ws://127.0.0.1:${port}/graphql`, token: 'none', threadId: 'none', subscribers, measuredPrefix: prefix,
    });
    if (connected < subscribers) throw new Error(`only ${connected} of ${subscribers} subscribers connected to the floor`);
    for (let round = 0; ; round++) {
      await askFloor({ command: 'broadcast', audit: floorAudit(`warm-${round}`, 'RUNNING', round) });
      await pause(100);
      if ((await askFleet<{ minTotal: number }>({ command: 'progress' })).minTotal >= 1) break;
      if (round > 50) throw new Error('subscribers never received a frame from the floor');
    }
    const expected: { toolCallId: string; status: string; committedAt: number; sentAt: number }[] = [];
    let cpuUs = 0;
    let sent = 0;
    const busy = machineBusy();
    for (let k = 0; k < events; k++) {
      const toolCallId = `${prefix}${k >> 1}`;
      const status = k % 2 ? 'COMPLETED' : 'RUNNING';
      const broadcast = await askFloor<{ at: number; subscribers: number; cpuUs: number }>({ command: 'broadcast', audit: floorAudit(toolCallId, status, k) });
      const { at } = broadcast;
      cpuUs += broadcast.cpuUs;
      sent += broadcast.subscribers;
      expected.push({ toolCallId, status, committedAt: at, sentAt: at });
      await pause(intervalMs);
    }
    await askFleet({ command: 'wait', events, idleTimeoutMs: 20_000 });
    const busyShare = busy();
    const summary = await askFleet<{ expectedDeliveries: number; delivered: number; fromCommitMs: Summary | null; firstReceiptMs: Summary | null }>({
      command: 'summarize',
      expected,
    });
    return {
      subscribers,
      events,
      intervalMs,
      expectedDeliveries: summary.expectedDeliveries,
      delivered: summary.delivered,
      fromCommitMs: summary.fromCommitMs,
      firstReceiptMs: summary.firstReceiptMs,
      cpuMsPerDelivery: cpuUs / 1000 / Math.max(1, sent),
      machineBusy: busyShare,
    };
  } finally {
    await askFleet({ command: 'stop' }).catch(() => {});
    await askFloor({ command: 'stop' }).catch(() => {});
    for (const child of [fleet, floor]) if (child.exitCode === null) child.kill('SIGKILL');
  }
}
