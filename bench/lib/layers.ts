// Where the time goes, layer by layer, in one process and one worker (W=1): the same runs as
// plain SQL, through the domain commands (plain SQL), through GraphQL in process (yoga.fetch), and
// over HTTP to the same app listening in this process. CPU time per request is robust to other
// load on the machine; the differences between layers are each layer's cost.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { jwtVerify } from 'jose';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { mintToken, createTokenVerifier } from '../../src/auth/jwt.js';
import type { Principal } from '../../src/auth/principal.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { finishRun } from '../../src/domain/convergence.js';
import { claimRun } from '../../src/domain/lease.js';
import { recordModelFinished, recordModelStarted } from '../../src/domain/model-audits.js';
import { createRun } from '../../src/domain/runs.js';
import { createThread } from '../../src/domain/threads.js';
import { recordToolFinished, recordToolStarted } from '../../src/domain/tool-audits.js';
import { buildApp } from '../../src/server/app.js';
import { summarizeProfile } from './cpuprofile.js';
import { floorCreateRun, floorCreateThread, floorStep, type FloorLease } from './floor-write.js';
import { GraphQLHttp } from './graphql-http.js';
import { clockReading, runScript, type Step } from './run-script.js';
import { stepRequest } from './server-worker.js';
import { OPERATIONS } from '@agent-audit/client';
import type { Sql } from './sql.js';
import { round } from './stats.js';

interface Driver {
  createRun(): Promise<string>;
  step(runId: string, lease: FloorLease | null, step: Step): Promise<FloorLease | null>;
}

export interface LayerRow {
  layer: string;
  /** Requests: createRun and the ten lifecycle events of each run. */
  requests: number;
  cpuMsPerRequest: number;
  wallMsPerRequest: number;
  profile?: ReturnType<typeof summarizeProfile>;
}

/** CPU and wall time of `runs` whole runs through `driver`, one request at a time. */
async function measure(driver: Driver, runs: number) {
  const steps = runScript();
  const cpu = process.cpuUsage();
  const began = performance.now();
  for (let i = 0; i < runs; i++) {
    const runId = await driver.createRun();
    let lease: FloorLease | null = null;
    for (const step of steps) lease = await driver.step(runId, lease, step);
  }
  const wallMs = performance.now() - began;
  const used = process.cpuUsage(cpu);
  const requests = runs * (steps.length + 1);
  return { requests, cpuMs: (used.user + used.system) / 1000 / requests, wallMs: wallMs / requests };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Every layer warmed up, then measured in interleaved rounds (A B C D, A B C D, …) so that JIT
 * warm-up and changes in the machine's load fall on all layers alike; the median round counts.
 */
async function measureAll(layers: [string, Driver][], runs: number, profileDir: string | null, rounds = 3): Promise<LayerRow[]> {
  for (const [, driver] of layers) await measure(driver, 5);
  const samples = layers.map(() => ({ cpu: [] as number[], wall: [] as number[], requests: 0 }));
  for (let round = 0; round < rounds; round++) {
    for (const [index, [, driver]] of layers.entries()) {
      const result = await measure(driver, Math.ceil(runs / rounds));
      samples[index]!.cpu.push(result.cpuMs);
      samples[index]!.wall.push(result.wallMs);
      samples[index]!.requests += result.requests;
    }
  }
  const profiles: (ReturnType<typeof summarizeProfile> | null)[] = [];
  for (const [index, [, driver]] of layers.entries()) {
    if (!profileDir) break;
    profiles.push(await profiledRound(join(profileDir, `layer-${index}.cpuprofile`), () => measure(driver, Math.ceil(runs / rounds))));
  }
  return layers.map(([layer], index) => ({
    layer,
    requests: samples[index]!.requests,
    cpuMsPerRequest: round(median(samples[index]!.cpu), 3)!,
    wallMsPerRequest: round(median(samples[index]!.wall), 3)!,
    profile: profiles[index] ?? undefined,
  }));
}

/** One more round under the V8 profiler of this process (kept out of the measured rounds). */
async function profiledRound(file: string, body: () => Promise<unknown>) {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    await body();
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    return summarizeProfile(file);
  } finally {
    session.disconnect();
  }
}

const observed = (runId: string, step: { sequence: bigint; clockMs: number }) => ({
  sequence: step.sequence,
  observedAt: new Date(),
  clock: clockReading(step.clockMs, `bench-clock-${runId}`),
});

