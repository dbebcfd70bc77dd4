// DATABASE_URL=<admin URL> npx tsx bench/dashboards.ts [--principals 100] [--per 10] [--workers 32] [--seconds 20] [--warmup 3] [--rounds 2] [--pace <events/s>] [--profile]
//   DATABASE_URL=<admin URL> REDIS_URL=<url> npx tsx bench/dashboards.ts --signals [--principals 100] [--per 10] [--seconds 20] [--warmup 3] [--rounds 2] [--profile]
//
// Live dashboards under write load (issue 40, docs/dashboards.md): `principals` × `per` identical
// toolActivity subscriptions over graphql-ws (one socket per principal, `per` subscriptions on
// it, in a process of their own: lib/dashboard-subscribers.ts) while `workers` writers drive whole
// runs (two tool calls each) through the server's HTTP API, the runs' threads spread over the
// principals. Against the same load without dashboards,
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
//   message (a view sent to each of `per` subscriptions) it is that over their rates. The bench's
//   own CPU (its writers' clients, and with dashboards the subscribers' process parsing every
//   message) the same way.
//   Each window also gives the writers' event loop delay (p99): what held their requests back
//   in the bench itself.
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
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { mintToken } from '../src/auth/jwt.js';
import { openPostgresBackend } from './lib/backend.js';
import { now, type Arrivals, type DashboardRequest } from './lib/dashboard-subscribers.js';
import { ipcClient } from './lib/ipc.js';
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

