// npx tsx bench/replay.ts [--changes 20000] [--rounds 2] [--workers 16]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards), else PGlite
//
// A threadChanges resume from an old cursor (issue 44: "a resume replays ~1,800 changes/s"): a
// thread is grown through the API to --changes changes (standard runs from --workers workers),
// then a graphql-ws subscriber resumes after the thread's first run and is timed until it has
// received the thread's last change. Once with the page's own document (web/src/queries.ts: each
// change with its run's or audit's fields, the run's audit summary, the audit's tool calls), once
// with the cursor alone, alternating, --rounds times. Reported: changes delivered a second, and the
// server's CPU a change (its process's user + system time over the replay). The subscriber runs in
// this process, on the same two cores.
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/jwt.js';
import { THREAD_CHANGES } from '../web/src/queries.js';
import { benchServer, loadAverage } from './lib/bench-server.js';
import { counterOf } from './lib/live-subscribers.js';
import type { ServerProcess } from './lib/server-process.js';
import { driveChanges, serverChangeCursor, serverCreateThread } from './lib/server-worker.js';
import { round, table } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: { changes: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '2' }, workers: { type: 'string', default: '16' } },
});
const changes = Number(flags.changes);
const rounds = Number(flags.rounds);
const workers = Number(flags.workers);

const SELECTIONS: Record<string, string> = {
  "the page's document": String(THREAD_CHANGES),
  'the cursor alone': /* GraphQL */ `subscription Cursors($threadId: ID!, $after: String) { threadChanges(threadId: $threadId, after: $after) { cursor } }`,
};

interface Replay {
  received: number;
  lastCounter: number;
  seconds: number;
  errors: string[];
}

/** Subscribes after `after` and resolves once the change with counter `until` (or a later one) has arrived. */
function replay(server: ServerProcess, token: string, threadId: string, after: string, until: number, query: string): Promise<Replay> {
  return new Promise((resolve) => {
    const result: Replay = { received: 0, lastCounter: 0, seconds: 0, errors: [] };
    const started = performance.now();
    const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
    const finish = () => {
      result.seconds = (performance.now() - started) / 1000;
      socket.close(1000);
      resolve(result);
    };
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; payload?: any };
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables: { threadId, after } } }));
      } else if (message.type === 'next') {
        const change = message.payload?.data?.threadChanges;
        if (!change) return void result.errors.push(JSON.stringify(message.payload?.errors ?? message.payload));
        result.received++;
        result.lastCounter = counterOf(change.cursor);
        if (result.lastCounter >= until) finish();
      } else if (message.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
      else if (message.type !== 'pong') result.errors.push(`unexpected ${message.type}: ${JSON.stringify(message.payload)}`);
    });
    socket.on('error', (error) => {
      result.errors.push(error.message);
      finish();
    });
  });
}

const bench = await benchServer();
const { server, http, secret } = bench;
const rows: (string | number | null)[][] = [];
try {
  const ownerToken = await mintToken(secret, { sub: 'bench-replay-owner', role: 'superadmin' }, '2h');
  const workerTokens = await Promise.all(Array.from({ length: workers }, (_, i) => mintToken(secret, { sub: `bench-replay-worker-${i}`, role: 'worker' }, '2h')));
  const threadId = await serverCreateThread(http, ownerToken, 'replay');
  await driveChanges(http, ownerToken, workerTokens.slice(0, 1), threadId, 11, 'first-');
  const after = await serverChangeCursor(http, ownerToken, threadId);
  const grown = performance.now();
  await driveChanges(http, ownerToken, workerTokens, threadId, changes, 'run-');
  const until = counterOf(await serverChangeCursor(http, ownerToken, threadId));
  console.log(`grown to ${until} changes in ${round((performance.now() - grown) / 1000)} s; load average ${loadAverage()}`);
  for (let r = 0; r < rounds; r++) {
    const names = Object.keys(SELECTIONS);
    for (const name of r % 2 === 0 ? names : names.reverse()) {
      const before = await server.counts();
      const result = await replay(server, ownerToken, threadId, after, until, SELECTIONS[name]!);
      const afterCounts = await server.counts();
      const cpuMs = (afterCounts.cpu.user + afterCounts.cpu.system - before.cpu.user - before.cpu.system) / 1000;
      rows.push([
        r + 1,
        name,
        result.received,
        round(result.seconds),
        Math.round(result.received / result.seconds),
        round(cpuMs / Math.max(1, result.received), 3),
        afterCounts.statements - before.statements,
        result.errors.length ? `${result.errors.length}: ${result.errors[0]}` : '0',
      ]);
      console.log(`  round ${r + 1}, ${name}: ${result.received} changes in ${round(result.seconds)} s (load average ${loadAverage()})`);
    }
  }
} finally {
  await bench.close();
}
console.log(table(['round', 'selection', 'changes', 's', 'changes/s', 'server CPU ms a change', 'SQL statements', 'errors'], rows));
