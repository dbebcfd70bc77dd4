// npx tsx bench/creations.ts [--calls 300] [--rounds 3]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards), else PGlite
//
// What a createId costs a creation (migration 20261212300000_creation_keys): createRun and
// createThread sent one after another over HTTP, --calls of each kind a block, the kinds
// alternating in each of --rounds rounds: without a createId (the baseline), with a fresh one, and
// the same creation sent again (a replay). Reported: ms a call (p50, mean) and its p50's ratio to
// the baseline's in the same round. The first round warms the server up.
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { benchServer, loadAverage } from './lib/bench-server.js';
import { serverCreateThread } from './lib/server-worker.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { calls: { type: 'string', default: '300' }, rounds: { type: 'string', default: '3' } } });
const calls = Number(flags.calls);
const rounds = Number(flags.rounds);

const CREATE_RUN = `mutation($input: CreateRunInput!) { createRun(input: $input) { id } }`;
const CREATE_THREAD = `mutation($input: CreateThreadInput!) { createThread(input: $input) { id } }`;

const bench = await benchServer();
const { http, secret } = bench;
const rows: (string | number | null)[][] = [];
try {
  const token = await mintToken(secret, { sub: 'bench-creations-owner', role: 'superadmin' }, '2h');
  const threadId = await serverCreateThread(http, token, 'creations');
  let key = 0;
  /** The input of call `i` of a block: `kind` decides its createId. */
  const kinds: Record<string, (i: number, block: number) => string | undefined> = {
    'no createId': () => undefined,
    'a fresh createId': () => `key-${++key}`,
    'a replay': (_i, block) => `replayed-${block}`,
  };
  const timed = async (document: string, input: (createId: string | undefined) => Record<string, unknown>, createIdOf: (i: number) => string | undefined) => {
    const ms: number[] = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await http.must(document, { input: input(createIdOf(i)) }, token);
      ms.push(performance.now() - started);
    }
    return summarize(ms);
  };
  let block = 0;
  for (let r = 1; r <= rounds; r++) {
    for (const [what, document, input] of [
      ['createRun', CREATE_RUN, (createId: string | undefined) => ({ threadId, createId })],
      ['createThread', CREATE_THREAD, (createId: string | undefined) => ({ title: 'bench', createId })],
    ] as const) {
      const names = Object.keys(kinds);
      let baseline = NaN;
      for (const name of r % 2 === 0 ? [...names].reverse() : names) {
        const thisBlock = ++block;
        const summary = await timed(document, input, (i) => kinds[name]!(i, thisBlock));
        if (name === 'no createId') baseline = summary.p50;
        rows.push([r, what, name, round(summary.p50, 3), round(summary.mean, 3), summary.p50]);
      }
      for (const row of rows.slice(-names.length)) row[5] = round(Number(row[5]) / baseline, 3);
    }
    console.log(`  round ${r} done (load average ${loadAverage()})`);
  }
} finally {
  await bench.close();
}
console.log(table(['round', 'mutation', 'createId', 'p50 ms', 'mean ms', 'p50 / no createId'], rows));
