import { randomUUID } from 'node:crypto';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import type { AuditStatus, ToolCallStatus } from '../../src/generated/prisma/client.js';
import { buildApp } from '../../src/server/app.js';
import { TEST_JWT_SECRET, type GraphQLResponse, type TestApp } from '../support/app.js';
import { createScratchDatabase, onPostgres } from '../support/database.js';

export interface ObservedApp extends TestApp {
  /** Every SQL statement Prisma sent since the last `reset`. */
  statements: string[];
  /** Runs one operation and returns it with the SQL statements it caused. */
  measure<T = any>(query: string, variables: Record<string, unknown>, token: string): Promise<{ response: GraphQLResponse<T>; statements: string[] }>;
}

/**
 * The real app on a fresh database whose Prisma client reports every SQL statement it sends
 * (through the driver adapter, so Prisma's own batching is already applied).
 */
export async function startObservedApp(): Promise<ObservedApp> {
  const scratch = onPostgres ? await createScratchDatabase() : null;
  const config = loadConfig({
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    DATA_DIR: ':memory:',
    // The sweeper must not add its own statements to a measured request.
    LEASE_SWEEP_INTERVAL_MS: '3600000',
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
  });
  const statements: string[] = [];
  const database = await openDatabase({ url: config.databaseUrl, onQuery: (sql) => statements.push(sql) });
  const app = await buildApp(config, { database });
  const gql = async (query: string, variables?: Record<string, unknown>, token?: string | null) => {
    const response = await app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return (await response.json()) as GraphQLResponse;
  };
  return {
    app,
    config,
    statements,
    token: (sub, role) => mintToken(TEST_JWT_SECRET, { sub, role }),
    gql,
    async measure(query, variables, token) {
      statements.length = 0;
      const response = await gql(query, variables, token);
      return { response, statements: statements.splice(0) };
    },
    async close() {
      await app.stop();
      await scratch?.drop();
    },
  };
}

type Prisma = TestApp['app']['db']['prisma'];

/** A finished run written straight into the table (test data setup). */
export async function insertRun(prisma: Prisma, threadId: string, resumedFromId: string | null = null): Promise<string> {
  const run = await prisma.run.create({
    data: { threadId, status: 'COMPLETED', resumedFromId, startedAt: new Date(), finishedAt: new Date() },
  });
  return run.id;
}

/**
 * Test data setup: `count` audits in one run, written straight into the tables as the lifecycle
 * writes them, so a test can hold hundreds of them without hundreds of mutations. They alternate:
 * a model audit declaring one tool call, then that call's tool audit; sequences run from
 * `firstSequence` up. Returns the audit ids in sequence order.
 */
export async function insertAudits(
  prisma: Prisma,
  options: { threadId: string; runId: string; count: number; firstSequence?: number },
): Promise<string[]> {
  const { threadId, runId, count } = options;
  const first = options.firstSequence ?? 1;
  const at = new Date();
  const audits = [];
  const toolCalls = [];
  for (let i = 0; i < count; i += 2) {
    const sequence = first + i;
    const modelId = randomUUID();
    const toolCallRowId = randomUUID();
    const toolCallId = `call-${sequence}`;
    const ran = i + 1 < count;
    const completed = { status: 'COMPLETED' as AuditStatus, startedAt: at, finishedAt: at };
    audits.push({
      id: modelId, threadId, runId, role: 'ASSISTANT' as const, messageType: 'model_audit' as const,
      operationId: `model-${sequence}`, name: 'test-model', sequence: BigInt(sequence), input: { turn: sequence }, ...completed,
    });
    toolCalls.push({
      id: toolCallRowId, threadId, runId, declaredById: modelId, position: 0, toolCallId, name: 'search',
      declaredInput: { q: sequence },
      ...(ran
        ? { status: 'COMPLETED' as ToolCallStatus, effectiveInput: { q: sequence }, output: `found ${sequence}`, startedAt: at, finishedAt: at }
        : {}),
    });
    if (ran) {
      audits.push({
        id: randomUUID(), threadId, runId, role: 'TOOL' as const, messageType: 'tool_audit' as const,
        operationId: toolCallId, name: 'search', sequence: BigInt(sequence + 1), input: { q: sequence },
        output: { content: `found ${sequence}`, status: 'success', id: `msg-${sequence}`, artifact: { raw: sequence } },
        toolCallRowId, ...completed,
      });
    }
  }
  // Model audits, then the calls they declare, then the tool audits bound to those calls.
  await prisma.message.createMany({ data: audits.filter((audit) => audit.role === 'ASSISTANT') });
  await prisma.toolCall.createMany({ data: toolCalls });
  await prisma.message.createMany({ data: audits.filter((audit) => audit.role === 'TOOL') });
  return audits.map((audit) => audit.id);
}

export interface SseSubscription {
  /** The `data` payloads received so far. */
  events: GraphQLResponse[];
  /** Resolves once `count` payloads have arrived. */
  received(count: number): Promise<GraphQLResponse[]>;
  close(): Promise<void>;
}

/** A subscription over SSE through yoga's in-process fetch, as a browser UI would open it. */
export async function subscribeOverSse(
  t: TestApp,
  query: string,
  variables: Record<string, unknown>,
  token: string,
): Promise<SseSubscription> {
  const controller = new AbortController();
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) throw new Error(`SSE subscription refused: ${response.status}`);
  const events: GraphQLResponse[] = [];
  let wake = () => {};
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const pump = (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const data = buffer
            .slice(0, end)
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n');
          buffer = buffer.slice(end + 2);
          if (data) events.push(JSON.parse(data) as GraphQLResponse);
          wake();
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    events,
    async received(count) {
      while (events.length < count) await new Promise<void>((resolve) => (wake = resolve));
      return events.slice(0, count);
    },
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}
