// An answer's JSON payloads are bounded (MAX_ANSWER_PAYLOAD_BYTES), but they were counted as they
// were serialized: after every payload of the answer had been read from the database into the
// server's memory. Any reader could make the server hold hundreds of megabytes (a threadAudits of
// 500 audits of 1 MiB payloads, a search or ledger page, aliased root fields) before it refused.
// Each read now charges the payloads' stored sizes before it loads them: a refused answer loads
// at most the budget. What shows it: the server process's peak resident memory (getrusage's
// maxRSS) while it refuses reads of ~100 MiB of payloads stays far below that; this file runs in a
// process of its own (vitest.config.ts, "isolated"), so no earlier file has raised that peak.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { createThread } from '../support/lifecycle.js';
import { insertAudits, insertRun } from '../reads/support.js';

const MiB = 1024 * 1024;
const MAX_JSON_BYTES = MiB;
/** The least the server takes: four MAX_JSON_BYTES values as stored (1.5 × as sent), one audit's worth. */
const MAX_ANSWER_PAYLOAD_BYTES = 6 * MAX_JSON_BYTES;
/** 50 model audits, 50 tool calls and 50 tool audits: each payload ~1 MiB, ~200 MiB in all. */
const AUDITS = 100;
const PAYLOAD_CHARS = MAX_JSON_BYTES - 1024;
/** Ordinary messages of ~1 MiB each. */
const CHAT_MESSAGES = 100;
/** Runs that failed with an error of ~1 MiB each. */
const FAILED_RUNS = 100;
/** Far below what the refused reads would have loaded (each at least 50 MiB), above a small read's noise. */
const MAX_PEAK_GROWTH = 24 * MiB;

let t: TestApp;
let owner: string;
let threadId: string;
let runId: string;
let auditIds: string[];

beforeAll(async () => {
  t = await startTestApp({
    MAX_JSON_BYTES: String(MAX_JSON_BYTES),
    MAX_ANSWER_PAYLOAD_BYTES: String(MAX_ANSWER_PAYLOAD_BYTES),
    // The setup's statements write ~400 MiB of payloads through the app's client: past the 30 s
    // default on a loaded machine (canceled, 57014). The reads under test are refused long before.
    DATABASE_STATEMENT_TIMEOUT_MS: '300000',
  });
  owner = await t.token('payload-memory-owner', 'superadmin');
  threadId = await createThread(t, owner);
  runId = await insertRun(t.app.db.prisma, threadId);
  auditIds = await insertAudits(t.app.db.prisma, { threadId, runId, count: AUDITS });
  // Large payloads made in the database (they compress there, so writing them is quick); each is
  // ~1 MiB of JSON text once read.
  const big = `jsonb_build_object('text', repeat('x', ${PAYLOAD_CHARS}))`;
  await t.app.db.prisma.$executeRawUnsafe(`UPDATE message SET input = ${big}, output = ${big}, usage = ${big} WHERE run_id = $1::uuid`, runId);
  await t.app.db.prisma.$executeRawUnsafe(`UPDATE tool_call SET declared_input = ${big} WHERE run_id = $1::uuid`, runId);
  await t.app.db.prisma.$executeRawUnsafe(
    `INSERT INTO message (id, thread_id, role, message_type, content) SELECT gen_random_uuid(), $1::uuid, 'USER', 'chat', ${big} FROM generate_series(1, ${CHAT_MESSAGES})`,
    threadId,
  );
  await t.app.db.prisma.$executeRawUnsafe(
    `INSERT INTO run (id, thread_id, status, error) SELECT gen_random_uuid(), $1::uuid, 'FAILED', ${big} FROM generate_series(1, ${FAILED_RUNS})`,
    threadId,
  );
}, 120_000);
afterAll(() => t?.close());

/** The peak resident memory of this process (the server's: the app runs in process), in bytes. */
const peakMemory = () => process.resourceUsage().maxRSS * 1024;

/** `query`'s answer, and how much it raised the server's peak memory. */
async function refusedWithPeak(query: string, variables: Record<string, unknown>) {
  const before = peakMemory();
  const answer: GraphQLResponse = await t.gql(query, variables, owner);
  return { answer, growth: peakMemory() - before };
}

function expectRefused(answer: GraphQLResponse) {
  expect(errorCode(answer), JSON.stringify(answer).slice(0, 600)).toBe('BAD_USER_INPUT');
  expect(answer.errors![0]!.extensions, answer.errors![0]!.message).toMatchObject({ limit: 'ANSWER_PAYLOAD_BYTES', max: MAX_ANSWER_PAYLOAD_BYTES });
  expect(answer.data ?? null).toBeNull();
}

