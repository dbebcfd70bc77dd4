// npm run bench [-- --quick] [--sections census,write,cursor,read,fanout,storm,curves,layers,export] [--workers 1,8,32]
//   [--subscribers 100,1000] [--transports ws,sse] [--streams toolStatusChanged,threadChanges] [--redis URL]
//   [--pubsubs memory,redis]
//   [--events 1000] [--audits 5000] [--seconds 9] [--rounds 3] [--minimum-pool 8] [--profile] [--record]
//   [--curves write,read,catchup,memory] [--scale 1] [--interval 40,20] [--writers 1,4]
//   (LAYER_RUNS=N: more runs per layer, for --profile)
//
// Against embedded PGlite by default; against PostgreSQL when DATABASE_URL is set (an admin URL:
// the bench creates a fresh database there and drops it afterwards). The server runs as its own
// process (src/main.ts); every number is printed next to its plain-SQL floor from the same run.
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { openDatabase } from '../src/db/database.js';
import { openPgliteBackend, openPostgresBackend, FLOOR_POOL_SIZE, MINIMUM_FLOOR_POOL_SIZE, type Backend } from './lib/backend.js';
import { ensureCursorColumns } from './lib/floor-minimum.js';
import { readCensus, writeCensus, type CensusEntry } from './lib/census.js';
import { summarizeProfile } from './lib/cpuprofile.js';
import { measureFanout, measureFanoutFloor, type FanoutFloorResult, type FanoutResult } from './lib/fanout.js';
import type { Stream, Transport } from './lib/fanout-subscribers.js';
import { CURVES, GROWTH_THRESHOLD, runCurves, type Curve } from './lib/curves.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { measureLayers } from './lib/layers.js';
import { measureExport } from './lib/export.js';
import { measureStorm, type StormResult } from './lib/storm.js';
import { LIFECYCLE_OPS } from './lib/run-script.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { serverCreateThread, serverHasThreadChanges } from './lib/server-worker.js';
import { sqlOverDriver, type Sql } from './lib/sql.js';
import { round, table } from './lib/stats.js';
import { measureFloorRead, measureServerRead, READ_WARMUPS, seedTimeline, type ReadResult } from './lib/timeline.js';
import { combineWindows, floorTarget, measureWritePath, minimumTarget, serverTarget, type WriteResult, type WriteTarget, type WriteWindow } from './lib/write-path.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = join(ROOT, 'bench/results');
/**
 * Fan-out's loads: the thread changes every 40 ms, then every 20 ms (25 and 50 changes a second:
 * 25,000 and 50,000 frames a second to 1,000 subscribers), steadily, so latency is measured at
 * known loads rather than at whatever rate the machine saturates at (`--interval 0` measures that).
 */
const DEFAULT_FANOUT_INTERVALS_MS = [40, 20];
const SECTIONS = ['census', 'write', 'cursor', 'read', 'fanout', 'storm', 'curves', 'layers', 'export'] as const;
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
    'minimum-pool': { type: 'string' },
    streams: { type: 'string' },
    interval: { type: 'string' },
    writers: { type: 'string' },
    redis: { type: 'string' },
    pubsubs: { type: 'string' },
    scale: { type: 'string' },
    curves: { type: 'string' },
    record: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (flags.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 8).join('\n'));
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
  layerRuns: quick ? 10 : Number(process.env.LAYER_RUNS ?? 40),
  profile: flags.profile,
  minimumPoolSize: Number(flags['minimum-pool'] ?? MINIMUM_FLOOR_POOL_SIZE),
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
  const file = await server.profileStop(join(profileDir, `${phase}.cpuprofile`));
  profiles.push({ ...summarizeProfile(file), phase });
  return value;
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
  /** The floor repeating the server's statements; benchCpuMsPerEvent: the bench process's CPU (with PGlite, the database's too). */
  floor: WriteResult & { benchCpuMsPerEvent: number; statementsPerEvent: number };
  /** The minimum-work floor (lib/floor-minimum.ts), with the change cursor. */
  minimum: WriteResult & { benchCpuMsPerEvent: number; statementsPerEvent: number };
  /** Medians of the rounds' ratios, each round measuring the floors then the server. */
  throughputRatio: number | null;
  roundRatios: (number | null)[];
  /** The headline (issue 18): server over the minimum-work floor. */
  minimumRatio: number | null;
  minimumRoundRatios: (number | null)[];
  /** p50 of every lifecycle event's latency, server over the minimum-work floor (issue 18: at most 2 at W=1). */
  minimumP50Ratio: number | null;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const medianOf = (values: (number | null)[]) => round(median(values.filter((value): value is number => value !== null)), 2);

