// DATABASE_URL=<admin URL> npx tsx bench/dashboards.ts [--principals 100] [--per 10] [--workers 32] [--seconds 20] [--warmup 3] [--rounds 2] [--pace <events/s>] [--profile]
//   DATABASE_URL=<admin URL> REDIS_URL=<url> npx tsx bench/dashboards.ts --signals [--principals 100] [--per 10] [--seconds 20] [--warmup 3] [--rounds 2] [--profile]
//
// Live dashboards under write load (issue 40, docs/dashboards.md): `principals` × `per` identical
// toolActivity subscriptions over graphql-ws (one socket per principal, `per` subscriptions on
// it) while `workers` writers drive whole runs (two tool calls each) through the server's HTTP
// API, the runs' threads spread over the principals. Against the same load without dashboards,
// on a fresh server process each window, rounds interleaved:
// - latency: from a tool audit write's answer (its commit is just before it) to the arrival of
//   the first view that includes it, for each of the principal's subscriptions. A view includes
//   the n-th change of its owner when its buckets count n more starts and ends than the first
//   view did (the window is an hour: nothing leaves it during the run). Each owner is written by
//   one worker, so its changes commit in the order their answers arrive.
// - throughput: the writers' events/s with dashboards over without, per round.
// - CPU: the server process's CPU seconds per second with and without, and the views it read
//   per second (distinct `at` per principal: identical subscriptions share one read). The
//   dashboards' share of the server's CPU is what it spent with them less what the writes it
//   served would have cost without (the window without's CPU per event); per view and per
//   message (a view sent to each of `per` subscriptions) it is that over their rates. The bench
//   process's own CPU (its writers' clients, and with dashboards their 1,000 subscribers parsing
//   every message) the same way.
//   Each window also prints where the machine's cores went while it was measured
//   (lib/window-use.ts): the server's main thread (its event loop: near 1 when it is the
//   bottleneck), PostgreSQL's backends, idle.
// - with --pace, the writers write at most that many events a second between them (each worker
//   its share, on a fixed schedule), so that both windows serve the same writes however loaded
//   the machine is: the server's CPU with dashboards less without is then the dashboards' alone.
// - with --signals, no writers at all: the dashboards' own cost. Every second each owner's
//   activity signal is published on Redis (the channel other instances tell of commits on,
//   src/realtime/activity-signal.ts), so each feed reads and sends a view a second, against
//   windows without signals (the same sockets, idle); the server's and the bench's CPU over the
//   views sent. Nothing else runs in the server, so this holds on a loaded machine too.
// - with --profile, a V8 CPU profile of the server in each mode's first window, summarized into
//   the report (files under bench/results/profile-dashboards-<time>/).
// PostgreSQL only; one server, no Redis (its views follow its own commits in process).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/jwt.js';
import { openPostgresBackend } from './lib/backend.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { serverCreateRun, serverCreateThread, serverStep } from './lib/server-worker.js';
import { summarizeProfile } from './lib/cpuprofile.js';
import type { CpuShares } from './lib/cpu-shares.js';
import { round, summarize, table } from './lib/stats.js';
import { windowUse } from './lib/window-use.js';
import { measureWritePath, type WriteTarget } from './lib/write-path.js';

const { values: flags } = parseArgs({
  options: {
    principals: { type: 'string', default: '100' },
    per: { type: 'string', default: '10' },
    workers: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    pace: { type: 'string' },
    signals: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const principals = Number(flags.principals);
const per = Number(flags.per);
const workers = Number(flags.workers);
const windowMs = Number(flags.seconds) * 1000;
const warmupMs = Number(flags.warmup) * 1000;
const rounds = Number(flags.rounds);
/** With --pace: how long each worker leaves between the starts of its events. */
const paceMs = flags.pace ? (1000 * workers) / Number(flags.pace) : 0;
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error('Set DATABASE_URL to a PostgreSQL admin URL (a fresh database is created and dropped)');

const VIEW = `subscription { toolActivity(windowSeconds: 3600) { at buckets { started completed failed otherEnded } } }`;
const TOOL_OPS = new Set(['recordToolStarted', 'recordToolFinished']);
/** How long after the writers stop a change may still be waited for. */
const GRACE_MS = 5000;

interface Arrival {
  at: number;
  total: number;
  viewAt: string;
}

/** One principal's dashboard: `per` identical subscriptions on one graphql-ws socket. */
function dashboard(url: string, token: string) {
  const arrivals: Arrival[][] = Array.from({ length: per }, () => []);
  const errors: string[] = [];
  const socket = new WebSocket(url, 'graphql-transport-ws');
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const at = performance.now(); // stamped before parsing: a frame's cost here is not the server's latency
    const message = JSON.parse(String(data)) as { id?: string; type: string; payload?: any };
    if (message.type === 'connection_ack') {
      for (let k = 0; k < per; k++) socket.send(JSON.stringify({ id: String(k), type: 'subscribe', payload: { query: VIEW } }));
    } else if (message.type === 'next') {
      const view = message.payload?.data?.toolActivity;
      if (!view) return void errors.push(JSON.stringify(message.payload?.errors ?? message.payload));
      let total = 0;
      for (const bucket of view.buckets) total += bucket.started + bucket.completed + bucket.failed + bucket.otherEnded;
      arrivals[Number(message.id)]!.push({ at, total, viewAt: view.at });
    } else if (message.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
    else if (message.type !== 'pong') errors.push(`${message.type}: ${JSON.stringify(message.payload ?? null)}`);
  });
  socket.on('error', (error) => errors.push(error.message));
  return {
    arrivals,
    errors,
    ready: () => arrivals.every((list) => list.length > 0),
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close(1000);
      }),
  };
}

