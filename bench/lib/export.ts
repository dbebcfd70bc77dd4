import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Backend } from './backend.js';
import { GraphQLHttp } from './graphql-http.js';
import { startServer } from './server-process.js';
import { round } from './stats.js';
import { measureWritePath, serverTarget, type WriteWindow } from './write-path.js';

/*
 * The OpenTelemetry export under the write path (docs/export.md): the same W-worker write load
 * against a server without export ("off"), with export to an OTLP sink ("on"), and without the
 * export queue's trigger ("no trigger": what the write path pays for the queue), rounds
 * interleaved so the machine's drift hits every mode alike. The export lag is the server's own
 * histogram (commit to the receiver's answer, agent_audit_export_lag_seconds) over the "on"
 * windows and the drain after them.
 */

export type ExportMode = 'off' | 'on' | 'no trigger';
const MODES: ExportMode[] = ['off', 'on', 'no trigger'];

export interface ExportBenchResult {
  workers: number;
  eventsPerSecond: Record<ExportMode, number[]>;
  /** Median over rounds of on / off and no trigger / off, each round's windows side by side. */
  onOverOff: number;
  noTriggerOverOff: number;
  lagSeconds: { p50: number | null; p99: number | null; max: string; spans: number };
  /** After each "on" window: how long until nothing was left to export. */
  drainSeconds: number[];
  trigger: TriggerCost;
}

/** What the export queue's trigger adds to one thread-cursor bump, measured inside the database. */
export interface TriggerCost {
  updates: number;
  /** Per bump, µs (medians over trials): no trigger; the thread already pending (the usual case); the thread becoming pending. */
  noTriggerUs: number;
  alreadyPendingUs: number;
  becomingPendingUs: number;
}

const TRIGGER_THREADS = 2000;
const TRIGGER_OWNER = 'bench-export-trigger';
const BUMP_ALL = `DO $$ DECLARE t uuid; BEGIN
  FOR t IN SELECT id FROM thread WHERE owner_id = '${TRIGGER_OWNER}' LOOP
    UPDATE thread SET change_cursor = change_cursor + 1 WHERE id = t;
  END LOOP; END $$`;

/**
 * The trigger's own cost, free of the HTTP and machine noise of the write windows: the cursor bump
 * every write makes, run TRIGGER_THREADS times in one statement inside the database, without the
 * trigger, with each thread already pending, and with each thread becoming pending, interleaved.
 */
async function measureTriggerCost(backend: Backend, trials: number): Promise<TriggerCost> {
  return backend.beforeServer(async (sql) => {
    await sql.query(`INSERT INTO thread (id, owner_id) SELECT gen_random_uuid(), $1 FROM generate_series(1, ${TRIGGER_THREADS})`, [TRIGGER_OWNER]);
    const samples = { none: [] as number[], pending: [] as number[], becoming: [] as number[] };
    const timed = async (statement: string) => {
      const started = performance.now();
      await sql.query(statement);
      return ((performance.now() - started) * 1000) / TRIGGER_THREADS;
    };
    const ours = `SELECT id FROM thread WHERE owner_id = '${TRIGGER_OWNER}'`;
    try {
      await timed(BUMP_ALL); // warm-up (and every thread pending)
      for (let trial = 0; trial < trials; trial++) {
        samples.pending.push(await timed(BUMP_ALL));
        await sql.query(`DELETE FROM export_pending WHERE thread_id IN (${ours})`);
        samples.becoming.push(await timed(BUMP_ALL));
        await sql.query('ALTER TABLE thread DISABLE TRIGGER thread_export_pending');
        try {
          samples.none.push(await timed(BUMP_ALL));
        } finally {
          await sql.query('ALTER TABLE thread ENABLE TRIGGER thread_export_pending');
        }
      }
    } finally {
      await sql.query(`DELETE FROM thread WHERE owner_id = $1`, [TRIGGER_OWNER]);
    }
    return {
      updates: TRIGGER_THREADS,
      noTriggerUs: round(median(samples.none), 1)!,
      alreadyPendingUs: round(median(samples.pending), 1)!,
      becomingPendingUs: round(median(samples.becoming), 1)!,
    };
  });
}

