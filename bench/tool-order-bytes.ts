// npx tsx bench/tool-order-bytes.ts [--tools 300] [--running 2000] [--ended 1000]
//
// The bytes of one Activity view (`#activity`, 7 d window) of a fleet of --tools tool names, with
// --running calls running and --ended ended (a fifth of them failed), as the page asked for it
// before (every tool, the table sorted in the browser: 44a5d23's document, below) and as it asks
// now (web/src/activity-query.ts: the table's first TOOLS_PAGE rows, in the order clicked, and
// toolCount), in the same run. Each is read from the server process as the query the
// subscription's views answer (the same selection), on PGlite by default (PostgreSQL when
// DATABASE_URL is an admin URL); the bytes are the JSON of `data`, what a graphql-ws `next` frame carries.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import type { TestApp } from '../test/support/app.js';
import { claim, clockAt, createRun, createThread, must } from '../test/support/lifecycle.js';
import { TOOL_ACTIVITY, TOOLS_PAGE } from '../web/src/activity-query.js';
import { openPgliteBackend, openPostgresBackend } from './lib/backend.js';
import { startServer } from './lib/server-process.js';
import { table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { tools: { type: 'string' }, running: { type: 'string' }, ended: { type: 'string' } } });
const TOOLS = Number(flags.tools ?? 300);
const RUNNING = Number(flags.running ?? 2000);
const ENDED = Number(flags.ended ?? 1000);

const AUDIT = 'id name startedAt finishedAt error awaitingRunTerminal run { id leaseExpiresAt thread { id title } }';
/** The page's document before (44a5d23's web/src/activity.tsx). */
const BEFORE = `subscription PageToolActivity($windowSeconds: Int, $name: String) {
  toolActivity(windowSeconds: $windowSeconds, name: $name) {
    at since runningCount
    running(first: 50) { ${AUDIT} }
    recentFailures(first: 20) { ${AUDIT} }
    tools { name running completed failed otherEnded p50DurationMs p95DurationMs maxDurationMs }
    buckets { start started completed failed otherEnded }
  }
}`;

const backend = process.env.DATABASE_URL ? await openPostgresBackend(process.env.DATABASE_URL) : await openPgliteBackend();
const secret = randomBytes(32).toString('hex');
const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
// The lifecycle helpers the tests drive runs with, over HTTP to the server process.
const t = {
  token: (sub: string, role: 'superadmin' | 'worker') => mintToken(secret, { sub, role }, '1h'),
  gql: async (query: string, variables: Record<string, unknown>, token: string) => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    return response.json();
  },
} as unknown as TestApp;
try {
  const who = { owner: await t.token('bench-fleet-owner', 'superadmin'), worker: await t.token('bench-fleet-worker', 'worker') };
  const threadId = await createThread(t, who.owner, 'fleet');
  const name = (i: number) => `fleet_tool_${String(i % TOOLS).padStart(3, '0')}_${'x'.repeat((i % TOOLS) % 17)}`;
  // A run per 500 calls (a model response declares at most 1,000).
  for (let from = 0; from < RUNNING + ENDED; from += 500) {
    const session = await claim(t, who.worker, await createRun(t, who.owner, threadId), 3600);
    const calls = Array.from({ length: Math.min(500, RUNNING + ENDED - from) }, (_, k) => ({ id: `c${from + k}`, name: name(from + k) }));
    await session.declare('m1', calls);
    for (const call of calls) {
      const i = Number(call.id.slice(1));
      must(await session.toolStarted(call.id, call.name, { clock: clockAt(1000) }));
      if (i >= RUNNING) {
        const failed = i % 5 === 0;
        must(await session.toolFinished(call.id, { content: failed ? 'boom' : 'ok', status: failed ? 'error' : 'success' }, { clock: clockAt(1000 + 10 + (i % 3000)) }));
      }
    }
  }
  const bytesOf = async (document: string, variables: Record<string, unknown>) => {
    const response = await t.gql(document.replace(/^subscription/, 'query'), { windowSeconds: 604_800, name: null, ...variables }, who.owner);
    if (response.errors) throw new Error(JSON.stringify(response.errors));
    return { bytes: Buffer.byteLength(JSON.stringify(response.data)), tools: response.data.toolActivity.tools.length as number };
  };
  const before = await bytesOf(BEFORE, {});
  const rows = [['before (every tool)', before]] as [string, { bytes: number; tools: number }][];
  for (const field of ['CALLS', 'P95', 'NAME']) {
    rows.push([`now, ${field}`, await bytesOf(TOOL_ACTIVITY.toString(), { toolsFirst: TOOLS_PAGE, toolsOrder: { field, direction: field === 'NAME' ? 'ASC' : 'DESC' } })]);
  }
  console.log(`${backend.version}; ${TOOLS} tools, ${RUNNING} running, ${ENDED} ended, 7 d window`);
  console.log(
    table(
      ['document', 'tools listed', 'bytes a view', '× before'],
      rows.map(([label, { bytes, tools }]) => [label, tools, bytes, (bytes / before.bytes).toFixed(2)]),
    ),
  );
} finally {
  await server.stop();
  await backend.close();
}
