// npm run bench [-- --quick] [--sections write,batch,read,fanout,storm,curves,export] [--workers 1,8,32]
//   [--subscribers 100,1000] [--transports ws,sse] [--streams toolStatusChanged,threadChanges] [--redis URL]
//   [--pubsubs memory,redis] [--events 1000] [--audits 5000] [--seconds 9] [--rounds 3] [--profile] [--record]
//   [--curves write,read,catchup,memory] [--scale 1] [--interval 40,20] [--writers 1,4]
//   [--runs-at-once 10] (batch: each of the widest W workers drives this many runs at once)
//   [--batch-size 50] (batch: also batches of exactly this many events, server CPU per event;
//   with --runs-at-once 0 only those)
//   [--server-warmup 20] (write, batch: seconds of standard runs at the widest W before the
//   sections, so that they measure a server as warm as one that has been serving a while; 0: none)
//   [--client-fetch] (batch: the clients send through the global fetch, their transport before
//   runs BC…, instead of their default, Node's HTTP client)
//
// Against embedded PGlite by default; against PostgreSQL when DATABASE_URL is set (an admin URL:
// the bench creates a fresh database there and drops it afterwards). The server runs as its own
// process (src/main.ts); every figure is printed next to its floor from the same run.
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { openPgliteBackend, openPostgresBackend, FLOOR_POOL_SIZE, type Backend } from './lib/backend.js';
import { summarizeProfile } from './lib/cpuprofile.js';
import { measureFanout, measureFanoutFloor, type FanoutFloorResult, type FanoutResult } from './lib/fanout.js';
import type { Stream, Transport } from './lib/fanout-subscribers.js';
import { CURVES, GROWTH_THRESHOLD, runCurves, type Curve } from './lib/curves.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { measureExport } from './lib/export.js';
import { measureStorm, type StormResult } from './lib/storm.js';
import { LIFECYCLE_OPS } from './lib/run-script.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { serverCreateThread, serverHasThreadChanges } from './lib/server-worker.js';
import { round, summarize, table, type Summary } from './lib/stats.js';
import { measureFloorRead, measureServerRead, READ_WARMUPS, seedTimeline, serverReadStatements, type ReadResult } from './lib/timeline.js';
import { batchedServerTarget, measureBatchFloor, measureFixedBatches, type BatchFloorWindow, type FixedBatchesWindow } from './lib/batch-path.js';
import { combineWindows, floorTarget, measureWritePath, runsAheadPerLoop, serverTarget, type WriteResult, type WriteWindow } from './lib/write-path.js';
import { poolUse } from './lib/pool-meter.js';
import { combineUses, windowUse, type WindowUse } from './lib/window-use.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = join(ROOT, 'bench/results');
/**
 * Fan-out's loads: the thread changes every 40 ms, then every 20 ms (25 and 50 changes a second:
 * 25,000 and 50,000 frames a second to 1,000 subscribers), steadily, so latency is measured at
 * known loads rather than at whatever rate the machine saturates at (`--interval 0` measures that).
 */
const DEFAULT_FANOUT_INTERVALS_MS = [40, 20];
const SECTIONS = ['write', 'batch', 'read', 'fanout', 'storm', 'curves', 'export'] as const;
type Section = (typeof SECTIONS)[number];

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    sections: { type: 'string' },
    workers: { type: 'string' },
    subscribers: { type: 'string' },
    transports: { type: 'string' },
    events: { type: 'string' },
    audits: { type: 'string' },
    seconds: { type: 'string' },
    rounds: { type: 'string' },
    profile: { type: 'boolean', default: false },
    streams: { type: 'string' },
    interval: { type: 'string' },
    writers: { type: 'string' },
    redis: { type: 'string' },
    pubsubs: { type: 'string' },
    scale: { type: 'string' },
    curves: { type: 'string' },
    record: { type: 'boolean', default: false },
    'runs-at-once': { type: 'string' },
    'batch-size': { type: 'string' },
    'client-fetch': { type: 'boolean', default: false },
    'server-warmup': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (flags.help) {
  const header = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  console.log(header.slice(0, header.findIndex((line) => !line.startsWith('//'))).join('\n'));
  process.exit(0);
}

const list = (value: string | undefined, fallback: number[]) => (value ? value.split(',').map(Number) : fallback);
const quick = flags.quick;
const settings = {
  // The cost curves seed millions of rows (minutes): run them on their own, `--sections curves`.
  // The export rows (off / on / no trigger, each its own server) too: `--sections export`.
  sections: (flags.sections ? flags.sections.split(',') : SECTIONS.filter((section) => section !== 'curves' && section !== 'export')) as Section[],
  workers: list(flags.workers, [1, 8, 32]),
  subscribers: list(flags.subscribers, [100, 1000]),
  /** graphql-ws by default (issue 7's fan-out); `sse` adds the same fleet over SSE. */
  transports: (flags.transports ?? 'ws').split(',') as Transport[],
  events: Number(flags.events ?? (quick ? 200 : 1000)),
  audits: Number(flags.audits ?? 5000),
  warmupSeconds: quick ? 1 : 2,
  measureSeconds: Number(flags.seconds ?? (quick ? 3 : 9)),
  rounds: Number(flags.rounds ?? (quick ? 1 : 3)),
  readIterations: quick ? 15 : 50,
  profile: flags.profile,
  /** Fan-out streams; by default toolStatusChanged, and threadChanges when the server has it. */
  streams: flags.streams ? (flags.streams.split(',') as Stream[]) : null,
  /**
   * Fan-out: the writer sends one mutation (one change of the thread) every this many ms in every
   * row; a list runs every row at each. 0: each mutation as soon as the previous one is answered
   * in the first row, the others at its rate.
   */
  intervalsMs: list(flags.interval, quick ? DEFAULT_FANOUT_INTERVALS_MS.slice(0, 1) : DEFAULT_FANOUT_INTERVALS_MS),
  /**
   * Fan-out: concurrent writers on the thread, one row per count; the thread changes at the same
   * rate whatever the count (lib/fanout.ts). Several writers commit close together, out of Node's order.
   */
  fanoutWriters: list(flags.writers, [1]),
  /** With a Redis URL (--redis or BENCH_REDIS_URL), fan-out runs through Redis as well as in process (PostgreSQL only). */
  redisUrl: flags.redis ?? process.env.BENCH_REDIS_URL ?? null,
  pubsubs: [] as ('memory' | 'redis')[],
  /** Cost curves to run (lib/curves.ts) and the factor on their sizes (0.01 for a quick check). */
  curves: (flags.curves ?? CURVES.join(',')).split(',') as Curve[],
  scale: Number(flags.scale ?? 1),
  /** The batch section: runs each worker drives at once through its batching client. */
  runsAtOnce: Number(flags['runs-at-once'] ?? 10),
  /** The batch section also sends batches of exactly this many events (lib/batch-path.ts measureFixedBatches); 0: not. */
  batchSize: Number(flags['batch-size'] ?? 0),
  /** The batch section's clients send through the global fetch instead of their default transport. */
  clientFetch: flags['client-fetch'],
  /**
   * Before the write and batch sections, seconds of standard runs driven at the widest W. A server
   * just started runs its request path in V8's first tiers and grows its heap: after 3 s of W=1 it
   * spent 1.9× the CPU per event of one warmed for 40 s (bench/README, runs WU…).
   */
  serverWarmupSeconds: Number(flags['server-warmup'] ?? (quick ? 0 : 20)),
};
settings.pubsubs = flags.pubsubs ? (flags.pubsubs.split(',') as ('memory' | 'redis')[]) : settings.redisUrl ? ['memory', 'redis'] : ['memory'];
for (const section of settings.sections) {
  if (!SECTIONS.includes(section)) throw new Error(`Unknown section "${section}"; pick from ${SECTIONS.join(', ')}`);
}
const runs = (section: Section) => settings.sections.includes(section);

