// npx tsx bench/deletion.ts [--audits 300000] [--workers 4] [--seconds 10] [--curve-audits 1000000] [--sections writers,curves]
//
// Deleting a large thread while other threads are written (issue 34), and what deleting half of
// a database does to the write path and the timeline read. Against PGlite by default; against
// PostgreSQL when DATABASE_URL is an admin URL (a fresh database, dropped afterwards). The server
// runs as its own process, as in `npm run bench`.
//
// writers: W workers drive whole runs on threads of their own through the server. The p99 of
//   their lifecycle writes is measured while deleteThread removes a thread of --audits audits,
//   against the same writers in a window of the same length without it (before and after), and,
//   on PostgreSQL, against the one-transaction alternative (one DELETE of the thread, cascading).
// curves: the write path's throughput and the timeline read's p50 on a database of --curve-audits
//   audits (threads of 1,000), then after deleting half of its threads through deleteThread, then
//   after a VACUUM; and the tables' size before, after, and after writing as much again.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { openPgliteBackend, openPostgresBackend, type Backend } from './lib/backend.js';
import { bulkSeed } from './lib/bulk-seed.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { runScript } from './lib/run-script.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { round, summarize, table } from './lib/stats.js';
import { measureServerRead } from './lib/timeline.js';
import { measureWritePath, serverTarget } from './lib/write-path.js';

const { values: flags } = parseArgs({
  options: {
    audits: { type: 'string', default: '300000' },
    workers: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '10' },
    'curve-audits': { type: 'string', default: '1000000' },
    sections: { type: 'string', default: 'writers,curves' },
  },
});
const settings = {
  audits: Number(flags.audits),
  workers: Number(flags.workers),
  seconds: Number(flags.seconds),
  curveAudits: Number(flags['curve-audits']),
  sections: flags.sections!.split(','),
};

const OWNER = 'bench-owner';
const DELETE = /* GraphQL */ `mutation($id: ID!) { deleteThread(id: $id) { runs audits toolCalls messages verifiedAt } }`;
const log = (line: string) => console.log(line);

interface Call {
  began: number;
  ended: number;
}

/**
 * `workers` workers driving whole runs back to back on threads of their own until `until()`
 * resolves; every lifecycle call's start and end (createRun excluded, as in the write bench).
 */
async function writeUntil(http: GraphQLHttp, ownerToken: string, workerTokens: string[], until: Promise<unknown>): Promise<Call[]> {
  const target = serverTarget(http, ownerToken, workerTokens);
  const workers = await Promise.all(workerTokens.map((_, worker) => target.prepare(worker)));
  let done = false;
  void until.finally(() => (done = true));
  const calls: Call[] = [];
  await Promise.all(
    workers.map(async (worker) => {
      while (!done) {
        const runId = await worker.createRun();
        let lease = null;
        for (const step of runScript()) {
          const began = performance.now();
          lease = await worker.step(runId, lease, step);
          calls.push({ began, ended: performance.now() });
        }
      }
    }),
  );
  return calls;
}

const p99Of = (calls: Call[], from: number, to: number) => {
  const inside = calls.filter((call) => call.began >= from && call.began <= to).map((call) => call.ended - call.began);
  return { calls: inside.length, ...summarize(inside) };
};

const seconds = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function writersSection(backend: Backend, server: ServerProcess, http: GraphQLHttp, ownerToken: string, workerTokens: string[]) {
  const rows: (string | number | null)[][] = [];
  const windowMs = settings.seconds * 1000;
  // Warm the server's compiled documents first.
  await writeUntil(http, ownerToken, workerTokens, seconds(2000));

  const alone: number[] = [];
  const baseline = async (label: string) => {
    const began = performance.now();
    const calls = await writeUntil(http, ownerToken, workerTokens, seconds(windowMs + 1000));
    const inside = calls.filter((call) => call.began >= began + 1000 && call.began <= began + 1000 + windowMs);
    alone.push(...inside.map((call) => call.ended - call.began));
    const p = p99Of(inside, began + 1000, began + 1000 + windowMs);
    rows.push([label, round(windowMs / 1000, 1), p.calls, round(p.p50), round(p.p99), null]);
    return p.p99;
  };

  const during = async (label: string, threadId: string, remove: () => Promise<unknown>) => {
    let from = 0;
    let to = 0;
    const deletion = seconds(1000).then(async () => {
      from = performance.now();
      await remove();
      to = performance.now();
    });
    const calls = await writeUntil(http, ownerToken, workerTokens, deletion);
    const p = p99Of(calls, from, to);
    rows.push([label, round((to - from) / 1000, 1), p.calls, round(p.p50), round(p.p99), null]);
    log(`  ${label}: thread ${threadId} gone in ${round((to - from) / 1000, 1)} s`);
    return p.p99;
  };

  const before = await baseline('writers alone (before)');
  const batched = await during(`writers while deleteThread removes ${settings.audits} audits`, bigThreads.batched, async () => {
    const receipt = await http.must(DELETE, { id: bigThreads.batched }, ownerToken);
    log(`  receipt: ${JSON.stringify(receipt.deleteThread)}`);
  });
  const after = await baseline('writers alone (after)');
  let oneTransaction: number | null = null;
  if (backend.kind === 'postgres') {
    // The alternative the contract first described: the whole thread in one transaction.
    oneTransaction = await during(`writers while one transaction deletes ${settings.audits} audits`, bigThreads.single, () =>
      backend.floor.query('DELETE FROM thread WHERE id = $1::uuid', [bigThreads.single]),
    );
  }
  // The floor: the writers alone, both windows pooled (the machine drifts between them).
  const floor = summarize(alone).p99;
  for (const row of rows) row[5] = row[4] === null ? null : round((row[4] as number) / floor);
  log(table(['window', 's', 'calls', 'p50 ms', 'p99 ms', 'p99 / writers alone'], rows));
  return { before, after, batched, oneTransaction, batchedRatio: round(batched! / floor), oneTransactionRatio: oneTransaction && round(oneTransaction / floor) };
}

