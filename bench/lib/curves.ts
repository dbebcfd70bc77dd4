// Cost curves (issue 18): how each path's cost grows with the data already there. Each curve
// measures the same thing at growing sizes and says whether the cost grew with them.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import type { Backend } from './backend.js';
import { bulkSeed } from './bulk-seed.js';
import { GraphQLHttp } from './graphql-http.js';
import { ipcClient } from './ipc.js';
import type { ServerProcess } from './server-process.js';
import { driveChanges, serverChangeCursor, serverCreateThread, serverHasThreadChanges } from './server-worker.js';
import type { Sql } from './sql.js';
import { round } from './stats.js';
import { measureFloorRead, measureServerRead } from './timeline.js';
import { floorTarget, measureWritePath, serverTarget } from './write-path.js';

export const CURVES = ['write', 'read', 'catchup', 'memory'] as const;
export type Curve = (typeof CURVES)[number];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SUBSCRIBERS = fileURLToPath(new URL('./fanout-subscribers.ts', import.meta.url));

/** Sizes at scale 1 (issue 18); `--scale` multiplies them. */
export const CURVE_SIZES = {
  write: [0, 1_000_000, 5_000_000],
  read: [5_000, 50_000, 500_000],
  catchup: [1_000, 10_000],
  memory: [1_000, 10_000],
};
/**
 * "Grows" when the largest size costs more than this factor of the smallest's (per unit where the
 * work itself is proportional: per change, per subscriber). Generous, as this machine drifts.
 */
export const GROWTH_THRESHOLD = 1.5;

export interface CurvesContext {
  backend: Backend;
  curves: Curve[];
  scale: number;
  ownerSub: string;
  ownerToken: string;
  workerSubs: string[];
  workerTokens: string[];
  /** The write curve's concurrency. */
  workers: number;
  warmupMs: number;
  windowMs: number;
  rounds: number;
  readIterations: number;
  /** Starts a fresh server process on the backend (stopped by the curve). */
  startServer(): Promise<ServerProcess>;
  log(line: string): void;
}

const scaled = (sizes: number[], scale: number) => sizes.map((size) => Math.round(size * scale));

/** Seeds on the server's database and, where the floor has its own (PGlite), there too. The server must be stopped. */
async function seedBoth(backend: Backend, seed: (sql: Sql) => Promise<string[]>): Promise<{ server: string[]; floor: string[] }> {
  const server = await backend.beforeServer(seed);
  const floor = backend.floorSharesServerData ? server : await seed(backend.floor);
  return { server, floor };
}

async function withServer<T>(context: CurvesContext, body: (server: ServerProcess, http: GraphQLHttp) => Promise<T>): Promise<T> {
  const server = await context.startServer();
  const http = new GraphQLHttp(server.url);
  try {
    return await body(server, http);
  } finally {
    http.close();
    await server.stop();
  }
}

const verdict = (first: number | null, last: number | null) =>
  first === null || last === null || !Number.isFinite(first) || !Number.isFinite(last) ? 'not measured' : last > first * GROWTH_THRESHOLD ? 'grows' : 'flat';

