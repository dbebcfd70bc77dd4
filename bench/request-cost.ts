// npx tsx bench/request-cost.ts [--requests 5000] [--rounds 5]
//   [--http [--servers server,yoga,bare] [--connections 1] [--profile]]
//
// The GraphQL stack's own CPU per request (issue 45, "less per request"): the server's yoga
// (src/server/yoga.ts, every plugin: body limit, nesting limit, GraphQL Armor, query cost,
// searches per request, masking, graphql-jit, answer payloads, and the plugins src/server/app.ts
// adds), with no database, with a bearer token (the verified-token cache answers after the
// first). Each kind of request is one a worker sends or gets back and that reaches no database:
//   typename      `{ __typename }`: the stack with nothing to resolve
//   batch-refused the TS client's RecordEvents document with no events: BAD_USER_INPUT from the
//                 domain, an error answer (how much an error costs the server)
// In process (the default), yoga is called through its `fetch`, one request after another, and
// the figure is this process's CPU (user + system) per request, the median of the rounds.
//
// --http: the same over real HTTP, each server a child process on a loopback port with its log
// on a pipe and `npm run serve`'s V8 and allocator settings (as under the bench), driven over
// keep-alive connections (undici's Pool, as the bench's workers), each connection one request
// after another; the figure is the child's CPU per request (the median of the rounds; a first round, not counted, warms it up). The servers take
// turns round by round, so that the shared machine's load touches each alike:
//   server  src/server/http-server.ts in front of yoga, as `npm run serve` (access log, correlation
//           id, body limit, routes)
//   yoga    yoga's own Node adapter alone (`createServer(yoga)`): the server's share is the difference
//   bare    a bare Node `http` server answering `{ __typename }`'s bytes: the floor of Node's HTTP
// A server's name may carry environment variables for its child: `server+LOG_LEVEL=warn` (no
// access log). --profile writes a V8 CPU profile of each child under bench/results/ (one file a
// thread, the main thread's the largest; fold: npx tsx bench/profile.ts <file> --layers).
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import { Pool } from 'undici';
import { OPERATIONS } from '@agent-audit/client';
import { createTokenVerifier, mintToken } from '../src/auth/jwt.js';
import { loadConfig } from '../src/config.js';
import type { DomainDeps } from '../src/domain/command.js';
import type { PrismaClient } from '../src/generated/prisma/client.js';
import type { PubSub } from '../src/realtime/pubsub.js';
import { createHttpServer } from '../src/server/http-server.js';
import { mutationMetrics } from '../src/server/metrics.js';
import { createGraphQLServer } from '../src/server/yoga.js';
import { webSocketLimits } from '../src/transports/ws-limits.js';
import { ipcClient } from './lib/ipc.js';
import { SERVE_FLAGS, SERVE_MALLOC_ENV } from './lib/server-process.js';
import { round, table } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '5' },
    http: { type: 'boolean', default: false },
    connections: { type: 'string', default: '1' },
    profile: { type: 'boolean', default: false },
    servers: { type: 'string', default: 'server,yoga,bare' },
    serve: { type: 'string' },
  },
});
const requests = Number(flags.requests);
const rounds = Number(flags.rounds);

const secret = 'bench-request-cost-secret-long-enough-for-hs256';
const config = loadConfig({ AUTH_JWT_SECRET: secret, DATA_DIR: ':memory:' });
const token = await mintToken(secret, { sub: 'bench-worker', role: 'worker' });

type Answer = { data?: unknown; errors?: { extensions?: { code?: string } }[] };
const kinds: { name: string; body: string; expect: (answer: Answer) => boolean }[] = [
  { name: 'typename', body: JSON.stringify({ query: '{ __typename }' }), expect: (answer) => !answer.errors },
  {
    name: 'batch-refused',
    body: JSON.stringify({ query: OPERATIONS.recordEvents.document, variables: { events: [] } }),
    expect: (answer) => answer.errors?.[0]?.extensions?.code === 'BAD_USER_INPUT',
  },
];
const headers = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', authorization: `Bearer ${token}` };