let bigThreads: { batched: string; single: string };

async function tableSizes(backend: Backend) {
  const [row] = await backend.floor.query<{ message: string; toolCall: string; run: string }>(
    `SELECT pg_total_relation_size('message') AS message, pg_total_relation_size('tool_call') AS "toolCall", pg_total_relation_size('run') AS run`,
  );
  const mib = (bytes: string) => round(Number(bytes) / 2 ** 20, 1);
  return { messageMiB: mib(row!.message), toolCallMiB: mib(row!.toolCall), runMiB: mib(row!.run) };
}

async function measurePaths(http: GraphQLHttp, ownerToken: string, workerTokens: string[], readThread: string) {
  const write = await measureWritePath(serverTarget(http, ownerToken, workerTokens), workerTokens.length, 2000, settings.seconds * 1000);
  const read = await measureServerRead(http, ownerToken, readThread, 500, 30);
  return { writeEventsPerSecond: round(write.eventsPerSecond, 1), readP50Ms: round(read.latencyMs.p50) };
}

async function curvesSection(backend: Backend, http: GraphQLHttp, ownerToken: string, workerTokens: string[], curveThreads: string[], readThread: string) {
  const rows: (string | number | null)[][] = [];
  const record = async (label: string) => {
    const paths = await measurePaths(http, ownerToken, workerTokens, readThread);
    const sizes = backend.kind === 'postgres' ? await tableSizes(backend) : null;
    rows.push([label, paths.writeEventsPerSecond, paths.readP50Ms, sizes?.messageMiB ?? null, sizes?.toolCallMiB ?? null]);
    log(`  ${label}: ${JSON.stringify({ ...paths, ...sizes })}`);
  };
  await measurePaths(http, ownerToken, workerTokens, readThread); // warm-up: a fresh server compiles each document on first use
  await record(`${settings.curveAudits} audits`);
  const half = curveThreads.slice(0, Math.floor(curveThreads.length / 2));
  const began = performance.now();
  for (const id of half) await http.must(DELETE, { id }, ownerToken);
  log(`  deleted ${half.length} threads (${half.length * 1000} audits) in ${round((performance.now() - began) / 1000, 1)} s`);
  await record(`after deleting half (${half.length} threads)`);
  if (backend.kind === 'postgres') {
    await backend.floor.query('VACUUM (ANALYZE) message, tool_call, run, thread');
    await record('after VACUUM');
    // As much written again as was deleted: the freed space is reused, the tables barely grow.
    await bulkSeed(backend.floor, { ownerSub: 'bench-ballast', threads: half.length, auditsPerThread: 1000, title: 'refill' });
    await record(`after writing ${half.length * 1000} audits again`);
  }
  log(table(['database', 'write events/s', 'read p50 ms', 'message MiB', 'tool_call MiB'], rows));
}

async function main() {
  const adminUrl = process.env.DATABASE_URL;
  const backend = adminUrl ? await openPostgresBackend(adminUrl) : await openPgliteBackend();
  const secret = randomBytes(32).toString('base64url');
  const ownerToken = await mintToken(secret, { sub: OWNER, role: 'superadmin' });
  const workerTokens = await Promise.all(Array.from({ length: settings.workers }, (_, i) => mintToken(secret, { sub: `bench-worker-${i}`, role: 'worker' })));
  let server: ServerProcess | null = null;
  try {
    log(`Backend: ${backend.version.split(',')[0]}; ${settings.workers} writers; machine shared, numbers are ratios within this run.`);
    const seeded = await backend.beforeServer(async (sql) => {
      const started = performance.now();
      const big = settings.sections.includes('writers')
        ? await bulkSeed(sql, { ownerSub: OWNER, threads: backend.kind === 'postgres' ? 2 : 1, auditsPerThread: settings.audits, title: 'big' })
        : [];
      const curve = settings.sections.includes('curves')
        ? await bulkSeed(sql, { ownerSub: OWNER, threads: Math.ceil(settings.curveAudits / 1000), auditsPerThread: 1000, title: 'curve' })
        : [];
      const read = settings.sections.includes('curves') ? await bulkSeed(sql, { ownerSub: OWNER, threads: 1, auditsPerThread: 5000, title: 'read' }) : [];
      log(`Seeded in ${round((performance.now() - started) / 1000, 1)} s`);
      return { big, curve, read: read[0]! };
    });
    bigThreads = { batched: seeded.big[0]!, single: seeded.big[1]! };
    server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
    const http = new GraphQLHttp(server.url);
    try {
      if (settings.sections.includes('writers')) {
        log(`\nWriters on other threads while a thread of ${settings.audits} audits is deleted`);
        const result = await writersSection(backend, server, http, ownerToken, workerTokens);
        log(JSON.stringify(result));
      }
      if (settings.sections.includes('curves')) {
        log(`\nThe write path and the timeline read before and after deleting half of ${settings.curveAudits} audits`);
        await curvesSection(backend, http, ownerToken, workerTokens, seeded.curve, seeded.read);
      }
    } finally {
      http.close();
    }
  } finally {
    await server?.stop();
    await backend.close();
  }
}

await main();