/** One target measured in rounds: its windows, the bench process's CPU and the SQL statements it sent. */
class Measured {
  windows: WriteWindow[] = [];
  cpuUs = 0;
  statements = 0;

  constructor(
    private readonly target: WriteTarget,
    private readonly sql: Sql | null,
  ) {}

  async round(workers: number, warmupMs: number, windowMs: number) {
    const cpu = process.cpuUsage();
    const statements = this.sql?.statements ?? 0;
    this.windows.push(await measureWritePath(this.target, workers, warmupMs, windowMs));
    const used = process.cpuUsage(cpu);
    this.cpuUs += used.user + used.system;
    this.statements += (this.sql?.statements ?? 0) - statements;
    return this.windows[this.windows.length - 1]!.eventsPerSecond;
  }

  result() {
    const combined = combineWindows(this.windows);
    return {
      ...combined,
      benchCpuMsPerEvent: round(this.cpuUs / 1000 / combined.phaseEvents, 2)!,
      // createRun's statements are counted too; they are one per ten events.
      statementsPerEvent: round(this.statements / combined.phaseEvents, 2)!,
    };
  }

  ratios(server: WriteWindow[]) {
    return server.map((window, index) => ratio(window.eventsPerSecond, this.windows[index]!.eventsPerSecond));
  }
}

/**
 * Per W, `rounds` rounds of the two floors then the server, each measuring its share of the window:
 * load on this shared machine drifts over tens of seconds, and interleaving puts every side under
 * the same drift. The ratios reported are the medians of the rounds' ratios, with each round's.
 */
async function writeSection(server: ServerProcess, http: GraphQLHttp, backend: Backend, ownerToken: string, workerTokens: string[]) {
  const rows: WriteRow[] = [];
  const workerSubs = workerTokens.map((_, index) => `bench-worker-${index}`);
  const windowMs = (settings.measureSeconds * 1000) / settings.rounds;
  for (const workers of settings.workers) {
    const floor = new Measured(floorTarget(backend.floor, OWNER, workerSubs), backend.floor);
    const minimum = new Measured(minimumTarget(backend.minimumFloor, OWNER, workerSubs, { cursor: true }), backend.minimumFloor);
    const serverWindows: WriteWindow[] = [];
    let serverCounts = { statements: 0, cpuUs: 0, preemptions: null as number | null };
    for (let round = 0; round < settings.rounds; round++) {
      const warmupMs = round === 0 ? settings.warmupSeconds * 1000 : 1000;
      log(`  write path, W=${workers}, round ${round + 1} of ${settings.rounds}: floor, minimum-work floor, then server…`);
      const floorRate = await floor.round(workers, warmupMs, windowMs);
      const minimumRate = await minimum.round(workers, warmupMs, windowMs);
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
      const serverRate = serverWindows[serverWindows.length - 1]!.eventsPerSecond;
      log(`    server ${Math.round(serverRate)} events/s, floor ${Math.round(floorRate)}, minimum-work floor ${Math.round(minimumRate)}`);
    }
    const measured = combineWindows(serverWindows);
    const minimumResult = minimum.result();
    const roundRatios = floor.ratios(serverWindows);
    const minimumRoundRatios = minimum.ratios(serverWindows);
    rows.push({
      workers,
      server: {
        ...measured,
        statementsPerEvent: round(serverCounts.statements / measured.phaseEvents, 1)!,
        serverCpuMsPerEvent: round(serverCounts.cpuUs / 1000 / measured.phaseEvents, 2)!,
        preemptionsPerEvent: serverCounts.preemptions === null ? null : round(serverCounts.preemptions / measured.phaseEvents, 1),
      },
      floor: floor.result(),
      minimum: minimumResult,
      throughputRatio: medianOf(roundRatios),
      roundRatios,
      minimumRatio: medianOf(minimumRoundRatios),
      minimumRoundRatios,
      minimumP50Ratio: ratio(measured.eventLatencyMs.p50, minimumResult.eventLatencyMs.p50),
    });
  }
  return rows;
}