/** The writers: worker w writes the threads of owners w, w + workers, …; each tool audit change's answer time is kept per owner. */
function target(http: GraphQLHttp, ownerTokens: string[], workerTokens: string[], changes: number[][]): WriteTarget {
  return {
    async prepare(worker) {
      const owners = ownerTokens.map((_, owner) => owner).filter((owner) => owner % workers === worker);
      const threads = await Promise.all(owners.map((owner) => serverCreateThread(http, ownerTokens[owner]!, `dashboards bench ${owner}`)));
      let turn = -1;
      let current = 0;
      let nextStartAt = 0;
      return {
        createRun: () => {
          turn = (turn + 1) % owners.length;
          current = owners[turn]!;
          return serverCreateRun(http, ownerTokens[current]!, threads[turn]!);
        },
        step: async (runId, lease, step) => {
          if (paceMs) {
            nextStartAt = Math.max(nextStartAt + paceMs, performance.now());
            await sleep(nextStartAt - performance.now());
          }
          const owner = current;
          const next = await serverStep(http, workerTokens[worker]!, runId, lease, step);
          if (TOOL_OPS.has(step.op)) changes[owner]!.push(performance.now());
          return next;
        },
      };
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpuSeconds = async (server: ServerProcess) => {
  const { cpu } = await server.counts();
  return (cpu.user + cpu.system) / 1e6;
};
const benchCpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One figure of each window, by kind of window, for the report. */
const eachWindow = <T,>(windows: Record<'without' | 'with', T[]>, pick: (window: T) => number | null) => ({
  without: windows.without.map((window) => round(pick(window) ?? NaN, 3)),
  with: windows.with.map((window) => round(pick(window) ?? NaN, 3)),
});
const itself = (value: number) => value;

async function main() {
  const started = Date.now();
  const loadAtStart = os.loadavg().map((value) => round(value, 2));
  const backend = await openPostgresBackend(adminUrl!);
  const secret = randomBytes(32).toString('base64url');
  const ownerTokens = await Promise.all(Array.from({ length: principals }, (_, i) => mintToken(secret, { sub: `bench-dashboard-${i}`, role: 'superadmin' }, '2h')));
  const workerTokens = await Promise.all(Array.from({ length: workers }, (_, i) => mintToken(secret, { sub: `bench-dashboard-worker-${i}`, role: 'worker' }, '2h')));
  const rates: Record<'without' | 'with', number[]> = { without: [], with: [] };
  const cpu: Record<'without' | 'with', number[]> = { without: [], with: [] };
  const benchCpu: Record<'without' | 'with', number[]> = { without: [], with: [] };
  /** Where the machine's cores went in each window (lib/cpu-shares.ts). */
  const shares: Record<'without' | 'with', CpuShares[]> = { without: [], with: [] };
  const profileDir = flags.profile ? join(import.meta.dirname, 'results', `profile-dashboards-${new Date(started).toISOString().replace(/[:.]/g, '-')}`) : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const profiles: (ReturnType<typeof summarizeProfile> & { mode: string })[] = [];
  const latencies: number[] = [];
  const viewsPerSecond: number[] = [];
  let missing = 0;
  let errors: string[] = [];
  console.log(`${principals} principals × ${per} subscriptions, ${workers} writers${paceMs ? ` paced to ${flags.pace} events/s` : ''}, ${rounds} round(s) of ${windowMs / 1000} s (+${warmupMs / 1000} s warm-up); load ${loadAtStart.join(' ')}`);
  try {
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['without', 'with'] as const) {
        const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret, REDIS_URL: '' });
        const http = new GraphQLHttp(server.url);
        const dashboards = mode === 'with' ? ownerTokens.map((token) => dashboard(server.wsUrl, token)) : [];
        try {
          const deadline = Date.now() + 60_000;
          while (!dashboards.every((d) => d.ready())) {
            if (Date.now() > deadline) throw new Error(`dashboards not ready: ${dashboards.flatMap((d) => d.errors).slice(0, 3).join('; ')}`);
            await sleep(50);
          }
          const baselines = dashboards.map((d) => d.arrivals[0]![0]!.total);
          const changes: number[][] = ownerTokens.map(() => []);
          const profiling = profileDir !== null && r === 0;
          if (profiling) await server.profileStart();
          const cpuBefore = await cpuSeconds(server);
          const benchCpuBefore = benchCpuSeconds();
          const machineUse = windowUse(server.pid, backend.database, null);
          const windowStart = performance.now();
          const window = await measureWritePath(target(http, ownerTokens, workerTokens, changes), workers, warmupMs, windowMs, 0, undefined, machineUse.edges);
          const machine = (await machineUse.use()).cpu;
          const seconds = (performance.now() - windowStart) / 1000;
          const benchCpuPerSecond = (benchCpuSeconds() - benchCpuBefore) / seconds;
          const cpuPerSecond = ((await cpuSeconds(server)) - cpuBefore) / seconds;
          if (profiling) profiles.push({ ...summarizeProfile(await server.profileStop(join(profileDir, `${mode}.cpuprofile`))), mode });
          rates[mode].push(window.eventsPerSecond);
          cpu[mode].push(cpuPerSecond);
          benchCpu[mode].push(benchCpuPerSecond);
          shares[mode].push(machine);
          let note = '';
          if (mode === 'with') {
            await sleep(GRACE_MS);
            const reads = new Set<string>();
            for (const [owner, d] of dashboards.entries()) {
              for (const list of d.arrivals) for (const arrival of list) if (arrival.at >= windowStart) reads.add(`${owner} ${arrival.viewAt}`);
              changes[owner]!.forEach((answeredAt, n) => {
                for (const list of d.arrivals) {
                  const first = list.find((arrival) => arrival.total >= baselines[owner]! + n + 1);
                  if (first) latencies.push(Math.max(0, first.at - answeredAt));
                  else missing++;
                }
              });
            }
            errors = [...errors, ...dashboards.flatMap((d) => d.errors)];
            viewsPerSecond.push(reads.size / seconds);
            note = `, ${Math.round(reads.size / seconds)} views read/s, ${changes.flat().length} tool audit changes`;
          }
          console.log(`  round ${r + 1}, ${mode} dashboards: ${Math.round(window.eventsPerSecond)} events/s, server CPU ${round(cpuPerSecond, 2)} s/s, bench CPU ${round(benchCpuPerSecond, 2)} s/s, the server's main thread ${round(machine.serverMain ?? NaN, 2)} s/s, PostgreSQL ${round(machine.postgres ?? NaN, 2)} s/s, idle ${round(machine.idle ?? NaN, 2)} cores${note}`);
        } finally {
          await Promise.all(dashboards.map((d) => d.close()));
          http.close();
          await server.stop();
        }
      }
    }
  } finally {
    await backend.close();
  }
  const latency = summarize(latencies);
  const ratio = median(rates.with.map((rate, i) => rate / rates.without[i]!));
  const dashboardsCpu = median(cpu.with.map((used, i) => used - (cpu.without[i]! / rates.without[i]!) * rates.with[i]!));
  const views = median(viewsPerSecond);
  const report = {
    principals,
    per,
    workers,
    pace: flags.pace ? Number(flags.pace) : null,
    rounds,
    windowSeconds: windowMs / 1000,
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: os.loadavg().map((value) => round(value, 2)),
    eventsPerSecond: { without: rates.without.map((v) => round(v, 0)), with: rates.with.map((v) => round(v, 0)) },
    withOverWithout: round(ratio, 3),
    latencyMs: latency,
    deliveries: latencies.length,
    missing,
    serverCpuSecondsPerSecond: eachWindow(cpu, itself),
    postgresCpuSecondsPerSecond: eachWindow(shares, (window) => window.postgres),
    serverMainThreadCpuSecondsPerSecond: eachWindow(shares, (window) => window.serverMain),
    idleCores: eachWindow(shares, (window) => window.idle),
    benchCpuSecondsPerSecond: eachWindow(benchCpu, itself),
    viewsReadPerSecond: round(views, 1),
    dashboardsServerCpuSecondsPerSecond: round(dashboardsCpu, 3),
    serverCpuMsPerView: round((dashboardsCpu * 1000) / views, 2),
    serverCpuMsPerMessage: round((dashboardsCpu * 1000) / (views * per), 3),
    profiles,
    errors: errors.slice(0, 5),
    seconds: Math.round((Date.now() - started) / 1000),
  };
  console.log(
    table(
      ['measure', 'figure', 'target'],
      [
        ['commit → view including it, p50 / p99 / max', `${round(latency.p50, 0)} / ${round(latency.p99, 0)} / ${round(latency.max, 0)} ms`, 'p99 ≤ 2,000 ms'],
        ['deliveries measured / missing', `${latencies.length} / ${missing}`, 'none missing'],
        ['writers with / without dashboards', `${report.eventsPerSecond.with.join(', ')} / ${report.eventsPerSecond.without.join(', ')} events/s: ${report.withOverWithout}×`, '≥ 0.9×'],
        ['server CPU with / without', `${report.serverCpuSecondsPerSecond.with.join(', ')} / ${report.serverCpuSecondsPerSecond.without.join(', ')} s/s`, ''],
        ['bench process CPU with / without', `${report.benchCpuSecondsPerSecond.with.join(', ')} / ${report.benchCpuSecondsPerSecond.without.join(', ')} s/s`, ''],
        [
          "views read per second; the dashboards' server CPU: per second, per view, per message",
          `${report.viewsReadPerSecond}; ${report.dashboardsServerCpuSecondsPerSecond} s/s, ${report.serverCpuMsPerView} ms, ${report.serverCpuMsPerMessage} ms`,
          'stated',
        ],
      ],
    ),
  );
  for (const profile of profiles) {
    console.log(`\nCPU profile, ${profile.mode} dashboards: busy ${profile.busyMs} ms of ${profile.wallMs} ms (${profile.file})`);
    console.log(table(['package (inclusive)', 'ms', '% busy'], profile.inclusivePackages.slice(0, 12).map((p) => [p.name, p.ms, p.percentOfBusy])));
    console.log(table(['function (self)', 'ms', '% busy'], profile.functions.slice(0, 15).map((p) => [p.name, p.ms, p.percentOfBusy])));
  }
  if (errors.length) console.log(`errors: ${errors.slice(0, 5).join('; ')}`);
  const directory = join(import.meta.dirname, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `dashboards-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  console.log(`Done in ${report.seconds} s, load ${report.loadAverageAtEnd.join(' ')}. Report: ${file}`);
}

/** --signals: the dashboards without writers, views driven by the activity signal. */
async function signalled() {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('--signals needs REDIS_URL');
  const started = Date.now();
  const loadAtStart = os.loadavg().map((value) => round(value, 2));
  const backend = await openPostgresBackend(adminUrl!);
  const secret = randomBytes(32).toString('base64url');
  const prefix = `bench-dashboards-${randomBytes(4).toString('hex')}:`;
  const owners = Array.from({ length: principals }, (_, i) => `bench-dashboard-${i}`);
  const ownerTokens = await Promise.all(owners.map((sub) => mintToken(secret, { sub, role: 'superadmin' }, '2h')));
  const publisher = new Redis(redisUrl);
  const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret, REDIS_URL: redisUrl, REDIS_PREFIX: prefix });
  const dashboards = ownerTokens.map((token) => dashboard(server.wsUrl, token));
  let profile: ReturnType<typeof summarizeProfile> | null = null;
  const windows: { signalled: boolean; serverCpu: number; benchCpu: number; viewsPerSecond: number; messagesPerSecond: number }[] = [];
  console.log(`${principals} principals × ${per} subscriptions, no writers, views driven by Redis signals; ${rounds} round(s) of ${windowMs / 1000} s; load ${loadAtStart.join(' ')}`);
  try {
    const deadline = Date.now() + 60_000;
    while (!dashboards.every((d) => d.ready())) {
      if (Date.now() > deadline) throw new Error(`dashboards not ready: ${dashboards.flatMap((d) => d.errors).slice(0, 3).join('; ')}`);
      await sleep(50);
    }
    const signal = () => Promise.all(owners.map((owner) => publisher.publish(`${prefix}tool-activity`, `bench ${owner}`)));
    // Warm-up: the first signalled seconds also compile the paths they take.
    for (const warmupStart = performance.now(); performance.now() - warmupStart < warmupMs; await sleep(1000)) await signal();
    for (let r = 0; r < rounds; r++) {
      for (const signalled of [false, true]) {
        // With --profile, the last signalled window is profiled (its CPU then counts the profiler's too).
        const profiling = flags.profile && signalled && r === rounds - 1;
        if (profiling) await server.profileStart();
        const windowStart = performance.now();
        const cpuBefore = await cpuSeconds(server);
        const benchCpuBefore = benchCpuSeconds();
        while (performance.now() - windowStart < windowMs) {
          // Each owner's signal, as if another instance committed a change of its tool audits.
          if (signalled) await signal();
          await sleep(1000);
        }
        const seconds = (performance.now() - windowStart) / 1000;
        const serverCpu = ((await cpuSeconds(server)) - cpuBefore) / seconds;
        const benchCpu = (benchCpuSeconds() - benchCpuBefore) / seconds;
        if (profiling) profile = summarizeProfile(await server.profileStop(join(import.meta.dirname, 'results', `profile-dashboards-signals-${new Date(started).toISOString().replace(/[:.]/g, '-')}.cpuprofile`)));
        const views = new Set<string>();
        let messages = 0;
        for (const [owner, d] of dashboards.entries()) {
          for (const list of d.arrivals) {
            for (const arrival of list) {
              if (arrival.at < windowStart || arrival.at > windowStart + seconds * 1000) continue;
              views.add(`${owner} ${arrival.viewAt}`);
              messages++;
            }
          }
        }
        windows.push({ signalled, serverCpu, benchCpu, viewsPerSecond: views.size / seconds, messagesPerSecond: messages / seconds });
        console.log(
          `  round ${r + 1}, ${signalled ? 'signalled' : 'idle'}: ${round(views.size / seconds, 1)} views/s, ${round(messages / seconds, 0)} messages/s, server CPU ${round(serverCpu, 3)} s/s, bench CPU ${round(benchCpu, 3)} s/s`,
        );
      }
    }
  } finally {
    await Promise.all(dashboards.map((d) => d.close()));
    await server.stop();
    publisher.disconnect();
    await backend.close();
  }
  // Per round: the signalled window less the idle one before it, over the views it sent.
  const pairs = Array.from({ length: rounds }, (_, r) => [windows[2 * r]!, windows[2 * r + 1]!] as const);
  const perView = (pick: (w: (typeof windows)[number]) => number) =>
    median(pairs.map(([idle, busy]) => ((pick(busy) - pick(idle)) * 1000) / (busy.viewsPerSecond - idle.viewsPerSecond)));
  const report = {
    mode: 'signals',
    principals,
    per,
    rounds,
    windowSeconds: windowMs / 1000,
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: os.loadavg().map((value) => round(value, 2)),
    windows: windows.map((w) => ({ ...w, serverCpu: round(w.serverCpu, 3), benchCpu: round(w.benchCpu, 3), viewsPerSecond: round(w.viewsPerSecond, 1) })),
    serverCpuMsPerView: round(perView((w) => w.serverCpu), 3),
    benchCpuMsPerView: round(perView((w) => w.benchCpu), 3),
    profile,
    errors: dashboards.flatMap((d) => d.errors).slice(0, 5),
    seconds: Math.round((Date.now() - started) / 1000),
  };
  console.log(`server CPU per view sent to ${per} subscriptions: ${report.serverCpuMsPerView} ms; the bench's (its subscribers parsing): ${report.benchCpuMsPerView} ms`);
  if (profile) {
    console.log(`\nCPU profile, the last signalled window: busy ${profile.busyMs} ms of ${profile.wallMs} ms (${profile.file})`);
    console.log(table(['package (inclusive)', 'ms', '% busy'], profile.inclusivePackages.slice(0, 15).map((p) => [p.name, p.ms, p.percentOfBusy])));
    console.log(table(['function (self)', 'ms', '% busy'], profile.functions.slice(0, 15).map((p) => [p.name, p.ms, p.percentOfBusy])));
  }
  if (report.errors.length) console.log(`errors: ${report.errors.join('; ')}`);
  const directory = join(import.meta.dirname, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `dashboards-signals-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  console.log(`Done in ${report.seconds} s, load ${report.loadAverageAtEnd.join(' ')}. Report: ${file}`);
}

await (flags.signals ? signalled() : main());
