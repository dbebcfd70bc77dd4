// npx tsx bench/json-ceiling.ts [--mib 1,2]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards), else PGlite
//
// MAX_JSON_BYTES's ceiling (src/config.ts, MAX_JSON_BYTES_CEILING; docs/semantics.md, "Sizes of
// JSON values"): the worst case a server must write at each setting, through its HTTP API. A model
// call's input, then its finish with an output, an error, a usage and a declared call's arguments,
// each an array of zeros (`[0,0,…]`, a jsonb element every 2 bytes) just under MAX_JSON_BYTES: one
// request of about 4 × MAX_JSON_BYTES, its body limit. Reported per setting: each write's outcome
// (ok, or the error's code) and wall time. A setting above the ceiling is refused at start (measured
// before it existed: at 4 MiB PGlite ran out of memory, 53200, and PostgreSQL took 28 of its 30 s
// statement timeout; at 8 MiB PostgreSQL went past its jsonb limit, 54000).
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { OPERATIONS } from '@agent-audit/client';
import { mintToken } from '../src/auth/jwt.js';
import { openPgliteBackend, openPostgresBackend } from './lib/backend.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { startServer } from './lib/server-process.js';
import { serverCreateRun, serverCreateThread } from './lib/server-worker.js';
import { table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { mib: { type: 'string', default: '1,2' } } });
const settings = flags.mib.split(',').map((mib) => Math.round(Number(mib) * 1024 * 1024));
const adminUrl = process.env.DATABASE_URL;

const zeros = (bytes: number) => Array<number>(Math.floor((bytes - 1) / 2)).fill(0);

const rows: (string | number)[][] = [];
for (const maxJsonBytes of settings) {
  const backend = adminUrl ? await openPostgresBackend(adminUrl) : await openPgliteBackend();
  const secret = randomBytes(32).toString('base64url');
  const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret, MAX_JSON_BYTES: String(maxJsonBytes) });
  const http = new GraphQLHttp(server.url);
  try {
    const owner = await mintToken(secret, { sub: 'bench-ceiling-owner', role: 'superadmin' }, '2h');
    const worker = await mintToken(secret, { sub: 'bench-ceiling-worker', role: 'worker' }, '2h');
    const runId = await serverCreateRun(http, owner, await serverCreateThread(http, owner, 'ceiling'));
    const { claimRun: lease } = await http.must(OPERATIONS.claimRun.document, { input: { runId, leaseSeconds: 3600 } }, worker);
    const value = zeros(maxJsonBytes - 1000);
    const common = { lease: { runId: lease.runId, epoch: lease.epoch }, operationId: 'm1', observedAt: new Date().toISOString() };
    const writes = {
      'model start (1 value)': [OPERATIONS.recordModelStarted.document, { input: { ...common, sequence: '1', input: value } }],
      'model finish (4 values)': [
        OPERATIONS.recordModelFinished.document,
        { input: { ...common, sequence: '2', status: 'FAILED', output: value, error: value, usage: value, toolCalls: [{ id: 'c1', name: 'search', args: value }] } },
      ],
    } as const;
    for (const [write, [document, variables]] of Object.entries(writes)) {
      const started = performance.now();
      const result = await http.post(document, variables as Record<string, unknown>, worker);
      const outcome = result.errors?.length ? (result.errors[0]!.extensions?.code ?? 'error') : 'ok';
      rows.push([backend.kind, maxJsonBytes, write, outcome, Math.round(performance.now() - started), loadavg()[0]!.toFixed(1)]);
      console.log(rows.at(-1)!.join('  '));
    }
  } finally {
    http.close();
    await server.stop();
    await backend.close();
  }
}
console.log(table(['backend', 'MAX_JSON_BYTES', 'write', 'outcome', 'ms', 'load'], rows));