function printWrite(rows: WriteRow[]) {
  log('\nWrite path: lifecycle events/s (claim … finishRun, ten per run), server over HTTP vs the two plain-SQL floors');
  log(
    table(
      ['W', 'server ev/s', 'minimum ev/s', 'server/minimum (median)', 'rounds', 'floor ev/s', 'server/floor (median)', 'rounds', 'event p50 server/minimum'],
      rows.map((row) => [
        row.workers,
        Math.round(row.server.eventsPerSecond),
        Math.round(row.minimum.eventsPerSecond),
        row.minimumRatio,
        row.minimumRoundRatios.map((value) => value ?? '—').join(' '),
        Math.round(row.floor.eventsPerSecond),
        row.throughputRatio,
        row.roundRatios.map((value) => value ?? '—').join(' '),
        row.minimumP50Ratio,
      ]),
    ),
  );
  log('\nCost per event: server CPU and SQL statements (the probe), against both floors (their client process)');
  log(
    table(
      ['W', 'server CPU ms/ev', 'server preempted /ev', 'server SQL/ev', 'minimum SQL/ev', 'minimum client CPU ms/ev', 'floor SQL/ev', 'floor client CPU ms/ev'],
      rows.map((row) => [
        row.workers,
        row.server.serverCpuMsPerEvent,
        row.server.preemptionsPerEvent,
        row.server.statementsPerEvent,
        row.minimum.statementsPerEvent,
        row.minimum.benchCpuMsPerEvent,
        row.floor.statementsPerEvent,
        row.floor.benchCpuMsPerEvent,
      ]),
    ),
  );
  for (const row of rows) {
    log(`\nW=${row.workers}: latency per mutation, ms (server | minimum-work floor | floor)`);
    log(
      table(
        ['mutation', 'server p50', 'server p99', 'minimum p50', 'minimum p99', 'floor p50', 'floor p99', 'p50 server/minimum'],
        ['createRun', ...LIFECYCLE_OPS].map((op) => {
          const server = row.server.latencyMs[op];
          const minimum = row.minimum.latencyMs[op];
          const floor = row.floor.latencyMs[op];
          return [
            op, round(server?.p50 ?? NaN), round(server?.p99 ?? NaN), round(minimum?.p50 ?? NaN), round(minimum?.p99 ?? NaN),
            round(floor?.p50 ?? NaN), round(floor?.p99 ?? NaN), ratio(server?.p50 ?? NaN, minimum?.p50 ?? NaN),
          ];
        }),
      ),
    );
  }
}

interface CursorRow {
  workers: number;
  without: ReturnType<Measured['result']>;
  with: ReturnType<Measured['result']>;
  /** Median of the rounds' ratios, events/s with the cursor over without. */
  throughputRatio: number | null;
  roundRatios: (number | null)[];
}

/**
 * The write path's cost of the change cursor (issue 20): the minimum-work floor with and without
 * the cursor bump, in interleaved rounds as in the write section.
 */
