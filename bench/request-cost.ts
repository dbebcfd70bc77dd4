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
//   events-refused the same document with a run's nine events after its claim (lib/run-script.ts)
//                 and an empty one, refused by the domain once every variable is coerced: a
//                 worker's batch through parsing, validation and its variables, without the database
// --trees .,<dir>: the stack of each work tree (another commit's checkout) in this process, their
// rounds alternating, in reverse every other round (a first round, not counted, warms them up);
// each tree's rounds against the first's.
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
//
// DATABASE_URL=<admin URL> npx tsx bench/request-cost.ts --app [--trees .,../other-checkout]:
// the whole server (`src/main.ts` as `npm run serve` starts it, lib/server-process.ts) of each work
// tree, each on a fresh PostgreSQL database of its own, driven over keep-alive HTTP one request
// after another; the figure is the server process's CPU per request (PostgreSQL's own work not
// included), the median of the rounds, and each tree's against the first's round by round. The
// trees take turns round by round (a first round, not counted, warms them up):
//   typename      `{ __typename }`
//   worker-event  a worker's runs, the lifecycle mutations one request an event with the client's
//                 documents (claimRun … finishRun, ten events a run, lib/run-script.ts); the runs
//                 are created before the round's window
//   read          the client's ThreadAudits document (every nested field) of a thread of 10 such
//                 runs (40 audits), as the page opening a thread reads it
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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
import { adminQuery } from './lib/backend.js';
import { loadAverage } from './lib/bench-server.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { ipcClient } from './lib/ipc.js';
import { runScript } from './lib/run-script.js';
import { SERVE_FLAGS, SERVE_MALLOC_ENV, startServer, type ServerProcess } from './lib/server-process.js';
import { serverCreateRun, serverCreateThread, serverStep, stepRequest, type Lease } from './lib/server-worker.js';
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
    app: { type: 'boolean', default: false },
    trees: { type: 'string', default: '.' },
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
  {
    name: 'events-refused',
    body: JSON.stringify({ query: OPERATIONS.recordEvents.document, variables: { events: [...runEvents(), {}] } }),
    expect: (answer) => answer.errors?.[0]?.extensions?.code === 'BAD_USER_INPUT',
  },
];
const headers = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', authorization: `Bearer ${token}` };

const HERE = { createGraphQLServer, createTokenVerifier, webSocketLimits, mutationMetrics };
type Stack = typeof HERE;

/** A run's lifecycle events after its claim (lib/run-script.ts) as a batch carries them. */
function runEvents() {
  const lease = { runId: 'bench-run', epoch: 1 };
  const kindOf = { recordModelStarted: 'modelStarted', recordModelFinished: 'modelFinished', recordToolStarted: 'toolStarted', recordToolFinished: 'toolFinished', finishRun: 'finishRun' } as const;
  return runScript()
    .filter((step) => step.op !== 'claimRun')
    .map((step) => ({ [kindOf[step.op as keyof typeof kindOf]]: stepRequest(lease.runId, lease, step).variables.input }));
}