/** An OTLP/HTTP sink: answers every request at once, counting them. */
async function startSink() {
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Samples = Map<string, number>;
async function scrape(graphqlUrl: string): Promise<Samples> {
  const text = await (await fetch(graphqlUrl.replace(/\/graphql$/, '/metrics'))).text();
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    const match = /^([^#\s][^ ]*) (\S+)$/.exec(line);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

const BUCKET = /^agent_audit_export_lag_seconds_bucket\{le="([^"]+)"\}$/;
/** The lag histogram's cumulative counts by upper bound, `after` minus `before`. */
function lagBuckets(before: Samples, after: Samples): [number, number][] {
  const buckets: [number, number][] = [];
  for (const [series, count] of after) {
    const match = BUCKET.exec(series);
    if (match) buckets.push([match[1] === '+Inf' ? Infinity : Number(match[1]), count - (before.get(series) ?? 0)]);
  }
  return buckets.sort((a, b) => a[0] - b[0]);
}

/** A quantile of cumulative buckets, interpolated within its bucket as Prometheus' histogram_quantile does. */
function quantile(buckets: [number, number][], q: number): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      if (bound === Infinity) return lower;
      return lower + ((bound - lower) * (rank - below)) / Math.max(1, count - below);
    }
    lower = bound;
    below = count;
  }
  return lower;
}

async function drained(url: string, timeoutMs = 180_000): Promise<number> {
  const started = Date.now();
  while ((await scrape(url)).get('agent_audit_export_backlog_changes') !== 0) {
    if (Date.now() - started > timeoutMs) throw new Error('the export did not drain in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (Date.now() - started) / 1000;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function measureExport(options: {
  backend: Backend;
  secret: string;
  ownerToken: string;
  workerTokens: string[];
  workers: number;
  rounds: number;
  warmupMs: number;
  windowMs: number;
  log: (line: string) => void;
}): Promise<ExportBenchResult> {
  const { backend, workers, log } = options;
  const sink = await startSink();
  const windows: Record<ExportMode, WriteWindow[]> = { off: [], on: [], 'no trigger': [] };
  const drainSeconds: number[] = [];
  let lag: [number, number][] = [];
  const setTrigger = (on: boolean) =>
    backend.beforeServer((sql) => sql.query(`ALTER TABLE thread ${on ? 'ENABLE' : 'DISABLE'} TRIGGER thread_export_pending`));
  try {
    for (let at = 0; at < options.rounds; at++) {
      for (const mode of MODES) {
        if (mode === 'no trigger') await setTrigger(false);
        const server = await startServer({
          ...backend.serverEnv,
          AUTH_JWT_SECRET: options.secret,
          ...(mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {}),
        });
        const http = new GraphQLHttp(server.url);
        try {
          // What earlier windows left for export is sent first: the "on" window measures its own changes.
          if (mode === 'on') await drained(server.url);
          const before = mode === 'on' ? await scrape(server.url) : null;
          const window = await measureWritePath(serverTarget(http, options.ownerToken, options.workerTokens), workers, options.warmupMs, options.windowMs);
          windows[mode].push(window);
          let note = '';
          if (before) {
            const seconds = await drained(server.url);
            drainSeconds.push(round(seconds, 1)!);
            const buckets = lagBuckets(before, await scrape(server.url));
            lag = lag.length ? lag.map(([bound, count], i) => [bound, count + buckets[i]![1]]) : buckets;
            note = `, drained ${round(seconds, 1)} s after the writers stopped, ${buckets.at(-1)?.[1] ?? 0} spans`;
          }
          log(`    export ${mode}, round ${at + 1} of ${options.rounds}: ${Math.round(window.eventsPerSecond)} events/s${note}`);
        } finally {
          http.close();
          await server.stop();
          if (mode === 'no trigger') await setTrigger(true);
        }
      }
    }
  } finally {
    await sink.close();
  }
  const trigger = await measureTriggerCost(backend, Math.max(5, options.rounds * 2));
  log(`    trigger: a cursor bump costs ${trigger.noTriggerUs} µs without it, ${trigger.alreadyPendingUs} µs with the thread already pending, ${trigger.becomingPendingUs} µs becoming pending`);
  const rates = (mode: ExportMode) => windows[mode].map((window) => round(window.eventsPerSecond, 0)!);
  const ratios = (mode: ExportMode) => windows[mode].map((window, i) => window.eventsPerSecond / windows.off[i]!.eventsPerSecond);
  const maxBucket = lag.find(([, count]) => count === lag.at(-1)?.[1]);
  return {
    workers,
    eventsPerSecond: { off: rates('off'), on: rates('on'), 'no trigger': rates('no trigger') },
    onOverOff: round(median(ratios('on')), 3)!,
    noTriggerOverOff: round(median(ratios('no trigger')), 3)!,
    lagSeconds: {
      p50: round(quantile(lag, 0.5) ?? NaN, 3),
      p99: round(quantile(lag, 0.99) ?? NaN, 3),
      max: maxBucket ? `<= ${maxBucket[0]}` : 'n/a',
      spans: lag.at(-1)?.[1] ?? 0,
    },
    drainSeconds,
    trigger,
  };
}