async function cursorSection(backend: Backend) {
  const rows: CursorRow[] = [];
  const workerSubs = Array.from({ length: Math.max(...settings.workers, 1) }, (_, index) => `bench-cursor-${index}`);
  const windowMs = (settings.measureSeconds * 1000) / settings.rounds;
  for (const workers of settings.workers) {
    const without = new Measured(minimumTarget(backend.minimumFloor, OWNER, workerSubs, { cursor: false }), backend.minimumFloor);
    const withCursor = new Measured(minimumTarget(backend.minimumFloor, OWNER, workerSubs, { cursor: true }), backend.minimumFloor);
    for (let round = 0; round < settings.rounds; round++) {
      const warmupMs = round === 0 ? settings.warmupSeconds * 1000 : 1000;
      const a = await without.round(workers, warmupMs, windowMs);
      const b = await withCursor.round(workers, warmupMs, windowMs);
      log(`  cursor cost, W=${workers}, round ${round + 1} of ${settings.rounds}: without ${Math.round(a)} events/s, with ${Math.round(b)}`);
    }
    const roundRatios = without.ratios(withCursor.windows);
    rows.push({ workers, without: without.result(), with: withCursor.result(), throughputRatio: medianOf(roundRatios), roundRatios });
  }
  log('\nThe change cursor\'s cost on the write path: the minimum-work floor without and with the cursor bump');
  log(
    table(
      ['W', 'without ev/s', 'with ev/s', 'with/without (median)', 'rounds', 'event p50 without', 'event p50 with', 'event p99 without', 'event p99 with'],
      rows.map((row) => [
        row.workers,
        Math.round(row.without.eventsPerSecond),
        Math.round(row.with.eventsPerSecond),
        row.throughputRatio,
        row.roundRatios.map((value) => value ?? '—').join(' '),
        round(row.without.eventLatencyMs.p50),
        round(row.with.eventLatencyMs.p50),
        round(row.without.eventLatencyMs.p99),
        round(row.with.eventLatencyMs.p99),
      ]),
    ),
  );
  return rows;
}