/** Write-path throughput with 0, 1 M and 5 M audit rows already in the table (in threads of 1,000). */
async function writeCurve(context: CurvesContext) {
  const { backend, log } = context;
  const rows = [];
  let seeded = 0;
  for (const audits of scaled(CURVE_SIZES.write, context.scale)) {
    if (audits > seeded) {
      const auditsPerThread = 1000;
      const threads = Math.ceil((audits - seeded) / auditsPerThread);
      log(`  write curve: seeding ${threads * auditsPerThread} more audits (${audits} in all)…`);
      const began = performance.now();
      await seedBoth(backend, (sql) => bulkSeed(sql, { ownerSub: 'bench-ballast', threads, auditsPerThread, title: 'ballast' }));
      seeded += threads * auditsPerThread;
      log(`    seeded in ${Math.round((performance.now() - began) / 1000)} s`);
    }
    const row = await withServer(context, async (_server, http) => {
      // A fresh server compiles each document on first use: a few whole runs first, unmeasured.
      const warmThread = await serverCreateThread(http, context.ownerToken, 'warm-up');
      await driveChanges(http, context.ownerToken, context.workerTokens, warmThread, context.workerTokens.length * 11, 'warm-');
      let server = 0;
      let floor = 0;
      for (let round = 0; round < context.rounds; round++) {
        const warmupMs = round === 0 ? context.warmupMs : 1000;
        const floorWindow = await measureWritePath(floorTarget(backend.floor, context.ownerSub, context.workerSubs), context.workers, warmupMs, context.windowMs);
        const serverWindow = await measureWritePath(serverTarget(http, context.ownerToken, context.workerTokens), context.workers, warmupMs, context.windowMs);
        floor += floorWindow.eventsPerSecond / context.rounds;
        server += serverWindow.eventsPerSecond / context.rounds;
      }
      return { auditsInTable: seeded, serverEventsPerSecond: round(server, 1), floorEventsPerSecond: round(floor, 1) };
    });
    log(`    ${row.auditsInTable} audits in the table: server ${row.serverEventsPerSecond} events/s, floor ${row.floorEventsPerSecond}`);
    rows.push(row);
  }
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  // Cost per event is the inverse of throughput.
  const inverse = (value: number | null) => (value ? 1 / value : null);
  return {
    workers: context.workers,
    rows,
    server: verdict(inverse(first.serverEventsPerSecond), inverse(last.serverEventsPerSecond)),
    floor: verdict(inverse(first.floorEventsPerSecond), inverse(last.floorEventsPerSecond)),
  };
}

/** threadAudits(limit: 500) p50 on threads of 5 k, 50 k and 500 k audits: it must stay flat. */
async function readCurve(context: CurvesContext) {
  const { backend, log } = context;
  // At least a full page more than the limit, whatever the scale.
  const sizes = scaled(CURVE_SIZES.read, context.scale).map((size) => Math.max(size, 600));
  const threads: { audits: number; server: string; floor: string }[] = [];
  for (const audits of sizes) {
    log(`  read curve: seeding a thread of ${audits} audits…`);
    const seeded = await seedBoth(backend, (sql) => bulkSeed(sql, { ownerSub: context.ownerSub, threads: 1, auditsPerThread: audits, title: `read curve ${audits}` }));
    threads.push({ audits, server: seeded.server[0]!, floor: seeded.floor[0]! });
  }
  const rows = await withServer(context, async (_server, http) => {
    const measured = [];
    for (const thread of threads) {
      const server = await measureServerRead(http, context.ownerToken, thread.server, 500, context.readIterations);
      const floor = await measureFloorRead(backend.floor, context.ownerSub, thread.floor, 500, context.readIterations);
      measured.push({ audits: thread.audits, serverP50Ms: round(server.latencyMs.p50), floorP50Ms: round(floor.latencyMs.p50), items: server.items });
      log(`    ${thread.audits} audits: server p50 ${round(server.latencyMs.p50)} ms, floor ${round(floor.latencyMs.p50)} ms`);
    }
    return measured;
  });
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  return { limit: 500, rows, server: verdict(first.serverP50Ms, last.serverP50Ms), floor: verdict(first.floorP50Ms, last.floorP50Ms) };
}

const CATCH_UP = /* GraphQL */ `
  subscription CatchUp($threadId: ID!, $after: String) { threadChanges(threadId: $threadId, after: $after) { cursor audit { id status } run { id status } } }`;

/** Subscribes to threadChanges after `after` and times the arrival of the change with cursor `until`. */
async function timeCatchUp(wsUrl: string, token: string, threadId: string, after: string, until: string) {
  const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
  let events = 0;
  let subscribedAt = 0;
  let firstAt: number | null = null;
  try {
    return await new Promise<{ ms: number; firstEventMs: number | null; events: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`catch-up not done within 120 s (${events} events)`)), 120_000);
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
      socket.on('error', reject);
      socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') {
          subscribedAt = performance.now();
          socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: CATCH_UP, variables: { threadId, after } } }));
        } else if (message.type === 'next') {
          if (message.payload.errors) return reject(new Error(JSON.stringify(message.payload.errors)));
          events++;
          firstAt ??= performance.now();
          if (message.payload.data.threadChanges.cursor === until) {
            clearTimeout(timer);
            resolve({ ms: performance.now() - subscribedAt, firstEventMs: firstAt - subscribedAt, events });
          }
        } else if (message.type === 'error') {
          reject(new Error(JSON.stringify(message.payload)));
        }
      });
    });
  } finally {
    socket.close(1000);
  }
}

