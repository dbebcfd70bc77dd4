import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// Run.auditSummary, Thread.auditSummary / runCount / failedRunCount / lastActivityAt and
// threadAudits(runId): what a debug UI shows of runs whose entries it has not loaded
// (docs/debug-ui.md, "Failures at a glance").

let t: TestApp;
let who: Actors;
/** Every SQL statement sent, to hold the summaries to one statement per field and page. */
const statements: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' }, { onQuery: (sql) => statements.push(sql) });
  who = await actors(t);
});
afterAll(() => t.close());

const SUMMARY = `audits modelCalls toolCalls modelsFailed toolsFailed toolsAbandoned toolsCancelled toolsInterrupted running
  firstStartedAt lastFinishedAt lastChangedAt inputTokens outputTokens`;

/** A COMPLETED run whose tools ended badly (one errored, one never finished), then a FAILED run. */
async function recordThread(title: string) {
  const threadId = await createThread(t, who.owner, title);
  const first = await createRun(t, who.owner, threadId);
  const one = await claim(t, who.worker, first);
  must(await one.modelStarted('m1', { model: 'gpt-test' }));
  must(
    await one.modelFinished('m1', [{ id: 'ok', name: 'search' }, { id: 'bad', name: 'pay' }, { id: 'hung', name: 'sleep' }], {
      // AI SDK 5+'s nested counts
      usage: { inputTokens: { total: 100, noCache: 100 }, outputTokens: { total: 10 } },
    }),
  );
  must(await one.toolStarted('ok', 'search'));
  must(await one.toolFinished('ok', { content: 'found', status: 'success' }));
  must(await one.toolStarted('bad', 'pay'));
  must(await one.toolFinished('bad', { content: 'permission denied\n  at pay (pay.ts:1)', status: 'error' }));
  must(await one.toolStarted('hung', 'sleep'));
  must(await one.modelStarted('m2', { model: 'gpt-test' }));
  must(await one.modelFinished('m2', [], { usage: { input_tokens: 50, output_tokens: 5 } }));
  must(await one.finish('COMPLETED'));

  const second = await createRun(t, who.owner, threadId, first);
  const two = await claim(t, who.worker, second);
  must(await two.modelStarted('m1', { model: 'gpt-test' }));
  must(await two.modelFinished('m1', [], { usage: { prompt_tokens: 7, completion_tokens: 1 } }));
  must(await two.finish('FAILED', { error: { message: 'gave up' } }));
  return { threadId, runIds: [first, second] };
}

async function ok(query: string, variables: Record<string, unknown>, token = who.owner) {
  const response = await t.gql(query, variables, token);
  expect(response.errors).toBeUndefined();
  return response.data;
}