function printCensus(entries: CensusEntry[], title: string) {
  log(`\n${title}`);
  log(
    table(
      ['operation', 'server SQL', 'floor SQL', 'minimum-work floor SQL', 'server db ms', 'latency ms'],
      entries.map((e) => [e.op, e.statements, e.floorStatements ?? null, e.minimumStatements ?? null, round(e.dbMs), round(e.latencyMs)]),
    ),
  );
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

  if (runs('census')) {
    log('Census: SQL statements per request…');
    const threadId = await serverCreateThread(http, ownerToken, 'census');
    const write = await writeCensus(server, http, { owner: ownerToken, worker: workerTokens[0]! }, threadId, {
      sql: backend.floor,
      minimum: backend.minimumFloor,
      ownerSub: OWNER,
      workerSub: 'bench-worker-0',
    });
    const read = timeline ? await readCensus(server, http, ownerToken, timeline.server, [50, 500]) : [];
    report.census = { write, read };
    printCensus(write, 'Census: SQL statements the server sends per mutation (one run, sequential)');
    const events = write.filter((entry) => entry.op !== 'createRun');
    const perEvent = (pick: (entry: CensusEntry) => number | undefined) => round(events.reduce((sum, entry) => sum + (pick(entry) ?? NaN), 0) / events.length, 1);
    const statementsPerEvent = { server: perEvent((e) => e.statements), floor: perEvent((e) => e.floorStatements), minimum: perEvent((e) => e.minimumStatements) };
    report.census = { write, read, statementsPerEvent };
    log(`Per lifecycle event: server ${statementsPerEvent.server} statements, floor ${statementsPerEvent.floor}, minimum-work floor ${statementsPerEvent.minimum} (issue 18: at most 3)`);
    if (read.length) printCensus(read, 'Census: SQL statements per timeline read');
  }

  if (runs('write')) {
    log('Write path…');
    const rows = await writeSection(server, http, backend, ownerToken, workerTokens);
    report.write = rows;
    printWrite(rows);
  }

  if (runs('cursor')) {
    log('Cost of the change cursor…');
    report.cursor = await cursorSection(backend);
  }

  if (runs('read') && timeline) {
    log('Timeline read…');
    const limit = 500;
    const before = await server.counts();
    const serverRead = await profiled(server, 'read', () => measureServerRead(http, ownerToken, timeline.server, limit, settings.readIterations));
    const after = await server.counts();
    const cpuMsPerRead = round((after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / 1000 / (settings.readIterations + READ_WARMUPS), 2)!;
    const floorRead = await measureFloorRead(backend.floor, OWNER, timeline.floor, limit, settings.readIterations);
    const census = await readCensus(server, http, ownerToken, timeline.server, [limit]);
    const read: ReadRow = {
      limit,
      audits: settings.audits,
      server: { ...serverRead, statementsPerCall: census[0]?.statements ?? null, cpuMsPerRead },
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
    if (!(await serverHasThreadChanges(http, ownerToken))) {
      log('  skipped: the server has no Subscription.threadChanges yet (issue 20)');
      report.storm = { skipped: 'the server has no Subscription.threadChanges yet (issue 20)' };
    } else {
      const subscribers = Math.max(...settings.subscribers);
      const results: (StormResult & { pubsub: string })[] = [];
      for (const pubsub of settings.pubsubs) {
        const result = await onPubsub(pubsub, { server, http, backend, secret }, async (_writer, targetHttp, fanoutServer) => {
          log(`  ${subscribers} threadChanges subscribers, pub/sub ${pubsub}…`);
          const threadId = await serverCreateThread(targetHttp, ownerToken, `storm ${pubsub}`);
          return measureStorm({ server: fanoutServer, http: targetHttp, ownerToken, workerToken: workerTokens[0]!, threadId, subscribers, log });
        });
        if (result) results.push({ ...result, pubsub });
      }
      report.storm = results;
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
    log(`Write path at W=${curves.write.workers}, by audits already in the table: server ${curves.write.server}, minimum-work floor ${curves.write.minimumFloor}`);
    log(table(['audits in table', 'server ev/s', 'minimum ev/s'], curves.write.rows.map((r: any) => [r.auditsInTable, r.serverEventsPerSecond, r.minimumEventsPerSecond])));
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

async function layersSection(backend: Backend) {
  const dataDir = backend.kind === 'pglite' ? mkdtempSync(join(tmpdir(), 'audit-bench-layers-')) : null;
  const databaseUrl = backend.serverEnv.DATABASE_URL;
  try {
    const database = await openDatabase(databaseUrl ? { url: databaseUrl } : { dataDir: dataDir! });
    const result = await measureLayers({ database, floor: sqlOverDriver(database.driver), databaseUrl, runs: settings.layerRuns, profileDir });
    log('\nLayers, one process, W=1: CPU per request (createRun and the ten lifecycle events of each run)');
    let previous: number | null = null;
    log(
      table(
        ['layer', 'CPU ms/request', 'added by this layer', 'wall ms/request'],
        result.rows.map((row) => {
          const added = previous === null ? null : round(row.cpuMsPerRequest - previous, 3);
          previous = row.cpuMsPerRequest;
          return [row.layer, row.cpuMsPerRequest, added, row.wallMsPerRequest];
        }),
      ),
    );
    for (const row of result.rows) if (row.profile) printProfile(`layer "${row.layer}" (this process)`, row.profile);
    const p = result.pieces;
    log('\nPieces, CPU ms per call (one at a time)');
    log(
      table(
        ['piece', 'through the server stack', 'plain', 'ratio'],
        [
          ['yoga `{ __typename }` with a token | without', p.yogaTrivialQueryWithTokenMs, p.yogaTrivialQueryNoTokenMs, null],
          ["the server's token verifier (src/auth/jwt.ts) | jose jwtVerify", p.tokenVerifierMs, p.joseVerifyMs, null],
          ['jose jwtVerify (WebCrypto) | HMAC-SHA256 with node:crypto', p.joseVerifyMs, p.hmacSha256Ms, ratio(p.joseVerifyMs, p.hmacSha256Ms)],
          ['recordToolFinished refused by scope auth (no resolver)', p.yogaRefusedMutationMs, null, null],
          ['SELECT a message by its key: Prisma findUnique | pg', p.prismaFindUniqueMs, p.sqlSelectByKeyMs, ratio(p.prismaFindUniqueMs, p.sqlSelectByKeyMs)],
          ['SELECT 1: Prisma $queryRawUnsafe | pg', p.prismaRawSelect1Ms, p.sqlSelect1Ms, ratio(p.prismaRawSelect1Ms, p.sqlSelect1Ms)],
          ['BEGIN; SELECT 1; COMMIT: Prisma $transaction | pg', p.prismaTransactionSelect1Ms, p.sqlTransactionSelect1Ms, ratio(p.prismaTransactionSelect1Ms, p.sqlTransactionSelect1Ms)],
        ],
      ),
    );
    return result;
  } finally {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const started = Date.now();
  const adminUrl = process.env.DATABASE_URL;
  log(`Opening the ${adminUrl ? 'PostgreSQL' : 'PGlite'} backend…`);
  const backend = adminUrl ? await openPostgresBackend(adminUrl, settings.minimumPoolSize) : await openPgliteBackend();
  // Before the server starts: on PostgreSQL the floors share its database.
  const cursorColumns = await ensureCursorColumns(backend.floor);
  const report: Record<string, unknown> = {
    command: `npm run bench --${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`,
    backend: backend.kind,
    startedAt: new Date(started).toISOString(),
    settings,
    machine: machine(backend),
    floorPoolSize: backend.kind === 'postgres' ? FLOOR_POOL_SIZE : 1,
    minimumFloorPoolSize: backend.kind === 'postgres' ? settings.minimumPoolSize : 1,
    /** Where the minimum-work floor's change cursor columns came from (lib/floor-minimum.ts). */
    cursorColumns,
  };
  if (cursorColumns !== 'schema') log('The schema has no change cursor yet: the bench added the columns to its scratch database for the minimum-work floor.');
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
    if (runs('read') || runs('census')) {
      log(`Seeding a thread of ${settings.audits} audits…`);
      const serverThread = await backend.beforeServer((sql) => seedTimeline(sql, OWNER, settings.audits));
      const floorThread = backend.floorSharesServerData ? serverThread : await seedTimeline(backend.floor, OWNER, settings.audits);
      timeline = { server: serverThread, floor: floorThread };
    }

    const secret = randomBytes(32).toString('base64url');
    if (settings.sections.some((section) => section !== 'layers' && section !== 'curves' && section !== 'export')) {
      log('Starting the server process…');
      server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
      http = new GraphQLHttp(server.url);
      await runSections(server, http, backend, secret, timeline, report);
      http.close();
      await server.stop();
      server = null;
    }
    if (runs('export')) report.export = await exportSection(backend, secret);
    // Last but layers: the curves seed millions of rows, and on PGlite only while no server runs.
    if (runs('curves')) report.curves = await curvesSection(backend, secret);
    if (runs('layers')) {
      log('Layers…');
      report.layers = await layersSection(backend);
    }
  } finally {
    http?.close();
    await server?.stop().catch((error: unknown) => console.error('Stopping the server failed:', error));
    await backend.close();
  }
  if (profiles.length) {
    report.profile = profiles;
    for (const profile of profiles) printProfile(`server, ${profile.phase}`, profile);
  }
  report.seconds = Math.round((Date.now() - started) / 1000);
  report.loadAverageAtEnd = os.loadavg().map((value) => round(value, 2));
  // --record: a run bench/README.md cites, kept in git (bench/results/recorded/); the rest are not.
  const directory = flags.record ? join(RESULTS, 'recorded') : RESULTS;
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `bench-${backend.kind}-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  log(`\nDone in ${report.seconds} s. Report: ${file}`);
}

await main();
