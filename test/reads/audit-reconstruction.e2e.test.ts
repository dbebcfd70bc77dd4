import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, claim, clockAt, createRun, createThread, must, type WorkerSession } from '../support/lifecycle.js';
import { counterOf, payloads, subscribeWs, type Stream } from '../support/streams.js';

// An auditor reconstructing what agents did from the read API alone, while they keep writing:
// the timeline paged back with `before`, continued by `threadChanges` from the head page's
// cursor, cross-checked with the tool-call ledger, searchAudits, toolCallStats and toolActivity.
// Every answer must agree with the others and with what the writers were told was committed.

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp({ WS_INIT_TIMEOUT_MS: '30000' });
  url = await t.app.start(0);
});
afterAll(() => t.close());

const PAGE = `query($threadId: ID!, $limit: Int, $before: ID) {
  threadAudits(threadId: $threadId, limit: $limit, before: $before) {
    cursor truncated
    items { __typename id runId status sequence durationMs ... on ToolAudit { toolCallId name toolCall { id } } ... on ModelAudit { toolCalls { id toolCallId name status } } }
  }
}`;
const CHANGES = `subscription($threadId: ID!, $after: String) {
  threadChanges(threadId: $threadId, after: $after) { cursor audit { id status } run { id status } }
}`;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Item = { __typename: string; id: string; runId: string; status: string; durationMs: number | null; toolCallId?: string; name?: string; toolCall?: { id: string }; toolCalls?: { id: string; toolCallId: string; name: string; status: string }[] };

async function gql(query: string, variables: Record<string, unknown>, token: string) {
  const response = await t.gql(query, variables, token);
  if (response.errors?.length) throw new Error(JSON.stringify(response.errors));
  return response.data;
}

/** The head page (with its cursor), then every page back to the oldest audit. */
async function pageBack(token: string, threadId: string, limit: number) {
  const head = (await gql(PAGE, { threadId, limit }, token)).threadAudits;
  const pages: Item[][] = [head.items];
  let { truncated } = head;
  while (truncated) {
    const page = (await gql(PAGE, { threadId, limit, before: pages[0]![0]!.id }, token)).threadAudits;
    pages.unshift(page.items);
    truncated = page.truncated;
  }
  return { cursor: head.cursor as string, items: pages.flat() };
}

/** One agent's run: model calls declaring tools, run and ended in every way; ends the run as `ending`. */
async function agent(session: WorkerSession, tag: string, rounds: number, ending: 'COMPLETED' | 'FAILED' | 'INTERRUPTED') {
  for (let round = 0; round < rounds; round++) {
    const tools = [0, 1, 2].map((i) => ({ id: `${tag}-${round}-${i}`, name: `tool-${i}` }));
    await session.declare(`${tag}-model-${round}`, tools);
    // Durations on one clock, of many sizes: the dashboard's percentiles are checked against them.
    const clock = `${tag}-clock`;
    for (const tool of tools) must(await session.toolStarted(tool.id, tool.name, { clock: clockAt(0, clock) }));
    must(await session.toolFinished(tools[0]!.id, { content: 'ok' }, { clock: clockAt(7 + 13 * round * (tag.length % 5), clock) }));
    must(await session.toolFinished(tools[1]!.id, { content: 'bad', status: 'error' }, { clock: clockAt(300 + 977 * round, clock) }));
    if (round % 2 === 0) must(await session.toolError(tools[2]!.id, { message: 'interrupt' }, { clock: clockAt(41 * round, clock) }));
  }
  must(await session.finish(ending));
}