/** The domain commands themselves, as the resolvers call them: the rules and their SQL, no GraphQL. */
function domainDriver(deps: Parameters<typeof claimRun>[0], owner: Principal, worker: Principal, threadId: string): Driver {
  return {
    createRun: async () => (await createRun(deps, owner, { threadId })).id,
    async step(runId, lease, step) {
      switch (step.op) {
        case 'claimRun': {
          const claimed = await claimRun(deps, worker, { runId, leaseSeconds: step.leaseSeconds });
          return { runId: claimed.runId, epoch: claimed.epoch };
        }
        case 'recordModelStarted':
          await recordModelStarted(deps, worker, { lease: lease!, operationId: step.operationId, model: step.model, input: step.input, ...observed(runId, step) });
          return lease;
        case 'recordModelFinished':
          await recordModelFinished(deps, worker, {
            lease: lease!, operationId: step.operationId, status: 'COMPLETED', output: step.output, usage: step.usage, toolCalls: step.toolCalls as never, ...observed(runId, step),
          });
          return lease;
        case 'recordToolStarted':
          await recordToolStarted(deps, worker, { lease: lease!, toolCallId: step.toolCallId, name: step.name, effectiveInput: step.effectiveInput, namespace: [], ...observed(runId, step) });
          return lease;
        case 'recordToolFinished':
          await recordToolFinished(deps, worker, { lease: lease!, toolCallId: step.toolCallId, output: step.output, namespace: [], ...observed(runId, step) });
          return lease;
        case 'finishRun':
          await finishRun(deps, worker, { lease: lease!, status: step.status });
          return null;
      }
    },
  };
}

type Post = (document: string, variables: Record<string, unknown>, token: string) => Promise<any>;

/** The same mutations selecting only `id` (or the lease): no nested objects to load after commit. */
const MINIMAL: Record<string, string> = {
  claimRun: `mutation ($input: ClaimRunInput!) { claimRun(input: $input) { runId epoch } }`,
  recordModelStarted: `mutation ($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }`,
  recordModelFinished: `mutation ($input: ModelFinishedInput!) { recordModelFinished(input: $input) { id } }`,
  recordToolStarted: `mutation ($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }`,
  recordToolFinished: `mutation ($input: ToolFinishedInput!) { recordToolFinished(input: $input) { id } }`,
  finishRun: `mutation ($input: FinishRunInput!) { finishRun(input: $input) { id } }`,
};

function graphqlDriver(post: Post, ownerToken: string, workerToken: string, threadId: string, minimal = false): Driver {
  return {
    createRun: async () =>
      (await post(minimal ? `mutation ($input: CreateRunInput!) { createRun(input: $input) { id } }` : OPERATIONS.createRun.document, { input: { threadId } }, ownerToken)).createRun.id,
    async step(runId, lease, step) {
      const request = stepRequest(runId, lease, step);
      const document = minimal ? MINIMAL[step.op]! : request.document;
      const data = await post(document, request.variables, workerToken);
      if (step.op === 'claimRun') return { runId: data.claimRun.runId, epoch: data.claimRun.epoch };
      return step.op === 'finishRun' ? null : lease;
    },
  };
}

