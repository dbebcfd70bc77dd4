// npx tsx bench/request-cost.ts [--requests 5000] [--rounds 5]
//
// The GraphQL stack's own CPU per request (issue 45, "less per request"): the server's yoga
// (src/server/yoga.ts, every plugin: body limit, nesting limit, GraphQL Armor, query cost,
// searches per request, masking, graphql-jit, answer payloads) called in process through its
// `fetch`, one request after another, with no socket and no database, with a bearer token (the
// verified-token cache answers after the first). Each kind of request is one a worker sends or
// gets back and that reaches no database:
//   typename      `{ __typename }`: the stack with nothing to resolve
//   batch-refused the TS client's RecordEvents document with no events: BAD_USER_INPUT from the
//                 domain, an error answer (how much an error costs the server)
// The figure is the process's CPU (user + system) per request, the median of the rounds.
import { parseArgs } from 'node:util';
import { OPERATIONS } from '@agent-audit/client';
import { createTokenVerifier, mintToken } from '../src/auth/jwt.js';
import { loadConfig } from '../src/config.js';
import type { DomainDeps } from '../src/domain/command.js';
import type { PrismaClient } from '../src/generated/prisma/client.js';
import type { PubSub } from '../src/realtime/pubsub.js';
import { createGraphQLServer } from '../src/server/yoga.js';
import { round, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { requests: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '5' } } });
const requests = Number(flags.requests);
const rounds = Number(flags.rounds);

const secret = 'bench-request-cost-secret-long-enough-for-hs256';
const config = loadConfig({ AUTH_JWT_SECRET: secret, DATA_DIR: ':memory:' });
const token = await mintToken(secret, { sub: 'bench-worker', role: 'worker' });
// None of these requests reaches the database, the pub/sub or Prisma: a use of one would fail the run.
const unused = new Proxy({}, { get: (_target, name) => { throw new Error(`request-cost: a request used ${String(name)} of a stand-in`); } });
const yoga = createGraphQLServer({
  deps: { db: unused } as unknown as DomainDeps,
  prisma: unused as PrismaClient,
  pubsub: unused as PubSub,
  verifier: createTokenVerifier(secret),
  maxQueryCost: config.maxQueryCost,
  maxAnswerPayloadBytes: config.maxAnswerPayloadBytes,
  maxBodyBytes: 1 << 20,
  corsOrigins: [],
});

const kinds: { name: string; body: unknown; expect: (answer: { data?: unknown; errors?: { extensions?: { code?: string } }[] }) => boolean }[] = [
  { name: 'typename', body: { query: '{ __typename }' }, expect: (answer) => !answer.errors },
  {
    name: 'batch-refused',
    body: { query: OPERATIONS.recordEvents.document, variables: { events: [] } },
    expect: (answer) => answer.errors?.[0]?.extensions?.code === 'BAD_USER_INPUT',
  },
];

async function send(body: string): Promise<unknown> {
  const response = await yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'content-length': String(Buffer.byteLength(body)) },
    body,
  });
  return response.json();
}

const rows: (string | number)[][] = [];
for (const kind of kinds) {
  const body = JSON.stringify(kind.body);
  const answer = (await send(body)) as Parameters<typeof kind.expect>[0];
  if (!kind.expect(answer)) throw new Error(`request-cost: ${kind.name} answered ${JSON.stringify(answer)}`);
  const perRequestUs: number[] = [];
  for (let round_ = 0; round_ < rounds; round_++) {
    const before = process.cpuUsage();
    for (let i = 0; i < requests; i++) await send(body);
    const used = process.cpuUsage(before);
    perRequestUs.push((used.user + used.system) / requests);
  }
  const sorted = [...perRequestUs].sort((a, b) => a - b);
  rows.push([kind.name, round(sorted[Math.floor(sorted.length / 2)]!, 1)!, perRequestUs.map((us) => round(us, 0)).join(' ')]);
}
console.log(`In process, ${requests} requests a round, ${rounds} rounds (node ${process.version})`);
console.log(table(['request', 'CPU µs a request (median)', 'rounds'], rows));