describe(`an auditor's reconstruction while agents write (${backendName})`, () => {
  it('timeline pages, threadChanges from the head cursor, ledger, search, stats and activity agree', async () => {
    const { owner, worker } = await actors(t);
    const threadId = await createThread(t, owner);
    let writing = true;

    // Writers: two independent runs and a resume chain of three runs, each continuing the last.
    const independent = [0, 1].map(async (n) => {
      const runId = await createRun(t, owner, threadId);
      await agent(await claim(t, worker, runId), `solo${n}`, 4, n === 0 ? 'COMPLETED' : 'FAILED');
    });
    const chainRuns: string[] = [];
    const chain = (async () => {
      let previous: string | undefined;
      for (let link = 0; link < 3; link++) {
        const runId = await createRun(t, owner, threadId, previous);
        chainRuns.push(runId);
        const session = await claim(t, worker, runId);
        if (previous) {
          // The resume runs again the call its predecessor left open.
          must(await session.toolStarted(`chain${link - 1}-0-2`, 'tool-2'));
          must(await session.toolFinished(`chain${link - 1}-0-2`, { content: `rerun ${link}` }));
        }
        await agent(session, `chain${link}`, 2, link < 2 ? 'INTERRUPTED' : 'COMPLETED');
        previous = runId;
      }
    })();
    const writers = Promise.all([...independent, chain]).finally(() => (writing = false));

    // A dashboard read while they write: each view is one consistent read, its parts agree.
    const views = (async () => {
      let count = 0;
      while (writing) {
        const view = (await gql(
          `{ toolActivity { runningCount running(first: 100) { id status } tools { name running completed failed otherEnded } buckets { started completed failed otherEnded } } }`,
          {},
          owner,
        )).toolActivity;
        const sum = (rows: any[], key: string) => rows.reduce((total, row) => total + row[key], 0);
        expect(view.running.length, 'running listed').toBe(Math.min(100, view.runningCount));
        expect(view.running.every((audit: any) => audit.status === 'RUNNING'), 'listed audits run').toBe(true);
        expect(sum(view.tools, 'running'), 'tools running').toBe(view.runningCount);
        for (const key of ['completed', 'failed', 'otherEnded']) expect(sum(view.buckets, key), `buckets ${key}`).toBe(sum(view.tools, key));
        count++;
        await pause(100);
      }
      return count;
    })();

    // The auditor: reconstructions started at moments while the agents write.
    const reconstructions: { pages: Item[]; stream: Stream; cursor: string }[] = [];
    while (writing && reconstructions.length < 8) {
      const { cursor, items } = await pageBack(owner, threadId, 5);
      const stream = subscribeWs(url, CHANGES, { threadId, after: cursor }, owner);
      reconstructions.push({ pages: items, stream, cursor });
      await pause(100);
    }
    await writers;
    expect(await views).toBeGreaterThan(0);

    const final = await pageBack(owner, threadId, 500);
    const finalIds = final.items.map((item) => item.id);
    expect(new Set(finalIds).size).toBe(finalIds.length);
    const finalCounter = counterOf(final.cursor);

    for (const [i, { pages, stream, cursor }] of reconstructions.entries()) {
      const ids = pages.map((item) => item.id);
      expect(new Set(ids).size, `reconstruction ${i}: no audit twice across pages`).toBe(ids.length);
      expect(finalIds, `reconstruction ${i}: every paged audit exists`).toEqual(expect.arrayContaining(ids));
      const results = await stream.until(
        (all) => all.some((result) => result.data && counterOf(result.data.threadChanges.cursor) >= finalCounter) || counterOf(cursor) === finalCounter,
        'the final cursor',
        30_000,
      );
      await stream.close();
      const changes = payloads(results, 'threadChanges') as { cursor: string; audit: { id: string; status: string } | null }[];
      const counters = changes.map((change) => counterOf(change.cursor));
      expect(counters.every((counter, k) => counter > (k === 0 ? counterOf(cursor) : counters[k - 1]!)), `reconstruction ${i}: cursors increase past the head's`).toBe(true);
      // Applied by id, the snapshot and the changes after its cursor are the committed state.
      const view = new Map(pages.map((item) => [item.id, item.status]));
      for (const change of changes) if (change.audit) view.set(change.audit.id, change.audit.status);
      expect(view, `reconstruction ${i}: snapshot + changes = the final state`).toEqual(new Map(final.items.map((item) => [item.id, item.status])));
    }
    expect(reconstructions.length).toBeGreaterThan(0);

    // The runs: the resume chain links back run by run; each run's summary counts its audits listed.
    const runs = (await gql(
      `query($threadId: ID!) { thread(id: $threadId) { runs(first: 500) { id resumedFrom { id } auditSummary { audits toolCalls toolsFailed toolsInterrupted running } } } }`,
      { threadId },
      owner,
    )).thread.runs as { id: string; resumedFrom: { id: string } | null; auditSummary: Record<string, number> }[];
    expect(chainRuns.map((id) => runs.find((run) => run.id === id)!.resumedFrom?.id ?? null)).toEqual([null, chainRuns[0], chainRuns[1]]);
    for (const run of runs) {
      const listed = final.items.filter((item) => item.runId === run.id);
      const tools = listed.filter((item) => item.__typename === 'ToolAudit');
      expect(run.auditSummary, run.id).toEqual({
        audits: listed.length,
        toolCalls: tools.length,
        toolsFailed: tools.filter((item) => item.status === 'FAILED').length,
        toolsInterrupted: tools.filter((item) => item.status === 'INTERRUPTED').length,
        running: listed.filter((item) => item.status === 'RUNNING').length,
      });
    }
    expect(runs.map((run) => run.id).sort()).toEqual([...new Set(final.items.map((item) => item.runId))].sort());

    // The ToolCall projection: from the model audits' toolCalls in the timeline.
    const calls = final.items.flatMap((item) => item.toolCalls ?? []);
    const expectedStats = new Map<string, number>();
    for (const call of calls) expectedStats.set(`${call.name}/${call.status}`, (expectedStats.get(`${call.name}/${call.status}`) ?? 0) + 1);
    const stats = (await gql(`query($threadId: ID!) { toolCallStats(threadId: $threadId) { name status count } }`, { threadId }, owner)).toolCallStats as {
      name: string; status: string; count: number;
    }[];
    expect(new Map(stats.map((stat) => [`${stat.name}/${stat.status}`, stat.count]))).toEqual(expectedStats);

    // The ledger, paged: one entry per declared call; its latest execution is the timeline's last audit bound to it.
    const ledger: any[] = [];
    for (let after: string | null = null; ;) {
      const page: any = (await gql(
        `query($threadId: ID, $after: String) { toolCallLedger(threadId: $threadId, first: 7, after: $after) {
          edges { cursor node { id toolCallId status auditId executedInRunId } } pageInfo { hasNextPage endCursor } } }`,
        { threadId, after },
        owner,
      )).toolCallLedger;
      ledger.push(...page.edges.map((edge: any) => edge.node));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(ledger.map((entry) => entry.id).sort()).toEqual(calls.map((call) => call.id).sort());
    const toolAudits = final.items.filter((item) => item.__typename === 'ToolAudit');
    for (const entry of ledger) {
      const executions = toolAudits.filter((audit) => audit.toolCall!.id === entry.id);
      const latest = executions.at(-1);
      expect({ auditId: entry.auditId, run: entry.executedInRunId, status: entry.status }, entry.toolCallId).toEqual({
        auditId: latest?.id ?? null,
        run: latest?.runId ?? null,
        status: latest?.status ?? 'PENDING',
      });
    }

    // searchAudits by name, paged: exactly the timeline's audits of that name.
    for (const name of ['tool-0', 'tool-2']) {
      const hits: string[] = [];
      for (let after: string | null = null; ;) {
        const page: any = (await gql(
          `query($threadId: ID, $name: String, $after: ID) { searchAudits(threadId: $threadId, name: $name, first: 4, after: $after) { hasMore items { audit { id } } } }`,
          { threadId, name, after },
          owner,
        )).searchAudits;
        hits.push(...page.items.map((hit: any) => hit.audit.id));
        if (!page.hasMore) break;
        after = hits.at(-1)!;
      }
      expect(new Set(hits).size, name).toBe(hits.length);
      expect([...hits].sort(), name).toEqual(toolAudits.filter((audit) => audit.name === name).map((audit) => audit.id).sort());
    }

    // toolActivity: nothing runs any more; what ended, per tool and status, is what the timeline lists.
    const activity = (await gql(`{ toolActivity { runningCount tools { name running completed failed otherEnded p50DurationMs p95DurationMs maxDurationMs } } }`, {}, owner)).toolActivity;
    expect(activity.runningCount).toBe(0);
    for (const stat of activity.tools) {
      const durations = toolAudits.filter((audit) => audit.name === stat.name && audit.durationMs != null).map((audit) => audit.durationMs!).sort((a, b) => a - b);
      const rank = (p: number) => durations[Math.ceil(p * durations.length) - 1]!;
      expect(stat.maxDurationMs, stat.name).toBe(durations.at(-1) ?? null);
      for (const [p, value] of [[0.5, stat.p50DurationMs], [0.95, stat.p95DurationMs]] as const) {
        expect(Math.abs(value - rank(p)), `${stat.name} p${p * 100}: ${value} for ${rank(p)}`).toBeLessThanOrEqual(0.04 * rank(p));
      }
      delete stat.p50DurationMs;
      delete stat.p95DurationMs;
      delete stat.maxDurationMs;
    }
    const byName = new Map<string, { name: string; running: number; completed: number; failed: number; otherEnded: number }>();
    for (const audit of toolAudits) {
      const stat = byName.get(audit.name!) ?? { name: audit.name!, running: 0, completed: 0, failed: 0, otherEnded: 0 };
      if (audit.status === 'COMPLETED') stat.completed++;
      else if (audit.status === 'FAILED') stat.failed++;
      else if (audit.status === 'RUNNING') stat.running++;
      else stat.otherEnded++;
      byName.set(audit.name!, stat);
    }
    expect([...activity.tools].sort((a: any, b: any) => a.name.localeCompare(b.name))).toEqual([...byName.values()].sort((a, b) => a.name.localeCompare(b.name)));
  }, 180_000);
});