const log = (line: string) => console.log(line);
const OWNER = 'bench-owner';
const ratio = (server: number, floor: number) => round(server / floor, 2);

function machine(backend: Backend) {
  const git = (command: string) => {
    try {
      return execSync(command, { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return null;
    }
  };
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    node: process.version,
    database: backend.version,
    pglite: JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version as string,
    loadAverageAtStart: os.loadavg().map((value) => round(value, 2)),
    commit: git('git rev-parse --short HEAD'),
    uncommittedChanges: git('git status --porcelain -- src prisma') !== '',
  };
}

type ProfileSummary = ReturnType<typeof summarizeProfile>;
let profileDir: string | null = null;
const profiles: (ProfileSummary & { phase: string })[] = [];

/** With --profile, a CPU profile of the server during `phase`, summarized into the report. */
async function profiled<T>(server: ServerProcess, phase: string, body: () => Promise<T>): Promise<T> {
  if (!profileDir) return body();
  await server.profileStart();
  const value = await body();
  await profileStop(server, phase);
  return value;
}

async function profileStop(server: ServerProcess, phase: string): Promise<void> {
  const file = await server.profileStop(join(profileDir!, `${phase}.cpuprofile`));
  profiles.push({ ...summarizeProfile(file), phase });
}

function printProfile(title: string, profile: ProfileSummary) {
  log(`\nCPU profile, ${title}: busy ${profile.busyMs} ms of ${profile.wallMs} ms (${profile.file})`);
  log(table(['package', 'self ms', '% busy'], profile.packages.slice(0, 12).map((p) => [p.name, p.ms, p.percentOfBusy])));
  log(table(['package (inclusive)', 'ms', '% busy'], profile.inclusivePackages.slice(0, 12).map((p) => [p.name, p.ms, p.percentOfBusy])));
  log(table(['function (self)', 'ms', '% busy'], profile.functions.slice(0, 15).map((p) => [p.name, p.ms, p.percentOfBusy])));
}

interface WriteRow {
  workers: number;
  server: WriteResult & { statementsPerEvent: number; serverCpuMsPerEvent: number; preemptionsPerEvent: number | null };
  /** The write floor (lib/write-floor.ts); benchCpuMsPerEvent: the bench process's CPU (with PGlite, the database's too). */
  floor: WriteResult & { benchCpuMsPerEvent: number };
  /** Server events/s over the floor's: the median of the rounds' ratios, and each round's. */
  throughputRatio: number | null;
  roundRatios: (number | null)[];
  /** p50 of every lifecycle event's latency, server over floor. */
  p50Ratio: number | null;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const medianOf = (values: (number | null)[]) => round(median(values.filter((value): value is number => value !== null)), 2);

/**
 * Per W, `rounds` rounds of the floor then the server, each measuring its share of the window:
 * load on this shared machine drifts over tens of seconds, and interleaving puts both sides under
 * the same drift. The ratio reported is the median of the rounds' ratios, with each round's.
 */
async function writeSection(server: ServerProcess, http: GraphQLHttp, backend: Backend, ownerToken: string, workerTokens: string[]) {
  const rows: WriteRow[] = [];
  const workerSubs = workerTokens.map((_, index) => `bench-worker-${index}`);
  const windowMs = (settings.measureSeconds * 1000) / settings.rounds;
  for (const workers of settings.workers) {
    const floorWindows: WriteWindow[] = [];
    const serverWindows: WriteWindow[] = [];
    let floorCpuUs = 0;
    let serverCounts = { statements: 0, cpuUs: 0, preemptions: null as number | null };
    for (let round = 0; round < settings.rounds; round++) {
      const warmupMs = round === 0 ? settings.warmupSeconds * 1000 : 1000;
      log(`  write path, W=${workers}, round ${round + 1} of ${settings.rounds}: floor, then server…`);
      const cpu = process.cpuUsage();
      floorWindows.push(await measureWritePath(floorTarget(backend.floor, OWNER, workerSubs), workers, warmupMs, windowMs));
      const used = process.cpuUsage(cpu);
      floorCpuUs += used.user + used.system;
      const start = await server.counts();
      const measure = () => measureWritePath(serverTarget(http, ownerToken, workerTokens), workers, warmupMs, windowMs);
      serverWindows.push(await (round === 0 ? profiled(server, `write-W${workers}`, measure) : measure()));
      const end = await server.counts();
      serverCounts = {
        statements: serverCounts.statements + end.statements - start.statements,
        cpuUs: serverCounts.cpuUs + end.cpu.user + end.cpu.system - start.cpu.user - start.cpu.system,
        // Null where the platform cannot tell.
        preemptions: end.preemptions === null || start.preemptions === null ? null : (serverCounts.preemptions ?? 0) + end.preemptions - start.preemptions,
      };
      log(`    server ${Math.round(serverWindows.at(-1)!.eventsPerSecond)} events/s, floor ${Math.round(floorWindows.at(-1)!.eventsPerSecond)}`);
    }
    const measured = combineWindows(serverWindows);
    const floor = combineWindows(floorWindows);
    const roundRatios = serverWindows.map((window, index) => ratio(window.eventsPerSecond, floorWindows[index]!.eventsPerSecond));
    rows.push({
      workers,
      server: {
        ...measured,
        // createRun's statements are counted too; they are one per ten events.
        statementsPerEvent: round(serverCounts.statements / measured.phaseEvents, 1)!,
        serverCpuMsPerEvent: round(serverCounts.cpuUs / 1000 / measured.phaseEvents, 2)!,
        preemptionsPerEvent: serverCounts.preemptions === null ? null : round(serverCounts.preemptions / measured.phaseEvents, 1),
      },
      floor: { ...floor, benchCpuMsPerEvent: round(floorCpuUs / 1000 / floor.phaseEvents, 2)! },
      throughputRatio: medianOf(roundRatios),
      roundRatios,
      p50Ratio: ratio(measured.eventLatencyMs.p50, floor.eventLatencyMs.p50),
    });
  }
  return rows;
}

function printWrite(rows: WriteRow[]) {
  log('\nWrite path: lifecycle events/s (claim … finishRun, ten per run), server over HTTP vs the write floor');
  log(
    table(
      ['W', 'server ev/s', 'floor ev/s', 'server/floor (median)', 'rounds', 'event p50 server/floor', 'server CPU ms/ev', 'server preempted /ev', 'server SQL/ev', 'floor client CPU ms/ev'],
      rows.map((row) => [
        row.workers,
        Math.round(row.server.eventsPerSecond),
        Math.round(row.floor.eventsPerSecond),
        row.throughputRatio,
        row.roundRatios.map((value) => value ?? '—').join(' '),
        row.p50Ratio,
        row.server.serverCpuMsPerEvent,
        row.server.preemptionsPerEvent,
        row.server.statementsPerEvent,
        row.floor.benchCpuMsPerEvent,
      ]),
    ),
  );
  for (const row of rows) {
    log(`\nW=${row.workers}: latency per mutation, ms`);
    log(
      table(
        ['mutation', 'server p50', 'server p99', 'floor p50', 'floor p99', 'p50 server/floor'],
        ['createRun', ...LIFECYCLE_OPS].map((op) => {
          const server = row.server.latencyMs[op];
          const floor = row.floor.latencyMs[op];
          return [op, round(server?.p50 ?? NaN), round(server?.p99 ?? NaN), round(floor?.p50 ?? NaN), round(floor?.p99 ?? NaN), ratio(server?.p50 ?? NaN, floor?.p50 ?? NaN)];
        }),
      ),
    );
  }
}

interface BatchRow {
  workers: number;
  runsAtOnce: number;
  /** The server through each worker's batching client; eventsPerRequest: the batch size the writers reached. */
  server: WriteResult & {
    serverCpuMsPerEvent: number;
    statementsPerEvent: number;
    eventsPerRequest: number;
  };
  /** The write floor, one transaction per event, the same W (W loops, not W×R: the floor's pool is the limit). */
  eventFloor: WriteResult;
  /** The same events as the write floor's calls, one transaction per batch of R (lib/batch-path.ts). */
  batchFloor: Omit<BatchFloorWindow, 'batchLatenciesMs'>;
  /** Medians of the rounds' ratios, and each round's. */
  overEventFloor: number | null;
  overBatchFloor: number | null;
  rounds: { overEventFloor: number | null; overBatchFloor: number | null }[];
  /**
   * Each kind of window's use of the machine (the cores by process, the measured side's database
   * connections), its events, and its requests' latency as the bench saw it: the per-event floor's
   * calls, the batch floor's transactions, the server's lifecycle requests.
   */
  windows: Record<'eventFloor' | 'batchFloor' | 'server', WindowUse & { events: number; requestLatencyMs: Summary }>;
}

/**
 * The widest W: per round the per-event floor, the batch floor, then the server through the
 * batching clients (W clients, R runs each), interleaved as in the write section.
 */
async function batchSection(server: ServerProcess, http: GraphQLHttp, backend: Backend, ownerToken: string, workerTokens: string[]): Promise<BatchRow> {
  const workers = Math.max(...settings.workers);
  const runsAtOnce = settings.runsAtOnce;
  const workerSubs = workerTokens.map((_, index) => `bench-worker-${index}`);
  const windowMs = (settings.measureSeconds * 1000) / settings.rounds;
  const eventFloors: WriteWindow[] = [];
  const batchFloors: BatchFloorWindow[] = [];
  const servers: WriteWindow[] = [];
  let cpuUs = 0;
  let statements = 0;
  let requests = 0;
  const uses = { eventFloor: [] as WindowUse[], batchFloor: [] as WindowUse[], server: [] as WindowUse[] };
  const serverRequestLatenciesMs: number[] = [];
  for (let pass = 0; pass < settings.rounds; pass++) {
    // W×R loops start together each round (threads, runs, claims): a longer warm-up than the write section's.
    const warmupMs = Math.max(3000, settings.warmupSeconds * 1000);
    log(`  batched, W=${workers} × ${runsAtOnce} runs, round ${pass + 1} of ${settings.rounds}: per-event floor, batch floor, server…`);
    // The runs are created ahead, outside the windows, for the floors and the server alike (lib/write-path.ts RUNS_AHEAD_PER_SECOND).
    const ahead = (loops: number) => runsAheadPerLoop(loops, warmupMs, windowMs);
    // The floors' windows count the floor's pool (this process's), the server's its own (through its probe).
    const floorUse = () => windowUse(server.pid, backend.database, backend.database ? poolUse : null);
    const eventFloorUse = floorUse();
    eventFloors.push(await measureWritePath(floorTarget(backend.floor, OWNER, workerSubs), workers, warmupMs, windowMs, ahead(workers), undefined, eventFloorUse.edges));
    uses.eventFloor.push(await eventFloorUse.use());
    const batchFloorUse = floorUse();
    batchFloors.push(await measureBatchFloor(backend.floor, OWNER, workerSubs, workers, runsAtOnce, warmupMs, windowMs, ahead(workers), batchFloorUse.edges));
    uses.batchFloor.push(await batchFloorUse.use());
    const { target, counter, stop } = batchedServerTarget(server.url, http, ownerToken, workerTokens, runsAtOnce, settings.clientFetch);
    const serverUse = windowUse(server.pid, backend.database, backend.database ? async () => (await server.counts()).pool : null);
    const serverEdges = {
      open: () => ((counter.timing = true), serverUse.edges.open()),
      close: () => ((counter.timing = false), serverUse.edges.close()),
    };
    // Counted and profiled from the warm-up on: the runs created ahead are not the section's work.
    const profile = pass === 0 && profileDir !== null;
    let start = await server.counts();
    servers.push(
      await measureWritePath(
        target,
        workers * runsAtOnce,
        warmupMs,
        windowMs,
        ahead(workers * runsAtOnce),
        async () => {
          start = await server.counts();
          if (profile) await server.profileStart();
        },
        serverEdges,
      ),
    );
    stop();
    uses.server.push(await serverUse.use());
    serverRequestLatenciesMs.push(...counter.latenciesMs);
    if (profile) await profileStop(server, `batch-W${workers}x${runsAtOnce}`);
    const end = await server.counts();
    cpuUs += end.cpu.user + end.cpu.system - start.cpu.user - start.cpu.system;
    statements += end.statements - start.statements;
    requests += counter.requests;
    log(
      `    server ${Math.round(servers.at(-1)!.eventsPerSecond)} events/s (${round(servers.at(-1)!.phaseEvents / counter.requests, 1)} a request), ` +
        `per-event floor ${Math.round(eventFloors.at(-1)!.eventsPerSecond)}, batch floor ${Math.round(batchFloors.at(-1)!.eventsPerSecond)}`,
    );
  }
  const measured = combineWindows(servers);
  const rounds = servers.map((window, index) => ({
    overEventFloor: ratio(window.eventsPerSecond, eventFloors[index]!.eventsPerSecond),
    overBatchFloor: ratio(window.eventsPerSecond, batchFloors[index]!.eventsPerSecond),
  }));
  const sum = (pick: (window: BatchFloorWindow) => number) => batchFloors.reduce((total, window) => total + pick(window), 0);
  const seconds = sum((window) => window.seconds);
  return {
    workers,
    runsAtOnce,
    server: {
      ...measured,
      // Per lifecycle event the clients sent (claims included; the runs were created before the counts began).
      serverCpuMsPerEvent: round(cpuUs / 1000 / measured.phaseEvents, 3)!,
      statementsPerEvent: round(statements / measured.phaseEvents, 1)!,
      eventsPerRequest: round(measured.phaseEvents / requests, 1)!,
    },
    eventFloor: combineWindows(eventFloors),
    batchFloor: {
      workers,
      runsAtOnce,
      seconds,
      events: sum((w) => w.events),
      eventsPerSecond: sum((w) => w.events) / seconds,
      batches: sum((w) => w.batches),
      runsCreatedInWindow: sum((w) => w.runsCreatedInWindow),
    },
    overEventFloor: medianOf(rounds.map((r) => r.overEventFloor)),
    overBatchFloor: medianOf(rounds.map((r) => r.overBatchFloor)),
    rounds,
    windows: {
      eventFloor: { ...combineUses(uses.eventFloor), events: eventFloors.reduce((total, w) => total + w.events, 0), requestLatencyMs: combineWindows(eventFloors).eventLatencyMs },
      batchFloor: { ...combineUses(uses.batchFloor), events: sum((w) => w.events), requestLatencyMs: summarize(batchFloors.flatMap((w) => w.batchLatenciesMs)) },
      server: { ...combineUses(uses.server), events: measured.events, requestLatencyMs: summarize(serverRequestLatenciesMs) },
    },
  };
}

/** Batches of exactly --batch-size events (lib/batch-path.ts measureFixedBatches), the widest W workers. */
async function fixedBatchSection(server: ServerProcess, http: GraphQLHttp, ownerToken: string, workerTokens: string[]): Promise<FixedBatchesWindow> {
  const workers = Math.max(...settings.workers);
  log(`  fixed batches: W=${workers} × ${settings.batchSize} events a request, ${settings.rounds} passes…`);
  const cpuUs = async () => {
    const { cpu } = await server.counts();
    return cpu.user + cpu.system;
  };
  let profiledOnce = false;
  return measureFixedBatches(http, ownerToken, workerTokens, workers, settings.batchSize, settings.rounds, cpuUs, (body) => {
    if (profiledOnce) return body();
    profiledOnce = true;
    return profiled(server, `batch-fixed-W${workers}x${settings.batchSize}`, body);
  });
}

function printFixedBatches(fixed: FixedBatchesWindow) {
  log(`\nFixed batches: W=${fixed.workers} workers, ${fixed.batchSize} events a request (setup not counted)`);
  log(
    table(
      ['server ev/s', 'requests', 'request p50 ms', 'request p99 ms', 'server CPU ms/ev', 'idle CPU ms/s', 'CPU ms/ev net of idle'],
      [
        [
          Math.round(fixed.eventsPerSecond),
          fixed.requests,
          round(fixed.requestLatencyMs.p50),
          round(fixed.requestLatencyMs.p99),
          round(fixed.serverCpuMsPerEvent, 3),
          round(fixed.serverIdleCpuMsPerSecond, 1),
          round(fixed.serverCpuMsPerEventNetOfIdle, 3),
        ],
      ],
    ),
  );
}

function printBatch(row: BatchRow) {
  log(`\nBatched write path: W=${row.workers} workers × ${row.runsAtOnce} runs at once, lifecycle events/s`);
  log(
    table(
      ['server ev/s', 'events a request', 'per-event floor ev/s', 'batch floor ev/s', 'server/per-event floor', 'server/batch floor', 'rounds', 'server CPU ms/ev', 'server SQL/ev'],
      [
        [
          Math.round(row.server.eventsPerSecond),
          row.server.eventsPerRequest,
          Math.round(row.eventFloor.eventsPerSecond),
          Math.round(row.batchFloor.eventsPerSecond),
          row.overEventFloor,
          row.overBatchFloor,
          row.rounds.map((r) => `${r.overEventFloor}/${r.overBatchFloor}`).join(' '),
          row.server.serverCpuMsPerEvent,
          row.server.statementsPerEvent,
        ],
      ],
    ),
  );
  printWindowUses(row.windows);
  const createdInWindow = [row.server.runsCreatedInWindow, row.eventFloor.runsCreatedInWindow, row.batchFloor.runsCreatedInWindow];
  if (createdInWindow.some((count) => count > 0)) log(`Runs created in the window (those created ahead ran out): server, per-event floor, batch floor ${createdInWindow.join(', ')}`);
}

/** Where each kind of batched window's cores went, per event, and what its requests and connections did. */
function printWindowUses(windows: BatchRow['windows']) {
  const kinds = [windows.eventFloor, windows.batchFloor, windows.server];
  // CPU ms an event, and in brackets the cores busy (CPU seconds a second) over the window.
  const cell = (use: (typeof kinds)[number], cores: number | null) =>
    cores === null ? null : `${round((cores * use.cpu.seconds * 1000) / use.events, 3)} (${round(cores, 2)})`;
  const cpuRow = (label: string, pick: (cpu: WindowUse['cpu']) => number | null) => [label, ...kinds.map((use) => cell(use, pick(use.cpu)))];
  const poolRow = (label: string, pick: (pool: NonNullable<WindowUse['pool']>, use: (typeof kinds)[number]) => number) => [
    label,
    ...kinds.map((use) => (use.pool && use.pool.checkouts > 0 ? round(pick(use.pool, use), 2) : null)),
  ];
  log('\nWhere the cores went in each kind of window: CPU ms an event (cores busy)');
  log(
    table(
      ['', 'per-event floor', 'batch floor', 'server'],
      [
        ['events/s', ...kinds.map((use) => Math.round(use.events / use.cpu.seconds))],
        cpuRow('bench process (clients, floor calls, harness)', (cpu) => cpu.bench),
        cpuRow('server process', (cpu) => cpu.server),
        cpuRow('PostgreSQL backends of the database', (cpu) => cpu.postgres),
        cpuRow('PostgreSQL background', (cpu) => cpu.postgresBackground),
        cpuRow('other processes and the kernel', (cpu) => cpu.other),
        cpuRow('idle', (cpu) => cpu.idle),
        ['request p50 / p99 ms', ...kinds.map((use) => `${round(use.requestLatencyMs.p50)} / ${round(use.requestLatencyMs.p99)}`)],
        poolRow('connection held ms a checkout', (pool) => pool.heldMs / pool.checkouts),
        poolRow('connections busy (mean)', (pool, use) => pool.heldMs / 1000 / use.cpu.seconds),
        poolRow('connection waited ms a checkout', (pool) => pool.waitedMs / pool.checkouts),
        poolRow('checkouts an event', (pool, use) => pool.checkouts / use.events),
      ],
    ),
  );
  log('(requests: a per-event floor call, a batch floor transaction, a lifecycle request to its answer\'s headers; connections: the');
  log(' floor\'s pool in the floors\' windows, the server\'s in its own, 10 each; per event: the window\'s CPU over the events it counted)');
}

interface ReadRow {
  limit: number;
  audits: number;
  server: ReadResult & { statementsPerCall: number | null; cpuMsPerRead: number };
  floor: ReadResult & { statements: number; withJsonMs: ReadResult['latencyMs'] };
  p50Ratio: number | null;
}

function printRead(read: ReadRow) {
  log(`\nTimeline read: threadAudits(limit: ${read.limit}) with every nested field, thread of ${read.audits} audits`);
  log(
    table(
      ['', 'p50 ms', 'p99 ms', 'items', 'SQL statements', 'JSON bytes', 'server CPU ms/read'],
      [
        ['server', round(read.server.latencyMs.p50), round(read.server.latencyMs.p99), read.server.items, read.server.statementsPerCall, read.server.responseBytes ?? null, read.server.cpuMsPerRead],
        ['floor (plain SQL)', round(read.floor.latencyMs.p50), round(read.floor.latencyMs.p99), read.floor.items, read.floor.statements, null, null],
        ['floor + JSON.stringify', round(read.floor.withJsonMs.p50), round(read.floor.withJsonMs.p99), null, null, read.floor.responseBytes ?? null, null],
        ['server/floor', read.p50Ratio, ratio(read.server.latencyMs.p99, read.floor.latencyMs.p99), null, null, null, null],
      ],
    ),
  );
}

type FanoutRow = FanoutResult & { intervalMs: number; floor: FanoutFloorResult | null };

function printFanout(results: FanoutRow[]) {
  log('\nLive fan-out: one thread, tool status changes; every state delivered to every subscriber, in commit order?');
  log(
    table(
      ['stream', 'pub/sub', 'transport', 'writers', 'subscribers', 'states', 'lost', 'folded', 'duplicated', 'out of order', 'subscribers affected', 'worst subscriber lost/dup/order'],
      results.map((r) => {
        const { states, lost, folded, duplicated, outOfOrder, subscribersAffected, worstSubscriber: worst } = r.integrity;
        return [r.stream, r.pubsub, r.transport, r.writers, r.subscribers, states, lost, folded, duplicated, outOfOrder, subscribersAffected, `${worst.lost}/${worst.duplicated}/${worst.outOfOrder}`];
      }),
    ),
  );
  log('(folded: a tool\'s terminal state received without its RUNNING state, also counted as lost; with several writers,');
  log(' out of order counts a tool\'s states only, and latency runs from the send: their COMMITs cannot be matched to mutations)');
  log('\nLive fan-out: latency from the COMMIT to receipt, ms');
  log(
    table(
      ['stream', 'pub/sub', 'transport', 'writers', 'subscribers', 'interval ms', 'events', 'delivered', 'p50', 'p99', 'max', 'floor p50', 'floor p99', 'first p50', 'floor first p50', 'p99 from send', 'mutation p50', 'server CPU ms/delivery', 'floor CPU ms/delivery', 'machine busy %', 'floor machine busy %', 'server loop max ms', 'subscribers loop max ms', 'later status'],
      results.map((r) => [
        r.stream,
        r.pubsub,
        r.transport,
        r.writers,
        r.subscribers,
        round(r.intervalMs, 1),
        r.events,
        `${r.delivered}/${r.expectedDeliveries}`,
        round(r.fromCommitMs?.p50 ?? NaN, 1),
        round(r.fromCommitMs?.p99 ?? NaN, 1),
        round(r.fromCommitMs?.max ?? NaN, 1),
        round(r.floor?.fromCommitMs?.p50 ?? NaN, 1),
        round(r.floor?.fromCommitMs?.p99 ?? NaN, 1),
        round(r.firstReceiptMs?.p50 ?? NaN, 1),
        round(r.floor?.firstReceiptMs?.p50 ?? NaN, 1),
        round(r.fromSendMs.p99, 1),
        round(r.toolMutationMs.p50, 1),
        round((r.serverCpuSeconds * 1000) / Math.max(1, r.delivered), 3),
        round(r.floor?.cpuMsPerDelivery ?? NaN, 3),
        round((r.machineBusy ?? NaN) * 100, 0),
        round((r.floor?.machineBusy ?? NaN) * 100, 0),
        round(r.loopDelayMaxMs.server, 0),
        round(r.loopDelayMaxMs.subscribers, 0),
        r.payloadsWithLaterStatus,
      ]),
    ),
  );
  log('(interval: the writer sends one mutation, one change of the thread, every this many ms; machine busy: all cores, every process;');
  log(' loop max: the longest the fan-out server\'s, or the subscribers\' process\'s, event loop was late during the row;');
  log(' floor, graphql-ws rows: the same clients on a bare WebSocket server sending one ready-made frame per socket, at the same rate;');
  log(' first: per event, from the COMMIT, or the floor\'s first send, to its first receipt by any subscriber)');
}

/**
 * Runs `body` against the bench's server (pub/sub in process: the writer's and the subscribers'
 * server are one), or, for 'redis', two more instances on the same PostgreSQL database with
 * REDIS_URL: the worker writes to the first, the subscribers listen on the second. Null where that
 * cannot run (PGlite is one process).
 */
async function onPubsub<T>(
  pubsub: 'memory' | 'redis',
  context: { server: ServerProcess; http: GraphQLHttp; backend: Backend; secret: string },
  body: (writer: ServerProcess, http: GraphQLHttp, fanout: ServerProcess) => Promise<T>,
): Promise<T | null> {
  if (pubsub === 'memory') return body(context.server, context.http, context.server);
  if (context.backend.kind !== 'postgres') {
    log('  (Redis needs PostgreSQL: PGlite is one process, so there is no second instance; skipped)');
    return null;
  }
  const env = { ...context.backend.serverEnv, AUTH_JWT_SECRET: context.secret, REDIS_URL: settings.redisUrl! };
  const [writer, fanout] = await Promise.all([startServer(env), startServer(env)]);
  const http = new GraphQLHttp(writer.url);
  try {
    return await body(writer, http, fanout);
  } finally {
    http.close();
    await Promise.all([writer.stop(), fanout.stop()]);
  }
}

async function runSections(
  server: ServerProcess,
  http: GraphQLHttp,
  backend: Backend,
  secret: string,
  timeline: { server: string; floor: string } | null,
  report: Record<string, unknown>,
) {
  const ownerToken = await mintToken(secret, { sub: OWNER, role: 'superadmin' }, '2h');
  const maxWorkers = Math.max(...settings.workers, 1);
  const workerTokens = await Promise.all(Array.from({ length: maxWorkers }, (_, i) => mintToken(secret, { sub: `bench-worker-${i}`, role: 'worker' }, '2h')));

  if ((runs('write') || runs('batch')) && settings.serverWarmupSeconds > 0) {
    log(`Warming the server up: ${settings.serverWarmupSeconds} s of standard runs, W=${maxWorkers}…`);
    await measureWritePath(serverTarget(http, ownerToken, workerTokens), maxWorkers, 0, settings.serverWarmupSeconds * 1000);
  }

  if (runs('write')) {
    log('Write path…');
    const rows = await writeSection(server, http, backend, ownerToken, workerTokens);
    report.write = rows;
    printWrite(rows);
  }

  if (runs('batch')) {
    log('Batched write path…');
    if (settings.runsAtOnce > 0) {
      const row = await batchSection(server, http, backend, ownerToken, workerTokens);
      report.batch = row;
      printBatch(row);
    }
    if (settings.batchSize > 0) {
      const fixed = await fixedBatchSection(server, http, ownerToken, workerTokens);
      report.fixedBatches = fixed;
      printFixedBatches(fixed);
    }
  }

  if (runs('read') && timeline) {
    log('Timeline read…');
    const limit = 500;
    const before = await server.counts();
    const serverRead = await profiled(server, 'read', () => measureServerRead(http, ownerToken, timeline.server, limit, settings.readIterations));
    const after = await server.counts();
    const cpuMsPerRead = round((after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1000 / (settings.readIterations + READ_WARMUPS), 2)!;
    const floorRead = await measureFloorRead(backend.floor, OWNER, timeline.floor, limit, settings.readIterations);
    const statementsPerCall = await serverReadStatements(server, http, ownerToken, timeline.server, limit);
    const read: ReadRow = {
      limit,
      audits: settings.audits,
      server: { ...serverRead, statementsPerCall, cpuMsPerRead },
      floor: floorRead,
      p50Ratio: ratio(serverRead.latencyMs.p50, floorRead.latencyMs.p50),
    };
    report.read = read;
    printRead(read);
  }

  if (runs('fanout')) {
    log('Live fan-out…');
    const streams = settings.streams ?? ((await serverHasThreadChanges(http, ownerToken)) ? ['toolStatusChanged', 'threadChanges'] : ['toolStatusChanged']);
    const results: FanoutRow[] = [];
    const floors = new Map<string, FanoutFloorResult>();
    for (const interval of settings.intervalsMs) {
      // Per subscriber count, the writer's rate: the fixed interval, or (0) the rate the first row
      // (in process) sustained, every later row (another stream, Redis) driven at that rate, so
      // rows differ only in what delivers. A writer on its own instance (Redis) does no fan-out
      // and would otherwise write faster.
      const intervals = new Map<number, number>();
      for (const pubsub of settings.pubsubs) {
        await onPubsub(pubsub, { server, http, backend, secret }, async (target, targetHttp, fanoutServer) => {
          const threadId = await serverCreateThread(targetHttp, ownerToken, `fan-out ${pubsub}`);
          for (const stream of streams) {
            for (const transport of settings.transports) {
              for (const subscribers of settings.subscribers) for (const writers of settings.fanoutWriters) {
                log(`  ${subscribers} subscribers to ${stream} over ${transport}, pub/sub ${pubsub}, ${writers} writer(s)…`);
                const measured = await profiled(fanoutServer, `fanout-${pubsub}-${stream}-${transport}-${subscribers}-${writers}w-${interval}ms`, () =>
                  measureFanout({
                    server: target, fanoutServer, http: targetHttp, ownerToken, workerToken: workerTokens[0]!, threadId, transport, stream, pubsub, subscribers, events: settings.events,
                    intervalMs: interval || intervals.get(subscribers), writers, log,
                  }),
                );
                if (!intervals.has(subscribers)) intervals.set(subscribers, interval || (measured.seconds * 1000) / measured.mutations);
                const intervalMs = intervals.get(subscribers)!;
                const key = `${subscribers}@${intervalMs}`;
                if (transport === 'ws' && !floors.has(key)) {
                  // The floor at the same rate, so both see the same spacing; 200 events (200 × subscribers
                  // deliveries) are plenty for its percentiles and keep the bench short.
                  const floorEvents = Math.min(settings.events, 200);
                  log(`    floor: a bare WebSocket broadcast, ${floorEvents} events, one every ${intervalMs.toFixed(1)} ms`);
                  floors.set(key, await measureFanoutFloor(subscribers, floorEvents, intervalMs));
                }
                results.push({ ...measured, intervalMs, floor: floors.get(key) ?? null });
              }
            }
          }
        });
      }
    }
    report.fanout = results;
    printFanout(results);
  }

  if (runs('storm')) {
    log('Resume storm…');
    const subscribers = Math.max(...settings.subscribers);
    const results: (StormResult & { pubsub: string })[] = [];
    const failures: { pubsub: string; error: string }[] = [];
    for (const pubsub of settings.pubsubs) {
      // A storm that fails (on a saturated machine, subscribers that never go live) is reported, and the run goes on.
      try {
        const result = await onPubsub(pubsub, { server, http, backend, secret }, async (_writer, targetHttp, fanoutServer) => {
          log(`  ${subscribers} threadChanges subscribers, pub/sub ${pubsub}…`);
          const threadId = await serverCreateThread(targetHttp, ownerToken, `storm ${pubsub}`);
          return measureStorm({ server: fanoutServer, http: targetHttp, ownerToken, workerToken: workerTokens[0]!, threadId, subscribers, log });
        });
        if (result) results.push({ ...result, pubsub });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        log(`    failed: ${message}`);
        failures.push({ pubsub, error: message });
      }
    }
    report.storm = results;
    if (failures.length) report.stormFailures = failures;
    log('\nResume storm: every subscriber drops its connection at once and resumes with its last cursor while a worker writes');
    log(
      table(
        ['pub/sub', 'subscribers', 'all resubscribed ms', 'all live again ms', 'live again', 'changes written', 'entities', 'missing', 'differing', 'subscribers off', 'repeated cursors', 'errors'],
        results.map((r) => [
          r.pubsub, r.subscribers, r.resubscribeMs, r.liveAgainMs, r.liveAgain, r.changesWritten, r.views.entities, r.views.missing, r.views.differing,
          r.views.subscribersOff, r.views.repeatedCursors, r.errors,
        ]),
      ),
    );
    log('(live again: has received a change written after the drop; missing/differing: entities of the final committed state absent from, or different in, a subscriber\'s applied view)');
  }
}

/** The OpenTelemetry export under the write path at the largest W (lib/export.ts): its own servers, off / on / no trigger. */
async function exportSection(backend: Backend, secret: string) {
  const workers = Math.max(...settings.workers);
  log(`Export (OpenTelemetry) at W=${workers}: the write path without export, with it, and without the export queue's trigger…`);
  const ownerToken = await mintToken(secret, { sub: OWNER, role: 'superadmin' }, '2h');
  const workerTokens = await Promise.all(Array.from({ length: workers }, (_, i) => mintToken(secret, { sub: `bench-worker-${i}`, role: 'worker' }, '2h')));
  const result = await measureExport({
    backend,
    secret,
    ownerToken,
    workerTokens,
    workers,
    rounds: settings.rounds,
    // Each window is a freshly started server: a longer warm-up than the write section's.
    warmupMs: Math.max(5000, settings.warmupSeconds * 1000),
    windowMs: (settings.measureSeconds * 1000) / settings.rounds,
    log,
  });
  log(`\nExport at W=${workers}: events/s off ${result.eventsPerSecond.off.join(', ')} | on ${result.eventsPerSecond.on.join(', ')} | no trigger ${result.eventsPerSecond['no trigger'].join(', ')}`);
  log(`  on / off ${result.onOverOff} (issue 33: at least 0.9), no trigger / off ${result.noTriggerOverOff} (what the queue's trigger costs a write)`);
  log(`  export lag (commit to the receiver's answer), ${result.lagSeconds.spans} spans: p50 ${result.lagSeconds.p50} s, p99 ${result.lagSeconds.p99} s, max ${result.lagSeconds.max} s; drained ${result.drainSeconds.join(', ')} s after the writers stopped`);
  const { trigger } = result;
  log(`  the queue's trigger, inside the database: a thread-cursor bump ${trigger.noTriggerUs} µs without it, ${trigger.alreadyPendingUs} µs with the thread already pending (+${round(trigger.alreadyPendingUs - trigger.noTriggerUs, 1)}), ${trigger.becomingPendingUs} µs becoming pending (+${round(trigger.becomingPendingUs - trigger.noTriggerUs, 1)})`);
  return result;
}

async function curvesSection(backend: Backend, secret: string) {
  const workers = Math.max(...settings.workers, 1);
  const ownerToken = await mintToken(secret, { sub: OWNER, role: 'superadmin' }, '2h');
  const workerTokens = await Promise.all(Array.from({ length: workers }, (_, i) => mintToken(secret, { sub: `bench-curve-${i}`, role: 'worker' }, '2h')));
  const report = await runCurves({
    backend,
    curves: settings.curves,
    scale: settings.scale,
    ownerSub: OWNER,
    ownerToken,
    workerSubs: workerTokens.map((_, i) => `bench-curve-${i}`),
    workerTokens,
    workers,
    warmupMs: settings.warmupSeconds * 1000,
    windowMs: (settings.measureSeconds * 1000) / settings.rounds,
    rounds: settings.rounds,
    readIterations: settings.readIterations,
    startServer: () => startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret }),
    log,
  });
  log('\nCost curves ("grows": the largest size costs over ' + GROWTH_THRESHOLD + '× the smallest, per event, per call, per change or per subscriber)');
  const curves = report as Record<string, any>;
  for (const [curve, result] of Object.entries(curves)) if (result?.error) log(`${curve}: failed (${result.error})`);
  if (curves.write?.rows) {
    log(`Write path at W=${curves.write.workers}, by audits already in the table: server ${curves.write.server}, floor ${curves.write.floor}`);
    log(table(['audits in table', 'server ev/s', 'floor ev/s'], curves.write.rows.map((r: any) => [r.auditsInTable, r.serverEventsPerSecond, r.floorEventsPerSecond])));
  }
  if (curves.read?.rows) {
    log(`threadAudits(limit: 500) p50 by thread size: server ${curves.read.server}, floor ${curves.read.floor}`);
    log(table(['audits in thread', 'server p50 ms', 'floor p50 ms'], curves.read.rows.map((r: any) => [r.audits, r.serverP50Ms, r.floorP50Ms])));
  }
  if (curves.catchup && !curves.catchup.error) {
    if (curves.catchup.skipped) log(`threadChanges catch-up: skipped (${curves.catchup.skipped})`);
    else {
      log(`threadChanges catch-up, per change: ${curves.catchup.perChange}`);
      log(table(['changes', 'catch-up ms', 'first event ms', 'events', 'ms/change'], curves.catchup.rows.map((r: any) => [r.changes, r.catchUpMs, r.firstEventMs, r.events, r.msPerChange])));
    }
  }
  if (curves.memory?.rows) {
    log(`Server memory per idle ${curves.memory.stream} subscriber (after a full GC): ${curves.memory.perSubscriber}`);
    log(table(['subscribers', 'RSS KiB/subscriber', 'heap KiB/subscriber', 'heap used MiB'], curves.memory.rows.map((r: any) => [r.subscribers, r.rssKiBPerSubscriber, r.heapKiBPerSubscriber, r.heapUsedMiB])));
  }
  return report;
}

interface TargetRow {
  path: string;
  target: string;
  /** The figure, and its floor's from the same run. */
  figure: string;
  ratio: number | null;
  met: boolean;
}

/** What bench/README.md's table shows: each path's target, its figure against its floor, met or not. */
function targets(report: Record<string, any>): TargetRow[] {
  const rows: TargetRow[] = [];
  const write = (report.write ?? []) as WriteRow[];
  const at = (workers: number) => write.find((row) => row.workers === workers);
  const widest = write.at(-1);
  if (widest) {
    rows.push({
      path: 'write',
      target: `W=${widest.workers} events/s ≥ 0.5× the floor's`,
      figure: `${Math.round(widest.server.eventsPerSecond)} / ${Math.round(widest.floor.eventsPerSecond)} (rounds ${widest.roundRatios.join(', ')})`,
      ratio: widest.throughputRatio,
      met: (widest.throughputRatio ?? 0) >= 0.5,
    });
  }
  const single = at(1);
  if (single) {
    rows.push({
      path: 'write',
      target: 'W=1 event p50 ≤ 2× the floor’s',
      figure: `${round(single.server.eventLatencyMs.p50)} / ${round(single.floor.eventLatencyMs.p50)} ms`,
      ratio: single.p50Ratio,
      met: (single.p50Ratio ?? Infinity) <= 2,
    });
    rows.push({
      path: 'write',
      target: 'W=1 ≤ 3 SQL statements and ≤ 0.9 ms server CPU per event (the floor: one call)',
      figure: `${single.server.statementsPerEvent} statements, ${single.server.serverCpuMsPerEvent} ms`,
      ratio: null,
      met: single.server.statementsPerEvent <= 3 && single.server.serverCpuMsPerEvent <= 0.9,
    });
  }
  const batch = report.batch as BatchRow | undefined;
  if (batch) {
    const figure = `${Math.round(batch.server.eventsPerSecond)} / ${Math.round(batch.eventFloor.eventsPerSecond)} / ${Math.round(batch.batchFloor.eventsPerSecond)} events/s`;
    rows.push({
      path: 'write, batched',
      target: `W=${batch.workers} × ${batch.runsAtOnce} runs: events/s ≥ 1.5× the per-event floor's`,
      figure,
      ratio: batch.overEventFloor,
      met: (batch.overEventFloor ?? 0) >= 1.5,
    });
    rows.push({
      path: 'write, batched',
      target: 'events/s ≥ 0.6× the batch floor’s (one transaction per batch)',
      figure,
      ratio: batch.overBatchFloor,
      met: (batch.overBatchFloor ?? 0) >= 0.6,
    });
  }
  const fixed = report.fixedBatches as FixedBatchesWindow | undefined;
  if (fixed) {
    rows.push({
      path: 'write, batched',
      target: `server CPU per event in batches of ${fixed.batchSize} ≤ 0.15 ms`,
      figure: `${round(fixed.serverCpuMsPerEvent, 3)} ms (net of the idle server's ${round(fixed.serverIdleCpuMsPerSecond, 1)} ms/s: ${round(fixed.serverCpuMsPerEventNetOfIdle, 3)}; W=${fixed.workers}, ${Math.round(fixed.eventsPerSecond)} events/s)`,
      ratio: null,
      met: fixed.serverCpuMsPerEvent <= 0.15,
    });
  }
  const read = report.read as ReadRow | undefined;
  if (read) {
    rows.push({
      path: 'read',
      target: `threadAudits(limit: ${read.limit}) p50 ≤ 3× the floor's (${read.audits} audits)`,
      figure: `${round(read.server.latencyMs.p50)} / ${round(read.floor.latencyMs.p50)} ms, ${read.server.statementsPerCall} statements`,
      ratio: read.p50Ratio,
      met: (read.p50Ratio ?? Infinity) <= 3,
    });
  }
  for (const row of (report.fanout ?? []) as FanoutRow[]) {
    if (row.subscribers < 1000 || !row.fromCommitMs) continue;
    const { lost, duplicated, outOfOrder } = row.integrity;
    const floorP99 = row.floor?.fromCommitMs?.p99;
    rows.push({
      path: 'fan-out',
      target: `p99 < 50 ms at ${row.subscribers} subscribers, nothing lost (${row.stream}, ${row.pubsub}, one change every ${round(row.intervalMs, 1)} ms)`,
      figure: `p99 ${round(row.fromCommitMs.p99, 1)} / ${round(floorP99 ?? NaN, 1)} ms; ${lost} lost, ${duplicated} duplicated, ${outOfOrder} out of order`,
      ratio: floorP99 ? ratio(row.fromCommitMs.p99, floorP99) : null,
      met: row.fromCommitMs.p99 < 50 && lost + duplicated + outOfOrder === 0,
    });
  }
  for (const storm of (report.storm ?? []) as (StormResult & { pubsub: string })[]) {
    rows.push({
      path: 'storm',
      target: `${storm.subscribers} threadChanges subscribers resume at once (${storm.pubsub}): none missing or differing`,
      figure: `live again in ${round((storm.liveAgainMs ?? NaN) / 1000, 1)} s; ${storm.views.missing} missing, ${storm.views.differing} differing`,
      ratio: null,
      met: storm.views.missing + storm.views.differing + storm.errors === 0 && storm.liveAgain === storm.subscribers,
    });
  }
  for (const failure of (report.stormFailures ?? []) as { pubsub: string; error: string }[]) {
    rows.push({ path: 'storm', target: `threadChanges subscribers resume at once (${failure.pubsub})`, figure: `failed: ${failure.error}`, ratio: null, met: false });
  }
  if (report.export) {
    rows.push({
      path: 'export',
      target: `W=${Math.max(...settings.workers)} events/s with the export on ≥ 0.9× off`,
      figure: `on ${report.export.eventsPerSecond.on.join(', ')} / off ${report.export.eventsPerSecond.off.join(', ')}`,
      ratio: report.export.onOverOff,
      met: report.export.onOverOff >= 0.9,
    });
  }
  return rows;
}

async function main() {
  const started = Date.now();
  const adminUrl = process.env.DATABASE_URL;
  log(`Opening the ${adminUrl ? 'PostgreSQL' : 'PGlite'} backend…`);
  const backend = adminUrl ? await openPostgresBackend(adminUrl) : await openPgliteBackend();
  const report: Record<string, unknown> = {
    command: `npm run bench --${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`,
    backend: backend.kind,
    startedAt: new Date(started).toISOString(),
    settings,
    machine: machine(backend),
    floorPoolSize: backend.kind === 'postgres' ? FLOOR_POOL_SIZE : 1,
  };
  let server: ServerProcess | null = null;
  let http: GraphQLHttp | null = null;
  // Ctrl-C: stop the server and drop the scratch database before leaving.
  process.once('SIGINT', () => {
    log('\nInterrupted: cleaning up…');
    void (async () => {
      await server?.stop().catch(() => {});
      await backend.close().catch(() => {});
      process.exit(130);
    })();
  });
  profileDir = settings.profile ? join(RESULTS, `profile-${new Date(started).toISOString().replace(/[:.]/g, '-')}`) : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  try {
    let timeline: { server: string; floor: string } | null = null;
    if (runs('read')) {
      log(`Seeding a thread of ${settings.audits} audits…`);
      const serverThread = await backend.beforeServer((sql) => seedTimeline(sql, OWNER, settings.audits));
      const floorThread = backend.floorSharesServerData ? serverThread : await seedTimeline(backend.floor, OWNER, settings.audits);
      timeline = { server: serverThread, floor: floorThread };
    }

    const secret = randomBytes(32).toString('base64url');
    if (settings.sections.some((section) => section !== 'curves' && section !== 'export')) {
      log('Starting the server process…');
      server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
      http = new GraphQLHttp(server.url);
      await runSections(server, http, backend, secret, timeline, report);
      http.close();
      await server.stop();
      server = null;
    }
    if (runs('export')) report.export = await exportSection(backend, secret);
    // Last: the curves seed millions of rows, and on PGlite only while no server runs.
    if (runs('curves')) report.curves = await curvesSection(backend, secret);
  } finally {
    http?.close();
    await server?.stop().catch((error: unknown) => console.error('Stopping the server failed:', error));
    await backend.close();
  }
  if (profiles.length) {
    report.profile = profiles;
    for (const profile of profiles) printProfile(`server, ${profile.phase}`, profile);
  }
  report.targets = targets(report);
  log('\nTargets (bench/README.md): figure / its floor');
  log(table(['path', 'target', 'figure / floor', 'ratio', 'met'], (report.targets as TargetRow[]).map((row) => [row.path, row.target, row.figure, row.ratio, row.met ? 'yes' : 'no'])));
  report.seconds = Math.round((Date.now() - started) / 1000);
  report.loadAverageAtEnd = os.loadavg().map((value) => round(value, 2));
  // --record: a run bench/README.md cites, in bench/results/recorded/ beside HISTORY.md; like every
  // run's JSON it is gitignored and goes with the run (its pull request, a CI artifact), not in the tree.
  const directory = flags.record ? join(RESULTS, 'recorded') : RESULTS;
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `bench-${backend.kind}-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  log(`\nDone in ${report.seconds} s. Report: ${file}`);
}

await main();