const EVERY_AUDIT_PAYLOAD = `... on ModelAudit { input output error usage } ... on ToolAudit { effectiveInput output error }`;

describe(`a refused answer loads no more payloads than the budget (${backendName})`, () => {
  it('threadAudits(limit: 500) selecting every payload of ~300 MiB: refused, the peak memory barely moves', async () => {
    const { answer, growth } = await refusedWithPeak(
      `query($threadId: ID!) { threadAudits(threadId: $threadId, limit: 500) { items { id ${EVERY_AUDIT_PAYLOAD} } } }`,
      { threadId },
    );
    expectRefused(answer);
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH);
  });

  it('aliased root fields (audit(id) with the audit it links to, each within the budget, together far over it): refused, the peak memory barely moves', async () => {
    const toolAudits = auditIds.filter((_, i) => i % 2 === 1).slice(0, 15); // 15: the most aliases a document may use
    const fields = toolAudits.map((id, i) => `a${i}: audit(id: "${id}") { id ${EVERY_AUDIT_PAYLOAD} ... on ToolAudit { declaredBy { input output usage } } }`);
    const { answer, growth } = await refusedWithPeak(`query { ${fields.join(' ')} }`, {});
    expectRefused(answer);
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH);
  });

  it('a searchAudits page, and the payloads of the audits and tool calls it links to: refused, the peak memory barely moves', async () => {
    const { answer, growth } = await refusedWithPeak(
      `query($threadId: ID!) { searchAudits(threadId: $threadId, first: 100) { items { audit { id ${EVERY_AUDIT_PAYLOAD}
        ... on ToolAudit { toolCall { declaredInput effectiveInput output } declaredBy { input usage } } } } } }`,
      { threadId },
    );
    expectRefused(answer);
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH);
  });

  it('a toolCallLedger page and a thread\'s runs\' tool calls: refused, the peak memory barely moves', async () => {
    const ledger = await refusedWithPeak(
      `query($threadId: ID!) { toolCallLedger(threadId: $threadId, first: 100) { edges { node { id declaredInput effectiveInput } } } }`,
      { threadId },
    );
    expectRefused(ledger.answer);
    expect(ledger.growth).toBeLessThan(MAX_PEAK_GROWTH);
    const runs = await refusedWithPeak(
      `query($threadId: ID!) { thread(id: $threadId) { runs { toolCalls { id declaredInput effectiveInput output declaredBy { input } } } } }`,
      { threadId },
    );
    expectRefused(runs.answer);
    expect(runs.growth).toBeLessThan(MAX_PEAK_GROWTH);
  });

  it("a thread's ordinary messages: refused, the peak memory barely moves", async () => {
    // The second alias, with other arguments, is read apart from the first (the plugin's fallback).
    const { answer, growth } = await refusedWithPeak(
      `query($threadId: ID!) { thread(id: $threadId) { messages(first: 1000) { id content } older: messages(first: 999) { content } } }`,
      { threadId },
    );
    expectRefused(answer);
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH);
    const few = await t.gql(`query($threadId: ID!) { thread(id: $threadId) { messages(first: 2) { content } } }`, { threadId }, owner);
    expect(few.errors).toBeUndefined();
    expect(few.data.thread.messages.map((message: { content: { text: string } }) => message.content.text.length)).toEqual([PAYLOAD_CHARS, PAYLOAD_CHARS]);
  });

  it("a thread's runs' errors: refused, the peak memory barely moves", async () => {
    const { answer, growth } = await refusedWithPeak(`query($threadId: ID!) { thread(id: $threadId) { runs(first: 500) { id error } } }`, { threadId });
    expectRefused(answer);
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH);
    const few = await t.gql(`query($threadId: ID!) { thread(id: $threadId) { runs(first: 2) { error } } }`, { threadId }, owner);
    expect(few.errors).toBeUndefined();
    expect(few.data.thread.runs.map((run: { error: { text: string } | null }) => run.error?.text.length ?? null)).toEqual([null, PAYLOAD_CHARS]);
  });

  it('within the budget the same reads answer every payload as stored', async () => {
    const answer = await t.gql(
      `query($threadId: ID!) { threadAudits(threadId: $threadId, limit: 1) { items { id ... on ToolAudit { output } } } }`,
      { threadId },
      owner,
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data.threadAudits.items[0].output.text).toHaveLength(PAYLOAD_CHARS);
  });
});