/** The signature check at the heart of HS256, synchronously with node:crypto (not a full JWT verification). */
function hmacCheck(token: string, secret: string): boolean {
  const [header, payload, signature] = token.split('.');
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature!, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** CPU per call of one piece, repeated `times`. */
async function perCall(times: number, call: () => Promise<unknown>) {
  for (let i = 0; i < 300; i++) await call();
  const cpu = process.cpuUsage();
  for (let i = 0; i < times; i++) await call();
  const used = process.cpuUsage(cpu);
  return round((used.user + used.system) / 1000 / times, 3)!;
}

export async function measureLayers(options: { database: Database; floor: Sql; databaseUrl?: string; runs: number; profileDir: string | null }) {
  const secret = 'bench-layers-secret-long-enough-for-hs256';
  const config = loadConfig({ AUTH_JWT_SECRET: secret, DATA_DIR: ':memory:', ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}) });
  const app = await buildApp(config, { database: options.database });
  const owner: Principal = { sub: 'layers-owner', role: 'superadmin' };
  const worker: Principal = { sub: 'layers-worker', role: 'worker' };
  const ownerToken = await mintToken(secret, owner);
  const workerToken = await mintToken(secret, worker);
  const http = new GraphQLHttp(await app.start(0, '127.0.0.1'));
  try {
    const yogaPost: Post = async (document, variables, token) => {
      const response = await app.yoga.fetch('http://bench/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: document, variables }),
      });
      const result = (await response.json()) as { data?: any; errors?: unknown };
      if (result.errors || !result.data) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
      return result.data;
    };
    const httpPost: Post = (document, variables, token) => http.must(document, variables, token);
    const newThread = async (post: Post) => (await post(OPERATIONS.createThread.document, { input: { title: 'layers' } }, ownerToken)).createThread.id;
    const floorThread = await floorCreateThread(options.floor, owner.sub);
    const domainThread = (await createThread(app.deps, owner, { title: 'layers' })).id;
    const rows = await measureAll(
      [
        ['plain SQL (the floor)', {
          createRun: () => floorCreateRun(options.floor, owner.sub, floorThread),
          step: (runId, lease, step) => floorStep(options.floor, worker.sub, runId, lease, step),
        }],
        ['domain commands (plain SQL, no GraphQL)', domainDriver(app.deps, owner, worker, domainThread)],
        ['GraphQL in process (yoga.fetch), selecting only ids', graphqlDriver(yogaPost, ownerToken, workerToken, await newThread(yogaPost), true)],
        ['GraphQL in process (yoga.fetch), the client\'s selections', graphqlDriver(yogaPost, ownerToken, workerToken, await newThread(yogaPost))],
        ['HTTP, same process (client + server CPU)', graphqlDriver(httpPost, ownerToken, workerToken, await newThread(httpPost))],
      ],
      options.runs,
      options.profileDir,
    );

    // Pieces every request pays, whatever it does.
    const verifier = createTokenVerifier(secret);
    const send = async (query: string, variables: Record<string, unknown>, token?: string) => {
      const response = await app.yoga.fetch('http://bench/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      await response.text();
    };
    const typename = (token?: string) => send('{ __typename }', {}, token);
    // A lifecycle document with its JSON variables, refused by scope auth before any resolver runs.
    const finished = runScript().find((step) => step.op === 'recordToolFinished')!;
    const refused = stepRequest('00000000-0000-4000-8000-000000000000', { runId: '00000000-0000-4000-8000-000000000000', epoch: 1 }, finished);
    const userToken = await mintToken(secret, { sub: 'layers-user', role: 'user' });
    // And what one statement costs through Prisma against plain SQL on the same pool.
    const prisma = app.db.prisma;
    const [key] = await options.floor.query<{ run_id: string; role: 'ASSISTANT'; operation_id: string }>(
      `SELECT run_id, role::text AS role, operation_id FROM message WHERE role = 'ASSISTANT' LIMIT 1`,
    );
    const byKey = { runId_role_operationId: { runId: key!.run_id, role: key!.role, operationId: key!.operation_id } };
    const pieces = {
      tokenVerifierMs: await perCall(2000, () => verifier.verify(`Bearer ${workerToken}`)),
      joseVerifyMs: await perCall(2000, () => jwtVerify(workerToken, new TextEncoder().encode(secret), { algorithms: ['HS256'] })),
      hmacSha256Ms: await perCall(2000, async () => hmacCheck(workerToken, secret)),
      yogaTrivialQueryNoTokenMs: await perCall(2000, () => typename()),
      yogaTrivialQueryWithTokenMs: await perCall(2000, () => typename(workerToken)),
      yogaRefusedMutationMs: await perCall(2000, () => send(refused.document, refused.variables, userToken)),
      prismaFindUniqueMs: await perCall(1000, () => prisma.message.findUnique({ where: byKey })),
      sqlSelectByKeyMs: await perCall(1000, () =>
        options.floor.query(`SELECT * FROM message WHERE run_id = $1 AND role = $2::"MessageRole" AND operation_id = $3`, [key!.run_id, key!.role, key!.operation_id]),
      ),
      prismaRawSelect1Ms: await perCall(1000, () => prisma.$queryRawUnsafe('SELECT 1')),
      sqlSelect1Ms: await perCall(1000, () => options.floor.query('SELECT 1')),
      prismaTransactionSelect1Ms: await perCall(1000, () => prisma.$transaction((tx) => tx.$queryRawUnsafe('SELECT 1'))),
      sqlTransactionSelect1Ms: await perCall(1000, () => options.floor.transaction((tx) => tx.query('SELECT 1'))),
    };
    return { rows, pieces };
  } finally {
    http.close();
    await app.stop();
  }
}
