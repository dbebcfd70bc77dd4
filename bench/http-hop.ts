// DATABASE_URL=<admin URL> npx tsx bench/http-hop.ts [--workers 1,32] [--rounds 3] [--seconds 6]
//
// What one HTTP hop costs on this machine, whatever the server does behind it (issue 45, W=1's
// p50 against the write floor). The write floor (lib/write-floor.ts: one PL/pgSQL call per
// event) driven twice, rounds interleaved: straight from the bench's process, as the write
// section's floor is, and through a bare Node `http` server in this process that takes each event
// as JSON over a keep-alive connection, calls the same function and answers with JSON: no
// GraphQL, no authentication, no log, nothing of the server's. The hop's p50 over the floor's is
// the least any HTTP server can reach here; the server's own ratio (npm run bench) adds to that
// its GraphQL, its rules and its log. PostgreSQL only: on PGlite the floor runs inside the bench's
// own event loop, which the hop's server would share.
import http from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { openPostgresBackend } from './lib/backend.js';
import { round, table } from './lib/stats.js';
import { floorCreateRun, floorCreateThread, floorStep } from './lib/write-floor.js';
import { combineWindows, floorTarget, measureWritePath, type WriteTarget, type WriteWindow } from './lib/write-path.js';

const { values: flags } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,32' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '6' },
  },
});
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  console.error('DATABASE_URL must be an admin URL of a PostgreSQL server');
  process.exit(2);
}
const OWNER = 'bench-owner';
const workerCounts = flags.workers.split(',').map(Number);
const rounds = Number(flags.rounds);
const windowMs = Number(flags.seconds) * 1000;

/** JSON with the run script's bigints (clock readings) as `<digits>n`, and back. */
const encode = (value: unknown) => JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `${v}n` : v));
const decode = (text: string) => JSON.parse(text, (_key, v) => (typeof v === 'string' && /^-?\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v));

const backend = await openPostgresBackend(adminUrl);
const sql = backend.floor;
const hopServer = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const call = decode(Buffer.concat(chunks).toString());
    const work =
      call.op === 'thread' ? floorCreateThread(sql, OWNER)
      : call.op === 'run' ? floorCreateRun(sql, OWNER, call.threadId)
      : floorStep(sql, call.sub, call.runId, call.lease, call.step);
    work.then(
      (result) => {
        const body = encode({ data: result ?? null });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
      (error: unknown) => {
        res.writeHead(500).end(String(error));
      },
    );
  });
});
await new Promise<void>((resolve) => hopServer.listen(0, '127.0.0.1', resolve));
const { port } = hopServer.address() as { port: number };
const connections = new Pool(`http://127.0.0.1:${port}`, { pipelining: 1 });
const post = async (call: unknown) => {
  const response = await connections.request({ path: '/', method: 'POST', body: encode(call), headers: { 'content-type': 'application/json' } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(text);
  return decode(text).data;
};
const throughHop: WriteTarget = {
  async prepare(worker) {
    const threadId = await post({ op: 'thread' });
    return {
      createRun: () => post({ op: 'run', threadId }),
      step: (runId, lease, step) => post({ sub: `bench-worker-${worker}`, runId, lease, step }),
    };
  },
};

const rows: string[][] = [];
try {
  for (const workers of workerCounts) {
    const subs = Array.from({ length: workers }, (_, index) => `bench-worker-${index}`);
    const direct: WriteWindow[] = [];
    const hop: WriteWindow[] = [];
    for (let r = 0; r < rounds; r++) {
      direct.push(await measureWritePath(floorTarget(sql, OWNER, subs), workers, 1000, windowMs));
      hop.push(await measureWritePath(throughHop, workers, 1000, windowMs));
    }
    const [straight, behindHop] = [combineWindows(direct), combineWindows(hop)];
    rows.push([
      String(workers),
      `${Math.round(behindHop.eventsPerSecond)} / ${Math.round(straight.eventsPerSecond)}`,
      String(round(behindHop.eventsPerSecond / straight.eventsPerSecond, 2)),
      `${round(behindHop.eventLatencyMs.p50, 3)} / ${round(straight.eventLatencyMs.p50, 3)}`,
      String(round(behindHop.eventLatencyMs.p50 / straight.eventLatencyMs.p50, 2)),
      hop.map((w, i) => round(w.eventsPerSecond / direct[i]!.eventsPerSecond, 2)).join(', '),
    ]);
  }
} finally {
  await connections.close();
  hopServer.close();
  await backend.close();
}
console.log(table(['W', 'events/s through the hop / straight', 'ratio', 'event p50 ms through the hop / straight', 'p50 ratio', 'rounds (events/s)'], rows));