function graphQLServer(stack: Stack = HERE) {
  // None of these requests reaches the database, the pub/sub or Prisma: a use of one would fail the run.
  const unused = new Proxy({}, { get: (_target, name) => { throw new Error(`request-cost: a request used ${String(name)} of a stand-in`); } });
  const verifier = stack.createTokenVerifier(secret);
  const yoga = stack.createGraphQLServer({
    deps: { db: unused } as unknown as DomainDeps,
    prisma: unused as PrismaClient,
    pubsub: unused as PubSub,
    verifier,
    maxQueryCost: config.maxQueryCost,
    maxAnswerPayloadBytes: config.maxAnswerPayloadBytes,
    maxBodyBytes: 1 << 20,
    corsOrigins: [],
    // The plugins src/server/app.ts adds.
    plugins: [stack.webSocketLimits(config, verifier).sse(), stack.mutationMetrics()],
  });
  return { yoga, unused };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows: (string | number | null)[][] = [];

if (flags.app) {
  await measureApps();
} else if (flags.serve !== undefined) {
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
  // Each tree's stack, loaded from its own sources (node_modules shared), its rounds alternating with the others'.
  const trees = flags.trees.split(',').map((tree) => resolve(tree));
  const stacks = await Promise.all(trees.map(async (tree) => graphQLServer(tree === resolve('.') ? HERE : await stackOf(tree)).yoga));
  const sends = stacks.map((yoga) => async (body: string) => {
    const response = await yoga.fetch('http://localhost/graphql', { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body });
    return (await response.json()) as Answer;
  });
  for (const kind of kinds) {
    for (const send of sends) {
      const answer = await send(kind.body);
      if (!kind.expect(answer)) throw new Error(`request-cost: ${kind.name} answered ${JSON.stringify(answer)}`);
    }
    const perRequestUs = trees.map(() => [] as number[]);
    // A first round, not counted, warms each stack up.
    for (let round_ = -1; round_ < rounds; round_++) {
      for (const [index, send] of inTurn(round_, [...sends.entries()])) {
        const before = process.cpuUsage();
        for (let i = 0; i < requests; i++) await send(kind.body);
        const used = process.cpuUsage(before);
        if (round_ >= 0) perRequestUs[index]!.push((used.user + used.system) / requests);
      }
    }
    for (const [index, tree] of trees.entries()) rows.push([kind.name, ...againstFirst(tree, index, perRequestUs)]);
  }
  console.log(`In process, ${requests} requests a round, ${rounds} rounds (node ${process.version}, load average ${loadAverage()})`);
  console.log(table(['request', 'tree', 'CPU µs a request (median)', 'rounds', `/ ${trees[0]} (median of rounds)`, 'round by round'], rows));
}

/** The trees in order in even rounds, in reverse in odd ones: none always runs just after another's garbage. */
function inTurn<T>(round_: number, trees: T[]): T[] {
  return round_ % 2 === 0 ? trees : [...trees].reverse();
}

/** A tree's figures: median, rounds, and its rounds against the first tree's same rounds. */
function againstFirst(tree: string, index: number, perRequestUs: number[][]): (string | number | null)[] {
  const own = perRequestUs[index]!;
  const ratios = own.map((us, round_) => us / perRequestUs[0]![round_]!);
  return [tree, round(median(own), 1), own.map((us) => round(us, 0)).join(' '), index === 0 ? null : round(median(ratios), 3), index === 0 ? null : ratios.map((ratio) => round(ratio, 2)).join(' ')];
}

/** The modules graphQLServer() builds yoga from, those of another work tree (another commit's checkout). */
async function stackOf(tree: string): Promise<Stack> {
  const load = (path: string) => import(pathToFileURL(`${tree}/${path}`).href);
  const [yoga, jwt, limits, metrics] = await Promise.all([load('src/server/yoga.ts'), load('src/auth/jwt.ts'), load('src/transports/ws-limits.ts'), load('src/server/metrics.ts')]);
  return { createGraphQLServer: yoga.createGraphQLServer, createTokenVerifier: jwt.createTokenVerifier, webSocketLimits: limits.webSocketLimits, mutationMetrics: metrics.mutationMetrics };
}

async function measureApps() {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('request-cost --app: DATABASE_URL=<admin URL> (a fresh database is created there for each tree)');
  const trees = flags.trees.split(',').map((tree) => resolve(tree));
  const appSecret = randomBytes(32).toString('hex');
  const owner = await mintToken(appSecret, { sub: 'bench-request-cost-owner', role: 'superadmin' }, '2h');
  const worker = await mintToken(appSecret, { sub: 'bench-request-cost-worker', role: 'worker' }, '2h');
  const databases: string[] = [];
  const apps: { tree: string; server: ServerProcess; http: GraphQLHttp; readThread: string; workThread: string }[] = [];
  try {
    for (const tree of trees) {
      const name = `audit_bench_rc_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
      await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
      databases.push(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      const server = await startServer({ DATABASE_URL: url.toString(), AUTH_JWT_SECRET: appSecret, LEASE_SWEEP_INTERVAL_MS: '600000' }, `${tree}/`);
      const http = new GraphQLHttp(server.url);
      const readThread = await serverCreateThread(http, owner, 'request-cost read');
      for (let run = 0; run < 10; run++) await driveRun(http, worker, await serverCreateRun(http, owner, readThread));
      apps.push({ tree, server, http, readThread, workThread: await serverCreateThread(http, owner, 'request-cost work') });
    }
    const runsPerRound = Math.max(1, Math.round(requests / 10));
    const reads = (threadId: string) => ({ threadId, limit: 100 });
    type Kind = { name: string; prepare(app: (typeof apps)[number]): Promise<() => Promise<number>> };
    const appKinds: Kind[] = [
      {
        name: 'typename',
        prepare: async ({ http }) => async () => {
          for (let i = 0; i < requests; i++) await http.must('{ __typename }', {}, worker);
          return requests;
        },
      },
      {
        name: 'worker-event',
        async prepare({ http, workThread }) {
          const runIds: string[] = [];
          for (let run = 0; run < runsPerRound; run++) runIds.push(await serverCreateRun(http, owner, workThread));
          return async () => {
            for (const runId of runIds) await driveRun(http, worker, runId);
            return runIds.length * runScript().length;
          };
        },
      },
      {
        name: 'read',
        prepare: async ({ http, readThread }) => async () => {
          for (let i = 0; i < requests; i++) {
            const data = await http.must(OPERATIONS.threadAudits.document, reads(readThread), owner);
            if (data.threadAudits.items.length !== 40) throw new Error(`request-cost: the read answered ${data.threadAudits.items.length} audits, not 40`);
          }
          return requests;
        },
      },
    ];
    const appRows: (string | number | null)[][] = [];
    for (const kind of appKinds) {
      const perRequestUs = apps.map(() => [] as number[]);
      for (let round_ = -1; round_ < rounds; round_++) {
        for (const [index, app] of inTurn(round_, [...apps.entries()])) {
          const drive = await kind.prepare(app);
          const before = await app.server.counts();
          const sent = await drive();
          const after = await app.server.counts();
          const cpu = after.cpu.user - before.cpu.user + after.cpu.system - before.cpu.system;
          if (round_ >= 0) perRequestUs[index]!.push(cpu / sent);
        }
      }
      for (const [index, { tree }] of apps.entries()) appRows.push([kind.name, ...againstFirst(tree, index, perRequestUs)]);
    }
    console.log(`The whole server over HTTP (keep-alive, 1 connection), PostgreSQL, ${requests} requests a round (worker-event: ${runsPerRound} runs), ${rounds} rounds (node ${process.version}, load average ${loadAverage()}); the server's CPU`);
    console.log(table(['request', 'tree', 'server CPU µs a request (median)', 'rounds', `/ ${trees[0]} (median of rounds)`, 'round by round'], appRows));
  } finally {
    for (const { server, http } of apps) {
      http.close();
      await server.stop();
    }
    for (const name of databases) await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

/** One run of lib/run-script.ts through its lifecycle mutations, one request an event. */
async function driveRun(http: GraphQLHttp, token: string, runId: string) {
  let lease: Lease | null = null;
  for (const step of runScript()) lease = await serverStep(http, token, runId, lease, step);
}
