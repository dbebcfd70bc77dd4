// Round trips: every SQL statement the server sends for each mutation of one run, and for one
// timeline read, recorded by the probe in the server process (sequential, nothing else running).
import { performance } from 'node:perf_hooks';
import type { GraphQLHttp } from './graphql-http.js';
import { runScript } from './run-script.js';
import type { ServerProcess, TracedStatement } from './server-process.js';
import { serverCreateRun, serverStep, type Lease } from './server-worker.js';
import { minimumFloor } from './floor-minimum.js';
import { floorCreateRun, floorCreateThread, floorStep, type FloorLease } from './floor-write.js';
import type { Sql } from './sql.js';
import { THREAD_AUDITS_EVERYTHING } from './timeline.js';

export interface CensusEntry {
  op: string;
  statements: number;
  /** The same operation as plain SQL (bench/lib/floor-write.ts), BEGIN and COMMIT included. */
  floorStatements?: number;
  /** The minimum-work floor's (bench/lib/floor-minimum.ts). */
  minimumStatements?: number;
  /** Time the server waited on the database for them (sum of statement round trips). */
  dbMs: number;
  latencyMs: number;
  sql: string[];
}

// The lease sweeper's poll runs on its own timer; it is not part of any request.
const isSweeper = (statement: TracedStatement) => /lease_expires_at <= now\(\) ORDER BY lease_expires_at/.test(statement.sql);

async function traced(server: ServerProcess, op: string, call: () => Promise<unknown>): Promise<CensusEntry> {
  await server.traceStart('all');
  const began = performance.now();
  await call();
  const latencyMs = performance.now() - began;
  // The probe records a statement when its promise settles; give the last one a moment.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const statements = (await server.traceTake()).filter((statement) => !isSweeper(statement));
  return {
    op,
    statements: statements.length,
    dbMs: statements.reduce((sum, statement) => sum + statement.ms, 0),
    latencyMs,
    sql: statements.map((statement) => statement.sql.slice(0, 160)),
  };
}

/** Statements per operation of one floor run, in the same order as the server's census. */
async function floorCounts(floor: Sql, ownerSub: string, workerSub: string, kind: 'floor' | 'minimum'): Promise<number[]> {
  const threadId = await floorCreateThread(floor, ownerSub);
  const minimum = minimumFloor(floor, { cursor: true });
  const counts: number[] = [];
  const counted = async <T>(call: () => Promise<T>) => {
    const before = floor.statements;
    const value = await call();
    counts.push(floor.statements - before);
    return value;
  };
  const runId = await counted(() => (kind === 'floor' ? floorCreateRun(floor, ownerSub, threadId) : minimum.createRun(ownerSub, threadId)));
  let lease: FloorLease | null = null;
  for (const step of runScript()) {
    lease = await counted(() => (kind === 'floor' ? floorStep(floor, workerSub, runId, lease, step) : minimum.step(workerSub, runId, lease, step)));
  }
  return counts;
}

/** One run, one mutation at a time, each traced; the third run is reported (warm caches). */
export async function writeCensus(
  server: ServerProcess,
  http: GraphQLHttp,
  tokens: { owner: string; worker: string },
  threadId: string,
  floor: { sql: Sql; minimum: Sql; ownerSub: string; workerSub: string },
) {
  const { owner: ownerToken, worker: workerToken } = tokens;
  let entries: CensusEntry[] = [];
  for (let round = 0; round < 3; round++) {
    entries = [];
    let runId = '';
    entries.push(await traced(server, 'createRun', async () => (runId = await serverCreateRun(http, ownerToken, threadId))));
    let lease: Lease | null = null;
    for (const step of runScript()) {
      entries.push(await traced(server, step.op, async () => (lease = await serverStep(http, workerToken, runId, lease, step))));
    }
  }
  const floorStatements = await floorCounts(floor.sql, floor.ownerSub, floor.workerSub, 'floor');
  const minimumStatements = await floorCounts(floor.minimum, floor.ownerSub, floor.workerSub, 'minimum');
  return entries.map((entry, index) => ({ ...entry, floorStatements: floorStatements[index], minimumStatements: minimumStatements[index] }));
}

export async function readCensus(server: ServerProcess, http: GraphQLHttp, ownerToken: string, threadId: string, limits: number[]) {
  const entries: CensusEntry[] = [];
  for (const limit of limits) {
    entries.push(await traced(server, `threadAudits(limit: ${limit})`, () => http.must(THREAD_AUDITS_EVERYTHING, { threadId, limit }, ownerToken)));
  }
  return entries;
}