function graphQLServer() {
  // None of these requests reaches the database, the pub/sub or Prisma: a use of one would fail the run.
  const unused = new Proxy({}, { get: (_target, name) => { throw new Error(`request-cost: a request used ${String(name)} of a stand-in`); } });
  const verifier = createTokenVerifier(secret);
  const yoga = createGraphQLServer({
    deps: { db: unused } as unknown as DomainDeps,
    prisma: unused as PrismaClient,
    pubsub: unused as PubSub,
    verifier,
    maxQueryCost: config.maxQueryCost,
    maxAnswerPayloadBytes: config.maxAnswerPayloadBytes,
    maxBodyBytes: 1 << 20,
    corsOrigins: [],
    // The plugins src/server/app.ts adds.
    plugins: [webSocketLimits(config, verifier).sse(), mutationMetrics()],
  });
  return { yoga, unused };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows: (string | number)[][] = [];

if (flags.serve !== undefined) {
  // The child: a server on a free loopback port, answering the parent's CPU questions over IPC.
  let server;
  if (flags.serve === 'bare') {
    // The bytes and headers yoga answers `{ __typename }` with, from a bare Node server.
    const answer = JSON.stringify({ data: { __typename: 'Query' } });
    server = createServer((req, res) => {
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'application/graphql-response+json; charset=utf-8', 'content-length': Buffer.byteLength(answer), 'x-request-id': crypto.randomUUID() });
        res.end(answer);
      });
    });
  } else if (flags.serve === 'yoga') {
    const { yoga } = graphQLServer();
    server = createServer(yoga);
  } else if (flags.serve === 'server') {
    const { yoga, unused } = graphQLServer();
    const streams = unused as Parameters<typeof createHttpServer>[1]['streams'];
    server = createHttpServer(config, { yoga, db: unused as Parameters<typeof createHttpServer>[1]['db'], metrics: new Registry(), streams }).server;
  } else {
    throw new Error(`request-cost: no server named ${flags.serve} (server, yoga, bare)`);
  }
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (message: { id: number; command: string }) => {
    if (message.command === 'cpu') process.send!({ id: message.id, body: process.cpuUsage() });
    if (message.command === 'exit') process.exit(0);
  });
} else if (flags.http) {
  const connections = Number(flags.connections);
  const self = fileURLToPath(import.meta.url);
  const profiles = `bench/results/request-cost-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const servers = await Promise.all(
    flags.servers.split(',').map(async (serve) => {
      const execArgv = [...SERVE_FLAGS, '--import', 'tsx', ...(flags.profile ? ['--cpu-prof', '--cpu-prof-dir', `${profiles}/${serve}`] : [])];
      const [kind, ...settings] = serve.split('+');
      const env = Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]));
      // The server's log goes to a pipe (drained), as under the bench and most process managers.
      const child = fork(self, ['--serve', kind!], { execArgv, env: { ...SERVE_MALLOC_ENV, ...process.env, ...env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      child.stdout!.resume();
      const port = await new Promise<number>((resolve) => child.once('message', (message: { port: number }) => resolve(message.port)));
      const pool = new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1 });
      const send = async (body: string) => {
        const response = await pool.request({ path: '/graphql', method: 'POST', headers, body });
        return (await response.body.json()) as Answer;
      };
      return { serve, child, ask: ipcClient(child), pool, send };
    }),
  );
  // Rounds alternate between the servers, so that a change of the machine's load touches all alike.
  for (const kind of kinds) {
    const isBare = (serve: string) => serve.split('+')[0] === 'bare';
    const measured = servers.filter(({ serve }) => !isBare(serve) || kind === kinds[0]);
    const perRequestUs = new Map(measured.map(({ serve }) => [serve, [] as number[]]));
    for (const { serve, send } of measured) {
      const answer = await send(kind.body);
      if (!isBare(serve) && !kind.expect(answer)) throw new Error(`request-cost: ${kind.name} answered ${JSON.stringify(answer)}`);
    }
    for (let round_ = -1; round_ < rounds; round_++) {
      for (const { serve, ask, send } of measured) {
        const before = await ask<NodeJS.CpuUsage>({ command: 'cpu' });
        await Promise.all(
          Array.from({ length: connections }, async () => {
            for (let i = 0; i < requests / connections; i++) await send(kind.body);
          }),
        );
        const after = await ask<NodeJS.CpuUsage>({ command: 'cpu' });
        if (round_ >= 0) perRequestUs.get(serve)!.push((after.user - before.user + after.system - before.system) / requests);
      }
    }
    for (const [serve, us] of perRequestUs) rows.push([`${kind.name} (${serve})`, round(median(us), 1)!, us.map((value) => round(value, 0)).join(' ')]);
  }
  for (const { child, pool } of servers) {
    await pool.close();
    child.send({ command: 'exit', id: -1 });
    await new Promise((resolve) => child.once('exit', resolve));
  }
  console.log(`Over HTTP (keep-alive, ${connections} connection(s)), ${requests} requests a round, ${rounds} rounds (node ${process.version}); the server's CPU`);
  console.log(table(['request', 'server CPU µs a request (median)', 'rounds'], rows));
  if (flags.profile) console.log(`profiles: ${profiles}/<server>/`);
} else {
  const { yoga } = graphQLServer();
  const send = async (body: string) => {
    const response = await yoga.fetch('http://localhost/graphql', { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body });
    return (await response.json()) as Answer;
  };
  for (const kind of kinds) {
    const answer = await send(kind.body);
    if (!kind.expect(answer)) throw new Error(`request-cost: ${kind.name} answered ${JSON.stringify(answer)}`);
    const perRequestUs: number[] = [];
    for (let round_ = 0; round_ < rounds; round_++) {
      const before = process.cpuUsage();
      for (let i = 0; i < requests; i++) await send(kind.body);
      const used = process.cpuUsage(before);
      perRequestUs.push((used.user + used.system) / requests);
    }
    rows.push([kind.name, round(median(perRequestUs), 1)!, perRequestUs.map((us) => round(us, 0)).join(' ')]);
  }
  console.log(`In process, ${requests} requests a round, ${rounds} rounds (node ${process.version})`);
  console.log(table(['request', 'CPU µs a request (median)', 'rounds'], rows));
}
