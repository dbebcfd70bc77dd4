// The timeline read: a thread holding many audits, read through `threadAudits` with every nested
// field, against the same rows read with plain SQL.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { GraphQLHttp } from './graphql-http.js';
import type { ServerProcess } from './server-process.js';
import type { Sql, SqlSession } from './sql.js';
import { summarize, type Summary } from './stats.js';

const TOOL_CALL = `id toolCallId name declaredInput effectiveInput status output error startedAt finishedAt durationMs`;
const AUDIT = `id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs`;
const RUN = `id status leaseOwner leaseEpoch leaseExpiresAt createdAt startedAt finishedAt error`;

/** Every field of every audit, and every nested object the contract reaches from it. */
export const THREAD_AUDITS_EVERYTHING = /* GraphQL */ `
  query ThreadAuditsEverything($threadId: ID!, $limit: Int) {
    threadAudits(threadId: $threadId, limit: $limit) {
      threadId
      truncated
      items {
        __typename ${AUDIT}
        run { ${RUN} }
        ... on ModelAudit { model input output error usage toolCalls { ${TOOL_CALL} } }
        ... on ToolAudit {
          toolCallId name effectiveInput output error awaitingRunTerminal
          toolCall { ${TOOL_CALL} }
          declaredBy { ${AUDIT} model input output error usage }
        }
      }
    }
  }`;

async function insertRows(tx: SqlSession, table: string, columns: string[], rows: unknown[][]) {
  const perStatement = Math.floor(30_000 / columns.length);
  for (let from = 0; from < rows.length; from += perStatement) {
    const batch = rows.slice(from, from + perStatement);
    const values: unknown[] = [];
    const tuples = batch.map((row) => {
      const first = values.length;
      values.push(...row);
      return `(${row.map((_, index) => `$${first + index + 1}`).join(', ')})`;
    });
    await tx.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values);
  }
}

const MESSAGE_COLUMNS = [
  'id', 'thread_id', 'run_id', 'role', 'message_type', 'operation_id', 'name', 'status', 'input', 'output', 'usage',
  'sequence', 'finished_sequence', 'started_at', 'finished_at', 'duration_ms', 'start_clock_id', 'start_clock_nanos',
  'end_clock_id', 'end_clock_nanos', 'tool_call_row_id', 'created_at',
];
const TOOL_CALL_COLUMNS = [
  'id', 'thread_id', 'run_id', 'declared_by_id', 'position', 'tool_call_id', 'name', 'declared_input', 'effective_input',
  'status', 'output', 'started_at', 'finished_at', 'duration_ms',
];

/**
 * A thread of finished runs shaped like the write path leaves them (model call declaring two
 * tools, both tools, a second model call: four audits a run), written in bulk so seeding takes
 * seconds. Returns the thread id.
 */