describe('audit summaries', () => {
  it("count a run's failures whatever its own status, and its calls, times and tokens", async () => {
    const { threadId, runIds } = await recordThread('summaries');
    const data = await ok(
      `query($id: ID!) { thread(id: $id) {
        runCount failedRunCount lastActivityAt auditSummary { ${SUMMARY} }
        runs { id status auditSummary { ${SUMMARY} } }
      } }`,
      { id: threadId },
    );
    const [first, second] = data.thread.runs;
    expect(first.id).toBe(runIds[0]);
    expect(first.status).toBe('COMPLETED');
    expect(first.auditSummary).toMatchObject({
      audits: 5, modelCalls: 2, toolCalls: 3, modelsFailed: 0, toolsFailed: 1, toolsAbandoned: 1, toolsCancelled: 0, toolsInterrupted: 0,
      running: 0, inputTokens: '150', outputTokens: '15',
    });
    expect(Date.parse(first.auditSummary.firstStartedAt)).toBeLessThanOrEqual(Date.parse(first.auditSummary.lastFinishedAt));
    expect(second.auditSummary).toMatchObject({ audits: 1, modelCalls: 1, toolCalls: 0, toolsFailed: 0, inputTokens: '7', outputTokens: '1' });
    expect(data.thread).toMatchObject({
      runCount: 2,
      failedRunCount: 1,
      auditSummary: { audits: 6, modelCalls: 3, toolCalls: 3, toolsFailed: 1, toolsAbandoned: 1, inputTokens: '157', outputTokens: '16' },
    });
    expect(Date.parse(data.thread.lastActivityAt)).toBeGreaterThanOrEqual(Date.parse(first.auditSummary.lastChangedAt));
  });

  it("sum tokens past GraphQL Int's 2^31 - 1 exactly, counting only whole non-negative counts", async () => {
    const threadId = await createThread(t, who.owner, 'tokens');
    const session = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    const usages = [
      { input_tokens: 2_000_000_000, output_tokens: 9_007_199_254_740_991 },
      { input_tokens: 2_000_000_000, output_tokens: 9_007_199_254_740_991 },
      // Not counts: a fraction, a negative, past 2^53 (already rounded when it arrived), not finite.
      { input_tokens: 1.5, output_tokens: -3 },
      { input_tokens: 1e300, output_tokens: 2 ** 60 },
    ];
    for (const [index, usage] of usages.entries()) {
      must(await session.modelStarted(`m${index}`));
      must(await session.modelFinished(`m${index}`, [], { usage }));
    }
    const data = await ok(
      `query($id: ID!) { thread(id: $id) { auditSummary { inputTokens outputTokens } runs { auditSummary { inputTokens outputTokens } } } }`,
      { id: threadId },
    );
    const totals = { inputTokens: '4000000000', outputTokens: '18014398509481982' };
    expect(data.thread.auditSummary).toEqual(totals);
    expect(data.thread.runs).toEqual([{ auditSummary: totals }]);
    const page = await ok(`{ threads(first: 1) { edges { node { id auditSummary { inputTokens } } } } }`, {});
    expect(page.threads.edges[0].node).toEqual({ id: threadId, auditSummary: { inputTokens: '4000000000' } });
  });

  it('are zero and null for a thread and a run without audits', async () => {
    const threadId = await createThread(t, who.owner, 'empty');
    await createRun(t, who.owner, threadId);
    const data = await ok(`query($id: ID!) { thread(id: $id) { runCount failedRunCount auditSummary { ${SUMMARY} } runs { auditSummary { audits inputTokens firstStartedAt } } } }`, { id: threadId });
    expect(data.thread.runCount).toBe(1);
    expect(data.thread.auditSummary).toMatchObject({ audits: 0, toolsFailed: 0, inputTokens: null, outputTokens: null, firstStartedAt: null, lastChangedAt: null });
    expect(data.thread.runs).toEqual([{ auditSummary: { audits: 0, inputTokens: null, firstStartedAt: null } }]);
  });

  it('are read in a bounded number of statements however many threads and runs a page holds', async () => {
    for (let i = 0; i < 4; i++) await recordThread(`count ${i}`);
    const LIST = `query($first: Int) { threads(first: $first) { edges { node {
      id runCount failedRunCount lastActivityAt auditSummary { ${SUMMARY} }
      latestRun { id auditSummary { ${SUMMARY} } }
      runs { id auditSummary { ${SUMMARY} } }
    } } } }`;
    const measure = async (first: number) => {
      statements.length = 0;
      const data = await ok(LIST, { first });
      expect(data.threads.edges).toHaveLength(first);
      expect(data.threads.edges.every((edge: any) => edge.node.runs.every((run: any) => typeof run.auditSummary.audits === 'number'))).toBe(true);
      const caused = statements.splice(0);
      if (process.env.SHOW_SQL) console.log(caused.map((sql) => sql.slice(0, 140)).join('\n'));
      return caused.length;
    };
    // The page; the thread's run counts, audit counts and tokens; then for `latestRun` and for
    // `runs` each: Prisma's thread and run reads, the runs' audit counts and tokens. None per item.
    // Fewer when the loaders of `latestRun` and `runs` happen to fall in one batch (10 or 12,
    // by timing), so the bound, not the exact count, is what holds for one thread and for five.
    expect(await measure(1)).toBeLessThanOrEqual(12);
    expect(await measure(5)).toBeLessThanOrEqual(12);
  });
});

describe('threadAudits(runId)', () => {
  const RUN_PAGE = `query($threadId: ID!, $runId: ID, $limit: Int, $before: ID) {
    threadAudits(threadId: $threadId, runId: $runId, limit: $limit, before: $before) { truncated items { id runId sequence } }
  }`;

  it("pages back through one run's audits, newest first, in the timeline's order", async () => {
    const { threadId, runIds } = await recordThread('run pages');
    const whole = await ok(RUN_PAGE, { threadId, limit: 500 });
    const ofFirst = whole.threadAudits.items.filter((item: any) => item.runId === runIds[0]);
    expect(ofFirst).toHaveLength(5);

    const newest = await ok(RUN_PAGE, { threadId, runId: runIds[0], limit: 2 });
    expect(newest.threadAudits).toEqual({ truncated: true, items: ofFirst.slice(3) });
    const older = await ok(RUN_PAGE, { threadId, runId: runIds[0], limit: 2, before: ofFirst[3].id });
    expect(older.threadAudits).toEqual({ truncated: true, items: ofFirst.slice(1, 3) });
    const oldest = await ok(RUN_PAGE, { threadId, runId: runIds[0], limit: 2, before: ofFirst[1].id });
    expect(oldest.threadAudits).toEqual({ truncated: false, items: ofFirst.slice(0, 1) });
  });

  it('is BAD_USER_INPUT for a run of another thread and an anchor of another run; FORBIDDEN for non-superadmins', async () => {
    const a = await recordThread('a');
    const b = await recordThread('b');
    const codeOf = async (variables: Record<string, unknown>, token = who.owner) =>
      (await t.gql(RUN_PAGE, variables, token)).errors?.[0]?.extensions?.code;
    expect(await codeOf({ threadId: a.threadId, runId: b.runIds[0] })).toBe('BAD_USER_INPUT');
    expect(await codeOf({ threadId: a.threadId, runId: 'not-a-uuid' })).toBe('BAD_USER_INPUT');
    const otherRun = await ok(RUN_PAGE, { threadId: a.threadId, runId: a.runIds[1], limit: 1 });
    expect(await codeOf({ threadId: a.threadId, runId: a.runIds[0], before: otherRun.threadAudits.items[0].id })).toBe('BAD_USER_INPUT');
    expect(await codeOf({ threadId: a.threadId, runId: a.runIds[0] }, who.worker)).toBe('FORBIDDEN');
  });
});