const TOOL_OPS = new Set(['recordToolStarted', 'recordToolFinished']);
/** How long after the writers stop a change may still be waited for. */
const GRACE_MS = 5000;
const SUBSCRIBERS = fileURLToPath(new URL('./lib/dashboard-subscribers.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * The principals' dashboards (`per` identical subscriptions on one socket each) in a process of
 * their own (lib/dashboard-subscribers.ts), open once each subscription has its first view.
 */
async function openDashboards(url: string, tokens: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const asked = ipcClient(child);
  const ask = async <T,>(request: DashboardRequest): Promise<T> => {
    const body = await asked<T | { error: string }>(request);
    if (typeof body === 'object' && body !== null && 'error' in body) throw new Error(body.error);
    return body as T;
  };
  const stop = async () => {
    if (child.exitCode === null) await ask({ command: 'stop' }).catch(() => child.kill());
  };
  try {
    const baselines = await ask<number[]>({ command: 'start', url, tokens, per, timeoutMs: 60_000 });
    return { baselines, arrivals: () => ask<Arrivals>({ command: 'arrivals' }), cpuSeconds: () => ask<number>({ command: 'cpu' }), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
type Dashboards = Awaited<ReturnType<typeof openDashboards>>;

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
          if (TOOL_OPS.has(step.op)) changes[owner]!.push(now());
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
/** The bench's CPU seconds so far: this process's, and its dashboards' process's when it has one. */
const benchCpuSeconds = async (dashboards: Dashboards | null) => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6 + ((await dashboards?.cpuSeconds()) ?? 0);
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
  /** The writers' event loop delay, p99 ms: what held their requests back in the bench itself. */
  const writersDelay: Record<'without' | 'with', number[]> = { without: [], with: [] };
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
        let dashboards: Dashboards | null = null;
        try {
          if (mode === 'with') dashboards = await openDashboards(server.wsUrl, ownerTokens);
          const changes: number[][] = ownerTokens.map(() => []);
          const profiling = profileDir !== null && r === 0;
          if (profiling) await server.profileStart();
          const cpuBefore = await cpuSeconds(server);
          const benchCpuBefore = await benchCpuSeconds(dashboards);
          const machineUse = windowUse(server.pid, backend.database, null);
          const loopDelay = monitorEventLoopDelay({ resolution: 10 });
          loopDelay.enable();
          const windowStart = now();
          const window = await measureWritePath(target(http, ownerTokens, workerTokens, changes), workers, warmupMs, windowMs, 0, undefined, machineUse.edges);
          loopDelay.disable();
          const writersDelayP99 = loopDelay.percentile(99) / 1e6;
          const machine = (await machineUse.use()).cpu;
          const seconds = (now() - windowStart) / 1000;
          const benchCpuPerSecond = ((await benchCpuSeconds(dashboards)) - benchCpuBefore) / seconds;
          const cpuPerSecond = ((await cpuSeconds(server)) - cpuBefore) / seconds;
          if (profiling) profiles.push({ ...summarizeProfile(await server.profileStop(join(profileDir, `${mode}.cpuprofile`))), mode });
          rates[mode].push(window.eventsPerSecond);
          cpu[mode].push(cpuPerSecond);
          benchCpu[mode].push(benchCpuPerSecond);
          writersDelay[mode].push(writersDelayP99);
          shares[mode].push(machine);
          let note = '';
          if (dashboards) {
            await sleep(GRACE_MS);
            const received = await dashboards.arrivals();
            const reads = new Set<string>();
            for (const [owner, lists] of received.arrivals.entries()) {
              for (const list of lists) for (const arrival of list) if (arrival.at >= windowStart) reads.add(`${owner} ${arrival.viewAt}`);
              changes[owner]!.forEach((answeredAt, n) => {
                for (const list of lists) {
                  const first = list.find((arrival) => arrival.total >= dashboards!.baselines[owner]! + n + 1);
                  if (first) latencies.push(Math.max(0, first.at - answeredAt));
                  else missing++;
                }
              });
            }
            errors = [...errors, ...received.errors];
            viewsPerSecond.push(reads.size / seconds);
            note = `, ${Math.round(reads.size / seconds)} views read/s, ${changes.flat().length} tool audit changes`;
          }
          console.log(`  round ${r + 1}, ${mode} dashboards: ${Math.round(window.eventsPerSecond)} events/s, server CPU ${round(cpuPerSecond, 2)} s/s, bench CPU ${round(benchCpuPerSecond, 2)} s/s, the server's main thread ${round(machine.serverMain ?? NaN, 2)} s/s, PostgreSQL ${round(machine.postgres ?? NaN, 2)} s/s, idle ${round(machine.idle ?? NaN, 2)} cores, the writers' event loop delay p99 ${round(writersDelayP99, 1)} ms${note}`);
        } finally {
          await dashboards?.stop();
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
    writersEventLoopDelayP99Ms: eachWindow(writersDelay, itself),
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
  let dashboards: Dashboards | null = null;
  let errors: string[] = [];
  let profile: ReturnType<typeof summarizeProfile> | null = null;
  const windows: { signalled: boolean; serverCpu: number; benchCpu: number; viewsPerSecond: number; messagesPerSecond: number }[] = [];
  console.log(`${principals} principals × ${per} subscriptions, no writers, views driven by Redis signals; ${rounds} round(s) of ${windowMs / 1000} s; load ${loadAtStart.join(' ')}`);
  try {
    dashboards = await openDashboards(server.wsUrl, ownerTokens);
    const signal = () => Promise.all(owners.map((owner) => publisher.publish(`${prefix}tool-activity`, `bench ${owner}`)));
    // Warm-up: the first signalled seconds also compile the paths they take.
    for (const warmupStart = performance.now(); performance.now() - warmupStart < warmupMs; await sleep(1000)) await signal();
    for (let r = 0; r < rounds; r++) {
      for (const signalled of [false, true]) {
        // With --profile, the last signalled window is profiled (its CPU then counts the profiler's too).
        const profiling = flags.profile && signalled && r === rounds - 1;
        if (profiling) await server.profileStart();
        const windowStart = now();
        const cpuBefore = await cpuSeconds(server);
        const benchCpuBefore = await benchCpuSeconds(dashboards);
        while (now() - windowStart < windowMs) {
          // Each owner's signal, as if another instance committed a change of its tool audits.
          if (signalled) await signal();
          await sleep(1000);
        }
        const seconds = (now() - windowStart) / 1000;
        const serverCpu = ((await cpuSeconds(server)) - cpuBefore) / seconds;
        const benchCpu = ((await benchCpuSeconds(dashboards)) - benchCpuBefore) / seconds;
        if (profiling) profile = summarizeProfile(await server.profileStop(join(import.meta.dirname, 'results', `profile-dashboards-signals-${new Date(started).toISOString().replace(/[:.]/g, '-')}.cpuprofile`)));
        const views = new Set<string>();
        let messages = 0;
        const received = await dashboards.arrivals();
        errors = received.errors;
        for (const [owner, lists] of received.arrivals.entries()) {
          for (const list of lists) {
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
    await dashboards?.stop();
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
    errors: errors.slice(0, 5),
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