export async function seedTimeline(sql: Sql, ownerSub: string, audits: number): Promise<string> {
  const threadId = randomUUID();
  const runCount = Math.ceil(audits / 4);
  const base = Date.now() - runCount * 10_000;
  const runs: unknown[][] = [];
  const models: unknown[][] = [];
  const toolCalls: unknown[][] = [];
  const tools: unknown[][] = [];
  const json = JSON.stringify;
  for (let r = 0; r < runCount; r++) {
    const runId = randomUUID();
    const at = (ms: number) => new Date(base + r * 10_000 + ms);
    const clockId = `bench-clock-${runId}`;
    const ns = (ms: number) => String(BigInt(ms) * 1_000_000n);
    runs.push([runId, threadId, 'COMPLETED', 1, at(0), at(0), at(3000)]);
    const model = (operationId: string, seq: number, startMs: number, endMs: number, toolIds: string[]) => {
      const id = randomUUID();
      models.push([
        id, threadId, runId, 'ASSISTANT', 'model_audit', operationId, 'bench-model-1', 'COMPLETED',
        json({ messages: [{ role: 'user', content: `Question ${r}: what changed in the quarterly numbers?` }] }),
        json({ role: 'assistant', content: toolIds.length ? '' : 'Revenue grew 4.2%.', tool_calls: toolIds.map((t) => ({ id: t })) }),
        json({ input_tokens: 412, output_tokens: 57 }),
        seq, seq + 1, at(startMs), at(endMs), endMs - startMs, clockId, ns(startMs), clockId, ns(endMs), null, at(startMs),
      ]);
      return id;
    };
    const declaring = model('model-1', 1, 0, 850, ['call-1', 'call-2']);
    ['call-1', 'call-2'].forEach((toolCallId, position) => {
      const toolCallRowId = randomUUID();
      const startMs = 852 + position * 200;
      const endMs = startMs + 120;
      const name = position === 0 ? 'search' : 'fetch_page';
      const args = json({ query: `quarterly revenue by region ${r}` });
      const content = `Result of ${name}: revenue grew 4.2% driven by EMEA (+7.9%) and APAC (+5.1%).`;
      toolCalls.push([toolCallRowId, threadId, runId, declaring, position, toolCallId, name, args, args, 'COMPLETED', json(content), at(startMs), at(endMs), 120]);
      tools.push([
        randomUUID(), threadId, runId, 'TOOL', 'tool_audit', toolCallId, name, 'COMPLETED', args,
        json({ content, status: 'success', id: `msg-${toolCallId}`, name }), null,
        3 + position * 2, 4 + position * 2, at(startMs), at(endMs), 120, clockId, ns(startMs), clockId, ns(endMs), toolCallRowId, at(startMs),
      ]);
    });
    model('model-2', 7, 1300, 2200, []);
  }
  await sql.transaction(async (tx) => {
    await tx.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, $3)`, [threadId, ownerSub, `timeline of ${audits} audits`]);
    await insertRows(tx, 'run', ['id', 'thread_id', 'status', 'lease_epoch', 'created_at', 'started_at', 'finished_at'], runs);
    await insertRows(tx, 'message', MESSAGE_COLUMNS, models);
    await insertRows(tx, 'tool_call', TOOL_CALL_COLUMNS, toolCalls);
    await insertRows(tx, 'message', MESSAGE_COLUMNS, tools);
  });
  await sql.query('ANALYZE');
  return threadId;
}

const uuidArray = (ids: Iterable<string>) => `{${[...new Set(ids)].join(',')}}`;

/**
 * The floor: the same rows with plain SQL. The owner check, the newest `limit + 1` audits, then
 * their runs, tool calls and declaring model calls by id, one statement each.
 */
export async function floorThreadAudits(sql: Sql, ownerSub: string, threadId: string, limit: number) {
  const [thread] = await sql.query(`SELECT id, owner_id FROM thread WHERE id = $1`, [threadId]);
  if (!thread || thread.owner_id !== ownerSub) throw new Error('NOT_FOUND thread');
  const newestFirst = await sql.query(
    // The thread's runs newest first on their own index, each run's audits beside it, so the scan
    // stops at limit + 1 audits (the least any plan can read for a newest-first page).
    `SELECT m.* FROM run r CROSS JOIN LATERAL (
       SELECT * FROM message m WHERE m.run_id = r.id AND m.message_type IN ('model_audit', 'tool_audit')
       ORDER BY m.sequence DESC, m.role DESC, m.id DESC LIMIT $2) m
     WHERE r.thread_id = $1 ORDER BY r.created_order DESC, m.sequence DESC, m.role DESC, m.id DESC LIMIT $2`,
    [threadId, limit + 1],
  );
  const items = newestFirst.slice(0, limit).reverse();
  const runs = await sql.query(`SELECT * FROM run WHERE id = ANY($1::uuid[])`, [uuidArray(items.map((item) => item.run_id))]);
  const modelIds = items.filter((item) => item.role === 'ASSISTANT').map((item) => item.id as string);
  const toolCallIds = items.filter((item) => item.role === 'TOOL').map((item) => item.tool_call_row_id as string);
  const toolCalls = await sql.query(
    `SELECT * FROM tool_call WHERE id = ANY($1::uuid[]) OR declared_by_id = ANY($2::uuid[]) ORDER BY declared_by_id, position`,
    [uuidArray(toolCallIds), uuidArray(modelIds)],
  );
  const loaded = new Set(modelIds);
  const missing = toolCalls.map((call) => call.declared_by_id as string).filter((id) => !loaded.has(id));
  const declaring = missing.length ? await sql.query(`SELECT * FROM message WHERE id = ANY($1::uuid[])`, [uuidArray(missing)]) : [];
  return { items, runs, toolCalls, declaring, truncated: newestFirst.length > limit, statements: missing.length ? 5 : 4 };
}

export interface ReadResult {
  latencyMs: Summary;
  items: number;
  truncated: boolean;
  responseBytes?: number;
}

/** Reads before the timed ones, on both sides. */
export const READ_WARMUPS = 3;

export async function measureServerRead(http: GraphQLHttp, token: string, threadId: string, limit: number, iterations: number): Promise<ReadResult> {
  const call = async () => {
    const data = await http.must(THREAD_AUDITS_EVERYTHING, { threadId, limit }, token);
    return data.threadAudits as { items: unknown[]; truncated: boolean };
  };
  for (let i = 0; i < READ_WARMUPS; i++) await call();
  const latencies: number[] = [];
  let last = { items: [] as unknown[], truncated: false };
  for (let i = 0; i < iterations; i++) {
    // Until the response's last byte: parsing 800 kB of JSON is the client's work, not the server's.
    const began = performance.now();
    last = await call();
    latencies.push(http.lastReceivedAt - began);
  }
  return { latencyMs: summarize(latencies), items: last.items.length, truncated: last.truncated, responseBytes: http.lastResponseBytes };
}

/**
 * The floor's latency, and the same again with the rows serialized as JSON: any server has to
 * send them, so that second number is what a response could cost at the least.
 */
export async function measureFloorRead(sql: Sql, ownerSub: string, threadId: string, limit: number, iterations: number) {
  for (let i = 0; i < READ_WARMUPS; i++) await floorThreadAudits(sql, ownerSub, threadId, limit);
  const latencies: number[] = [];
  const withJson: number[] = [];
  let last = await floorThreadAudits(sql, ownerSub, threadId, limit);
  let bytes = 0;
  for (let i = 0; i < iterations; i++) {
    const began = performance.now();
    last = await floorThreadAudits(sql, ownerSub, threadId, limit);
    const read = performance.now();
    bytes = Buffer.byteLength(JSON.stringify(last));
    latencies.push(read - began);
    withJson.push(performance.now() - began);
  }
  return {
    latencyMs: summarize(latencies),
    withJsonMs: summarize(withJson),
    responseBytes: bytes,
    items: last.items.length,
    truncated: last.truncated,
    statements: last.statements,
  };
}

/**
 * The SQL statements the server sends for one read (the probe's trace; the lease sweeper's poll,
 * on its own timer, is not part of it).
 */
export async function serverReadStatements(server: ServerProcess, http: GraphQLHttp, token: string, threadId: string, limit: number) {
  await server.traceStart('all');
  await http.must(THREAD_AUDITS_EVERYTHING, { threadId, limit }, token);
  // The probe records a statement when its promise settles; give the last one a moment.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const statements = await server.traceTake();
  return statements.filter((statement) => !/lease_expires_at <= now\(\)[\s\S]*ORDER BY lease_expires_at/.test(statement.sql)).length;
}