/** Catch-up of threadChanges after 1 k and 10 k changes: from subscribing to the latest change's arrival. */
async function catchUpCurve(context: CurvesContext) {
  const { log } = context;
  return withServer(context, async (server, http) => {
    if (!(await serverHasThreadChanges(http, context.ownerToken))) return { skipped: 'the server has no Subscription.threadChanges yet (issue 20)' };
    const rows = [];
    for (const changes of scaled(CURVE_SIZES.catchup, context.scale)) {
      const threadId = await serverCreateThread(http, context.ownerToken, `catch-up ${changes}`);
      const after = await serverChangeCursor(http, context.ownerToken, threadId);
      log(`  catch-up curve: writing ${changes} changes…`);
      const written = await driveChanges(http, context.ownerToken, context.workerTokens.slice(0, 4), threadId, changes, `catchup-${changes}-`);
      const until = await serverChangeCursor(http, context.ownerToken, threadId);
      const timed = await timeCatchUp(server.wsUrl, context.ownerToken, threadId, after, until);
      const row = { changes: written, catchUpMs: round(timed.ms), firstEventMs: round(timed.firstEventMs ?? NaN), events: timed.events, msPerChange: round(timed.ms / written, 4) };
      log(`    ${written} changes caught up in ${row.catchUpMs} ms (${timed.events} events, first after ${row.firstEventMs} ms)`);
      rows.push(row);
    }
    return { rows, perChange: verdict(rows[0]!.msPerChange, rows[rows.length - 1]!.msPerChange) };
  });
}

/** The server's memory per idle subscriber at 1 k and 10 k subscribers (one graphql-ws socket each). */
async function memoryCurve(context: CurvesContext) {
  const { log } = context;
  return withServer(context, async (server, http) => {
    const stream = (await serverHasThreadChanges(http, context.ownerToken)) ? 'threadChanges' : 'toolStatusChanged';
    const threadId = await serverCreateThread(http, context.ownerToken, 'idle subscribers');
    const rows = [];
    for (const subscribers of scaled(CURVE_SIZES.memory, context.scale)) {
      const before = await server.memory();
      const fleet = spawn(process.execPath, ['--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const ask = ipcClient(fleet);
      try {
        log(`  memory curve: ${subscribers} idle ${stream} subscribers…`);
        const { connected } = await ask<{ connected: number }>({
          command: 'start', transport: 'ws', url: server.wsUrl, token: context.ownerToken, threadId, subscribers, measuredPrefix: 'idle-', stream,
        });
        if (connected < subscribers) throw new Error(`only ${connected} of ${subscribers} subscribers connected`);
        await pause(1000); // subscriptions are set up after the ack
        const after = await server.memory();
        const perSubscriberKiB = (key: 'rss' | 'heapUsed') => round((after[key] - before[key]) / subscribers / 1024, 1);
        const row = { subscribers, rssKiBPerSubscriber: perSubscriberKiB('rss'), heapKiBPerSubscriber: perSubscriberKiB('heapUsed'), heapUsedMiB: round(after.heapUsed / 2 ** 20, 1) };
        log(`    ${row.rssKiBPerSubscriber} KiB RSS, ${row.heapKiBPerSubscriber} KiB heap per subscriber`);
        rows.push(row);
      } finally {
        await ask({ command: 'stop' }).catch(() => {});
        if (fleet.exitCode === null) fleet.kill('SIGKILL');
      }
      await pause(500);
    }
    return { stream, rows, perSubscriber: verdict(rows[0]!.heapKiBPerSubscriber, rows[rows.length - 1]!.heapKiBPerSubscriber) };
  });
}

export async function runCurves(context: CurvesContext) {
  const report: Partial<Record<Curve, unknown>> = {};
  const curves: Record<Curve, (context: CurvesContext) => Promise<unknown>> = { write: writeCurve, read: readCurve, catchup: catchUpCurve, memory: memoryCurve };
  for (const curve of CURVES) {
    if (!context.curves.includes(curve)) continue;
    context.log(`Cost curve: ${curve}…`);
    try {
      report[curve] = await curves[curve](context);
    } catch (error) {
      // The other curves are still worth recording.
      context.log(`  ${curve} curve failed: ${String(error)}`);
      report[curve] = { error: String(error) };
    }
  }
  return report;
}
