// DATABASE_URL=<admin URL> npx tsx bench/live-batches.ts [--workers 4] [--runs-at-once 10] [--threads 4]
//   [--subscribers 5] [--interval 100] [--seconds 8] [--rounds 2]
//   DATABASE_URL for PostgreSQL (a scratch database, dropped afterwards), else PGlite
//
// Issue 45, live delivery with batches: every change delivered once, in commit order, p99 from
// commit within 1.2× of unbatched. W workers, each one AuditClient, drive R runs at once spread
// over T threads (the run script of lib/run-script.ts, each run's next event `interval` ms after
// its previous one was sent or answered, whichever is later: the same offered load either way),
// with the client's batching writer on (batched) or off (each event its own mutation). S
// graphql-ws subscribers of threadChanges watch each thread (lib/live-subscribers.ts, their own
// process). The two modes alternate within the run, on fresh threads each phase; each phase's
// window is the changes committed from its start to the writers' stop, by the threads' change
// cursors: each subscriber must receive each of them once, in cursor (commit) order. Latency runs
// from a change's `committedAt` (the database clock when it took its cursor, at or before its
// COMMIT: for a batch's change it includes the rest of the batch's transaction) to its receipt.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { mintToken } from '../src/auth/jwt.js';
import { openPgliteBackend, openPostgresBackend } from './lib/backend.js';
import { clientStep } from './lib/batch-path.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { ipcClient } from './lib/ipc.js';
import type { Delivery, LiveRequest } from './lib/live-subscribers.js';
import { counterOf } from './lib/live-subscribers.js';
import { runScript } from './lib/run-script.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { serverChangeCursor, serverCreateRun, serverCreateThread, type Lease } from './lib/server-worker.js';
import { round, summarize, table, type Summary } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: {
    workers: { type: 'string' },
    'runs-at-once': { type: 'string' },
    threads: { type: 'string' },
    subscribers: { type: 'string' },
    interval: { type: 'string' },
    seconds: { type: 'string' },
    rounds: { type: 'string' },
  },
});
const workers = Number(flags.workers ?? 4);
const runsAtOnce = Number(flags['runs-at-once'] ?? 10);
const threads = Number(flags.threads ?? 4);
const perThread = Number(flags.subscribers ?? 5);
const intervalMs = Number(flags.interval ?? 100);
const seconds = Number(flags.seconds ?? 8);
const rounds = Number(flags.rounds ?? 2);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SUBSCRIBERS = fileURLToPath(new URL('./lib/live-subscribers.ts', import.meta.url));
const OWNER = 'bench-live-owner';
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

type Mode = 'unbatched' | 'batched';

interface Phase {
  mode: Mode;
  round: number;
  events: number;
  requests: number;
  eventsPerSecond: number;
  /** From send to answer, per lifecycle event, at the writer. */
  answeredMs: Summary;
  delivery: Delivery;
  /**
   * Catch-up reads the server's streams made in the phase: a lagging stream's, or a gap's (a
   * change neither published nor found in the database as committed), where a change may be
   * folded into its entity's later state (src/realtime/change-stream.ts); such a change is
   * counted lost.
   */
  catchUps: number;
  /** Look-ups the streams made in the phase: a change whose publish was late, read as committed (no fold). */
  lookUps: number;
  complete: boolean;
  errors: number;
  firstError?: string;
}

/** The server's counts of its streams' catch-up reads and look-ups (`/metrics`, served to loopback clients). */
async function streamReads(server: ServerProcess): Promise<{ catchUps: number; lookUps: number }> {
  const text = await (await fetch(`${server.url.replace(/\/graphql$/, '')}/metrics`)).text();
  const count = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { catchUps: count('agent_audit_subscription_catch_ups_total'), lookUps: count('agent_audit_subscription_look_ups_total') };
}

async function phase(server: ServerProcess, http: GraphQLHttp, ownerToken: string, workerTokens: string[], mode: Mode, roundIndex: number): Promise<Phase> {
  const threadIds = await Promise.all(Array.from({ length: threads }, (_, t) => serverCreateThread(http, ownerToken, `live ${mode} ${roundIndex}.${t}`)));
  const child = spawn(process.execPath, ['--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = ipcClient(child);
  const counter = { requests: 0 };
  const countingFetch: FetchLike = (input, init) => {
    counter.requests++;
    return fetch(input, init);
  };
  const clients = workerTokens.map((token) => new AuditClient({ url: server.url, token, fetch: countingFetch, batching: mode === 'batched' }));
  try {
    const { connected } = await ask<{ connected: number }>({ command: 'start', url: server.wsUrl, token: ownerToken, threadIds, perThread } satisfies LiveRequest);
    if (connected < threads * perThread) throw new Error(`only ${connected} of ${threads * perThread} subscribers connected`);
    // Warm-up: a run created on each thread until every subscriber has received that change.
    const warmUntil = Date.now() + 60_000;
    for (const threadId of threadIds) {
      for (;;) {
        await serverCreateRun(http, ownerToken, threadId);
        await pause(100);
        const counter = counterOf(await serverChangeCursor(http, ownerToken, threadId));
        if ((await ask<number>({ command: 'received', threadId, counter } satisfies LiveRequest)) === perThread) break;
        if (Date.now() > warmUntil) throw new Error(`subscribers never went live: ${JSON.stringify(await ask({ command: 'summarize', windows: [] }))}`);
      }
    }

    const readsBefore = await streamReads(server);
    const from = await Promise.all(threadIds.map(async (threadId) => counterOf(await serverChangeCursor(http, ownerToken, threadId))));
    const answered: number[] = [];
    const errors: string[] = [];
    let events = 0;
    counter.requests = 0;
    const started = performance.now();
    const stopAt = started + seconds * 1000;
    await Promise.all(
      clients.flatMap((client, worker) =>
        Array.from({ length: runsAtOnce }, async (_, slot) => {
          const threadId = threadIds[(worker * runsAtOnce + slot) % threads]!;
          let lastSent = performance.now() - intervalMs * ((slot % runsAtOnce) / runsAtOnce);
          for (let run = 0; performance.now() < stopAt; run++) {
            const runId = await serverCreateRun(http, ownerToken, threadId);
            let lease: Lease | null = null;
            for (const step of runScript(2, `w${worker}s${slot}r${run}`)) {
              const wait = lastSent + intervalMs - performance.now();
              if (wait > 0) await pause(wait);
              if (performance.now() >= stopAt) break;
              lastSent = performance.now();
              try {
                lease = await clientStep(client, runId, lease, step);
                answered.push(performance.now() - lastSent);
                events++;
              } catch (error) {
                errors.push(String(error));
                break;
              }
            }
          }
        }),
      ),
    );
    const elapsed = (performance.now() - started) / 1000;
    const to = await Promise.all(threadIds.map(async (threadId) => counterOf(await serverChangeCursor(http, ownerToken, threadId))));
    const windows = threadIds.map((threadId, t) => ({ threadId, from: from[t]!, to: to[t]! }));
    const { complete } = await ask<{ complete: boolean }>({ command: 'wait', windows, idleTimeoutMs: 10_000 } satisfies LiveRequest);
    const delivery = await ask<Delivery>({ command: 'summarize', windows } satisfies LiveRequest);
    const readsAfter = await streamReads(server);
    return {
      mode,
      round: roundIndex,
      events,
      requests: counter.requests,
      eventsPerSecond: events / elapsed,
      answeredMs: summarize(answered),
      delivery,
      catchUps: readsAfter.catchUps - readsBefore.catchUps,
      lookUps: readsAfter.lookUps - readsBefore.lookUps,
      complete,
      errors: errors.length,
      ...(errors.length && { firstError: errors[0] }),
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await ask({ command: 'stop' } satisfies LiveRequest).catch(() => {});
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

const adminUrl = process.env.DATABASE_URL;
const backend = adminUrl ? await openPostgresBackend(adminUrl) : await openPgliteBackend();
const loadAtStart = load();
console.log(`${new Date().toISOString()} · ${backend.kind} · load average ${loadAtStart} (a machine shared by four engineers)`);
console.log(
  `W=${workers} workers × ${runsAtOnce} runs at once over ${threads} threads, each run's events ${intervalMs} ms apart ` +
    `(offered ≈ ${Math.round((workers * runsAtOnce * 1000) / intervalMs)} events/s), ${perThread} threadChanges subscribers a thread, ${seconds} s a phase, ${rounds} rounds`,
);
const secret = randomBytes(32).toString('hex');
const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret, LEASE_SWEEP_INTERVAL_MS: '600000' });
const http = new GraphQLHttp(server.url);
const phases: Phase[] = [];
try {
  const ownerToken = await mintToken(secret, { sub: OWNER, role: 'superadmin' }, '2h');
  const workerTokens = await Promise.all(Array.from({ length: workers }, (_, i) => mintToken(secret, { sub: `bench-live-worker-${i}`, role: 'worker' }, '2h')));
  for (let r = 0; r < rounds; r++) {
    // Alternating which mode goes first, so that neither always meets the other's leftovers.
    for (const mode of (r % 2 === 0 ? ['unbatched', 'batched'] : ['batched', 'unbatched']) as Mode[]) {
      const result = await phase(server, http, ownerToken, workerTokens, mode, r);
      phases.push(result);
      const d = result.delivery;
      console.log(
        `  round ${r + 1} ${mode}: ${Math.round(result.eventsPerSecond)} events/s, ${round(result.events / Math.max(1, result.requests))} a request; ` +
          `${d.changes} changes, ${d.delivered}/${d.expectedDeliveries} delivered, lost ${d.lost}, duplicated ${d.duplicated}, out of order ${d.outOfOrder}; ` +
          `from commit p50 ${round(d.fromCommitMs?.p50 ?? NaN)} p99 ${round(d.fromCommitMs?.p99 ?? NaN)} ms; catch-up reads ${result.catchUps}, look-ups ${result.lookUps}${result.errors || d.errors ? `; errors ${result.errors + d.errors}: ${result.firstError ?? d.firstError}` : ''}`,
      );
    }
  }
} finally {
  http.close();
  await server.stop();
  await backend.close();
}

const rows = phases.map((p) => [
  p.round + 1,
  p.mode,
  Math.round(p.eventsPerSecond),
  round(p.events / Math.max(1, p.requests)),
  p.delivery.changes,
  `${p.delivery.delivered}/${p.delivery.expectedDeliveries}`,
  p.delivery.lost,
  p.delivery.duplicated,
  p.delivery.outOfOrder,
  p.catchUps,
  p.lookUps,
  round(p.delivery.fromCommitMs?.p50 ?? NaN),
  round(p.delivery.fromCommitMs?.p99 ?? NaN),
  round(p.answeredMs.p50),
]);
console.log(table(['round', 'mode', 'events/s', 'events a request', 'changes', 'delivered', 'lost', 'dup', 'out of order', 'catch-ups', 'look-ups', 'commit→receipt p50 ms', 'p99 ms', 'event answered p50 ms'], rows));
const ratios = Array.from({ length: rounds }, (_, r) => {
  const of = (mode: Mode) => phases.find((p) => p.round === r && p.mode === mode)!.delivery.fromCommitMs?.p99 ?? NaN;
  return of('batched') / of('unbatched');
});
const faults = phases.reduce((sum, p) => sum + p.delivery.lost + p.delivery.duplicated + p.delivery.outOfOrder + p.delivery.errors + p.errors, 0);
console.log(`p99 batched / unbatched per round: ${ratios.map((r) => round(r)).join(', ')} (target ≤ 1.2); lost + duplicated + out of order + errors: ${faults}`);
console.log(`load average at end ${load()} (at start ${loadAtStart})`);
console.log(JSON.stringify({ backend: backend.kind, workers, runsAtOnce, threads, perThread, intervalMs, seconds, rounds, loadAtStart, loadAtEnd: load(), phases, ratios }));
