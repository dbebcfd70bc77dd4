import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { THREAD_AUDITS, actors, claim, clockAt, createRun, createThread, expireLeases, must, type Actors, type WorkerSession } from '../support/lifecycle.js';
import { eventually } from '../support/streams.js';
import { callsOf, failureRateOf, readOwnersToolActivity } from '../../src/domain/tool-activity.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

export const TOOL_ACTIVITY = `query($windowSeconds: Int, $name: String, $first: Int) {
  toolActivity(windowSeconds: $windowSeconds, name: $name) {
    at since runningCount
    running(first: $first) { id name status run { id } }
    recentFailures(first: $first) { id name status error }
    tools { name running completed failed otherEnded calls failureRate p50DurationMs p95DurationMs maxDurationMs }
    buckets { start started completed failed otherEnded }
  }
}`;

const activity = async (token: string, variables: Record<string, unknown> = {}) => {
  const response = await t.gql(TOOL_ACTIVITY, { first: 100, ...variables }, token);
  expect(response.errors).toBeUndefined();
  return response.data.toolActivity;
};

/** A small deterministic generator: the same histories on every run and backend. */
function random(seed: number) {
  let state = seed;
  return (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return Math.floor((state / 2 ** 31) * n);
  };
}

const TOOLS = ['search', 'fetch', 'calc'];
type ToolOutcome = 'complete' | 'fail' | 'bare' | 'open';
type Verdict = 'none' | 'COMPLETED' | 'FAILED' | 'INTERRUPTED' | 'cancel' | 'expire';

/** One run of the owner's thread: each tool call started, then its outcome, then the run's verdict. */
async function history(who: Actors, threadId: string, pick: (n: number) => number, expiring: string[], index: number) {
  const runId = await createRun(t, who.owner, threadId);
  const session: WorkerSession = await claim(t, who.worker, runId);
  const calls = Array.from({ length: 1 + pick(4) }, (_, i) => ({ id: `c${i}`, name: TOOLS[pick(TOOLS.length)]! }));
  await session.declare('m1', calls);
  for (const call of calls) {
    must(await session.toolStarted(call.id, call.name, { clock: clockAt(0) }));
    const outcome = (['complete', 'fail', 'bare', 'open'] as ToolOutcome[])[pick(4)]!;
    const end = { clock: clockAt(10 + pick(1000)) };
    if (outcome === 'complete') must(await session.toolFinished(call.id, { content: 'ok', status: 'success' }, end));
    if (outcome === 'fail') must(await session.toolFinished(call.id, { content: 'boom\nsecond line', status: 'error' }, end));
    if (outcome === 'bare') must(await session.toolError(call.id, { message: 'bare error' }, end));
  }
  // Every verdict in turn; the outcomes of the calls are random.
  const verdict = (['none', 'COMPLETED', 'FAILED', 'INTERRUPTED', 'cancel', 'expire'] as Verdict[])[index % 6]!;
  if (verdict === 'cancel') must(await t.gql(`mutation($id: ID!) { result: cancelRun(runId: $id) { id } }`, { id: runId }, who.owner));
  else if (verdict === 'expire') expiring.push(runId);
  else if (verdict !== 'none') must(await session.finish(verdict));
}

/**
 * The recount: every tool audit of the owner's threads, as threadAudits shows it, with each tool's
 * calls (all of them) and failure rate (failed over ended; null with none ended).
 */
async function recount(token: string, threadIds: string[]) {
  const tools = new Map<string, { running: number; completed: number; failed: number; otherEnded: number; calls?: number; failureRate?: number | null }>();
  for (const threadId of threadIds) {
    const { items } = (await t.gql(THREAD_AUDITS, { threadId, limit: 500 }, token)).data.threadAudits;
    for (const audit of items.filter((item: { __typename: string }) => item.__typename === 'ToolAudit')) {
      const stat = tools.get(audit.name) ?? { running: 0, completed: 0, failed: 0, otherEnded: 0 };
      const key = audit.status === 'RUNNING' ? 'running' : audit.status === 'COMPLETED' ? 'completed' : audit.status === 'FAILED' ? 'failed' : 'otherEnded';
      stat[key]++;
      tools.set(audit.name, stat);
    }
  }
  for (const stat of tools.values()) {
    const ended = stat.completed + stat.failed + stat.otherEnded;
    Object.assign(stat, { calls: stat.running + ended, failureRate: ended ? stat.failed / ended : null });
  }
  return tools;
}

const sum = (items: Record<string, unknown>[], key: string) => items.reduce((total: number, item) => total + (item[key] as number), 0);

describe(`toolActivity (${backendName})`, () => {
  it('counts exactly what a recount of random lifecycle histories finds, across threads, without deleted threads or another owner', async () => {
    const who = await actors(t);
    const stranger = await actors(t);
    const pick = random(40);
    const threads = [await createThread(t, who.owner), await createThread(t, who.owner), await createThread(t, who.owner)];
    const doomed = await createThread(t, who.owner);
    const strangers = await createThread(t, stranger.owner);
    const expiring: string[] = [];
    for (let i = 0; i < 12; i++) await history(who, threads[i % threads.length]!, pick, expiring, i);
    for (let i = 0; i < 3; i++) await history(who, doomed, pick, expiring, i);
    for (let i = 0; i < 3; i++) await history(stranger, strangers, pick, expiring, i);
    // Lease expiry: the sweeper ends the runs (every 200 ms here) and abandons their open audits.
    await expireLeases(t.app.db.driver, expiring);
    await eventually(
      async () => (await t.app.db.driver.query<{ open: number }>(`SELECT count(*)::int AS open FROM run WHERE id = ANY($1::uuid[]) AND status = 'RUNNING'`, [expiring]))[0]!.open,
      (open) => open === 0,
      { what: 'the sweeper ending the expired runs' },
    );
    must(await t.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: doomed }, who.owner));

    const view = await activity(who.owner);
    const expected = await recount(who.owner, threads);
    const byName = Object.fromEntries(
      view.tools.map(({ name, running, completed, failed, otherEnded, calls, failureRate }: Record<string, number>) => [name, { running, completed, failed, otherEnded, calls, failureRate }]),
    );
    expect(byName).toEqual(Object.fromEntries(expected));
    const all = [...expected.values()];
    // The histories hold every kind of outcome, so the comparison means something.
    for (const key of ['running', 'completed', 'failed', 'otherEnded']) expect(sum(all, key), key).toBeGreaterThan(0);
    expect(view.runningCount).toBe(sum(all, 'running'));
    expect(view.running).toHaveLength(Math.min(100, sum(all, 'running')));
    expect(view.recentFailures).toHaveLength(Math.min(100, sum(all, 'failed')));
    expect(view.recentFailures.every((audit: { status: string }) => audit.status === 'FAILED')).toBe(true);
    // Some rates are neither 0 nor 1, so the comparison means something.
    expect(all.some(({ failureRate }) => failureRate && failureRate < 1)).toBe(true);
    // The most audits first.
    const totals = view.tools.map((tool: Record<string, number>) => tool.calls);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
    // Everything started and ended within the hour: the buckets hold each start and each end once.
    expect(view.buckets).toHaveLength(120);
    expect(sum(view.buckets, 'started')).toBe(sum(all, 'running') + sum(all, 'completed') + sum(all, 'failed') + sum(all, 'otherEnded'));
    for (const key of ['completed', 'failed', 'otherEnded']) expect(sum(view.buckets, key)).toBe(sum(all, key));
    expect(new Date(view.at).getTime() - new Date(view.since).getTime()).toBe(3600_000);
    expect(view.buckets[0].start).toBe(view.since);

    // The stranger's view counts only the stranger's audits.
    const theirs = await activity(stranger.owner);
    expect(Object.fromEntries(theirs.tools.map(({ name, running, completed, failed, otherEnded, calls, failureRate }: Record<string, number>) => [name, { running, completed, failed, otherEnded, calls, failureRate }]))).toEqual(
      Object.fromEntries(await recount(stranger.owner, [strangers])),
    );

    // `name` keeps one tool.
    const search = await activity(who.owner, { name: 'search' });
    expect(search.tools.map((tool: { name: string }) => tool.name)).toEqual(expected.has('search') ? ['search'] : []);
    expect(search.runningCount).toBe(expected.get('search')?.running ?? 0);
  });

  it('counts what ended within the window only, each in the bucket of its end', async () => {
    const { ownerSub, owner, session } = await (async () => {
      const who = await actors(t);
      const threadId = await createThread(t, who.owner);
      const runId = await createRun(t, who.owner, threadId);
      return { ...who, session: await claim(t, who.worker, runId) };
    })();
    await session.declare('m1', [{ id: 'old', name: 'edge' }, { id: 'mid', name: 'edge' }, { id: 'new', name: 'edge' }]);
    for (const id of ['old', 'mid', 'new']) {
      must(await session.toolStarted(id, 'edge'));
      must(await session.toolFinished(id, { content: 'ok', status: 'success' }));
    }
    // The database's past, as the rows would be had they ended then: two hours, 30 minutes and now.
    const ago = async (id: string, seconds: number) =>
      t.app.db.driver.query(
        `UPDATE message SET created_at = now() - make_interval(secs => $2 + 1), changed_at = now() - make_interval(secs => $2)
         WHERE owner_id = $1 AND operation_id = $3 AND message_type = 'tool_audit'`,
        [ownerSub, seconds, id],
      );
    await ago('old', 7200);
    await ago('mid', 1800);

    const hour = await activity(owner);
    expect(hour.tools).toEqual([expect.objectContaining({ name: 'edge', completed: 2 })]);
    // 30 minutes into a one-hour window of 120 buckets of 30 s: the 60th bucket (± the read's own time).
    const ends = hour.buckets.flatMap((bucket: { completed: number }, index: number) => Array(bucket.completed).fill(index));
    expect(ends).toHaveLength(2);
    expect(ends[0]).toBeGreaterThanOrEqual(59);
    expect(ends[0]).toBeLessThanOrEqual(60);
    expect(ends[1]).toBe(119);
    expect(hour.buckets.reduce((total: number, bucket: { started: number }) => total + bucket.started, 0)).toBe(2);

    const day = await activity(owner, { windowSeconds: 86_400 });
    expect(day.tools).toEqual([expect.objectContaining({ name: 'edge', completed: 3 })]);
    const minute = await activity(owner, { windowSeconds: 60 });
    expect(minute.tools).toEqual([expect.objectContaining({ name: 'edge', completed: 1 })]);
    expect(minute.buckets).toHaveLength(60);
  });

  it('counts each bucket and tool exactly over audits spread across hours, moved after they were counted, some of a deleted thread', async () => {
    const who = await actors(t);
    const threads = [await createThread(t, who.owner), await createThread(t, who.owner), await createThread(t, who.owner)];
    const doomed = threads[2]!;
    // 1,800 audits written at once, then moved into the past (0 to 2 hours, each at half a second
    // past a whole second, started up to 10 minutes before it ended), then some moved again and
    // one thread deleted: what is counted must follow every move.
    for (const threadId of threads) {
      const runId = await createRun(t, who.owner, threadId);
      await t.app.db.driver.query(
        `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, changed_at)
         SELECT gen_random_uuid(), $1, $2, 'TOOL', 'tool_audit', 'spread' || i, (ARRAY['search', 'fetch', 'calc'])[1 + i % 3],
           (ARRAY['RUNNING', 'COMPLETED', 'FAILED', 'COMPLETED', 'CANCELLED', 'ABANDONED', 'COMPLETED'])[1 + i % 7]::"AuditStatus", now()
         FROM generate_series(1, 600) AS i`,
        [threadId, runId],
      );
    }
    const move = (where: string) =>
      t.app.db.driver.query(
        `WITH moved AS (
           SELECT id, date_trunc('second', now()) - make_interval(secs => 1 + abs(hashtext(operation_id || $2)) % 7200) + interval '500 milliseconds' AS ended
           FROM message WHERE owner_id = $1 AND message_type = 'tool_audit' AND ${where})
         UPDATE message m SET changed_at = CASE WHEN m.status = 'RUNNING' THEN m.changed_at ELSE moved.ended END,
           created_at = moved.ended - make_interval(secs => abs(hashtext(m.operation_id || 'start')) % 600),
           duration_ms = CASE WHEN m.status = 'RUNNING' OR abs(hashtext(m.operation_id)) % 11 = 0 THEN NULL ELSE abs(hashtext(m.operation_id || 'ms')) % 90000 END
         FROM moved WHERE m.id = moved.id`,
        [who.ownerSub, where],
      );
    await move('true');
    await move(`operation_id LIKE '%3'`);
    await t.app.db.driver.query(`UPDATE message SET status = 'COMPLETED', changed_at = now() - interval '1 second' + interval '500 milliseconds' - (now() - date_trunc('second', now()))
      WHERE owner_id = $1 AND status = 'RUNNING' AND operation_id LIKE '%4'`, [who.ownerSub]);
    must(await t.gql(`mutation($id: ID!) { result: deleteThread(id: $id) { threadId } }`, { id: doomed }, who.owner));

    const rows = await t.app.db.driver.query<{ name: string; status: string; durationMs: number | null; createdAt: Date; changedAt: Date | null }>(
      `SELECT m.name, m.status, m.duration_ms AS "durationMs", m.created_at AS "createdAt", m.changed_at AS "changedAt" FROM message m
       WHERE m.owner_id = $1 AND m.message_type = 'tool_audit' AND m.thread_id <> $2`,
      [who.ownerSub, doomed],
    );
    for (const windowSeconds of [3600, 900, 86_400, 60]) {
      const count = Math.min(120, windowSeconds);
      const width = (windowSeconds * 1000) / count;
      // A boundary within 2 ms of an audit's half second could fall either side of it as the view's
      // microseconds are rounded to milliseconds here: read again then.
      let view = await activity(who.owner, { windowSeconds });
      const clear = (since: number) => Array.from({ length: count + 1 }, (_, k) => since + k * width).every((b) => Math.abs((((b % 1000) + 1000) % 1000) - 500) > 2);
      while (!clear(new Date(view.since).getTime())) view = await activity(who.owner, { windowSeconds });
      const since = new Date(view.since).getTime();
      const at = new Date(view.at).getTime();
      const bucket = (time: number) => Math.min(count - 1, Math.floor(((time - since) * count) / (windowSeconds * 1000)));
      const buckets = Array.from({ length: count }, () => ({ started: 0, completed: 0, failed: 0, otherEnded: 0 }));
      const tools = new Map<string, { running: number; completed: number; failed: number; otherEnded: number; max: number | null }>();
      for (const row of rows) {
        const tool = tools.get(row.name) ?? { running: 0, completed: 0, failed: 0, otherEnded: 0, max: null };
        const start = row.createdAt.getTime();
        if (start >= since && start <= at) buckets[bucket(start)]!.started++;
        if (row.status === 'RUNNING') tool.running++;
        else {
          const end = row.changedAt!.getTime();
          if (end < since || end > at) continue;
          const key = row.status === 'COMPLETED' ? 'completed' : row.status === 'FAILED' ? 'failed' : 'otherEnded';
          buckets[bucket(end)]![key]++;
          tool[key]++;
          if (row.durationMs !== null) tool.max = Math.max(tool.max ?? 0, row.durationMs);
        }
        tools.set(row.name, tool);
      }
      const counted = [...tools].filter(([, tool]) => tool.running + tool.completed + tool.failed + tool.otherEnded > 0);
      expect(
        Object.fromEntries(view.tools.map(({ name, running, completed, failed, otherEnded, maxDurationMs }: Record<string, number>) => [name, { running, completed, failed, otherEnded, max: maxDurationMs }])),
        `tools, ${windowSeconds} s`,
      ).toEqual(Object.fromEntries(counted));
      expect(view.buckets.map(({ started, completed, failed, otherEnded }: Record<string, number>) => ({ started, completed, failed, otherEnded })), `buckets, ${windowSeconds} s`).toEqual(buckets);
    }
    // The spread reaches every kind of count, so the comparison means something.
    const day = await activity(who.owner, { windowSeconds: 86_400 });
    for (const key of ['started', 'completed', 'failed', 'otherEnded']) expect(sum(day.buckets, key), key).toBeGreaterThan(20);
    // 1,800 rows written and moved, each window read: a few seconds alone, more beside other suites.
  }, 60_000);

  it('gives p50 and p95 within 5 % of the nearest-rank percentiles and the exact maximum', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    const session = await claim(t, who.worker, runId);
    const pick = random(7);
    const durations = Array.from({ length: 40 }, () => 1 + pick(5000));
    await session.declare('m1', durations.map((_, i) => ({ id: `d${i}`, name: 'timed' })));
    for (const [i, ms] of durations.entries()) {
      must(await session.toolStarted(`d${i}`, 'timed', { clock: clockAt(1000) }));
      must(await session.toolFinished(`d${i}`, { content: 'ok', status: 'success' }, { clock: clockAt(1000 + ms) }));
    }
    const sorted = [...durations].sort((a, b) => a - b);
    const nearestRank = (p: number) => sorted[Math.ceil(p * sorted.length) - 1]!;
    const [stat] = (await activity(who.owner)).tools;
    expect(Math.abs(stat.p50DurationMs - nearestRank(0.5))).toBeLessThanOrEqual(0.05 * nearestRank(0.5));
    expect(Math.abs(stat.p95DurationMs - nearestRank(0.95))).toBeLessThanOrEqual(0.05 * nearestRank(0.95));
    expect(stat.maxDurationMs).toBe(sorted.at(-1));
  });

  it('keeps p50 and p95 within 5 % of nearest-rank over thousands of durations, exact where a bin holds one value', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    // Rows as the lifecycle leaves them, written here by the thousand: a long tail (0 to 90 s, many
    // repeated), a tool of short calls (below 25 ms, where a bin holds one value), and one of
    // durations all alike but one outlier.
    await t.app.db.driver.query(
      `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at)
       SELECT gen_random_uuid(), $1, $2, 'TOOL', 'tool_audit', tool || i, tool,
         (CASE WHEN i % 7 = 0 THEN 'FAILED' ELSE 'COMPLETED' END)::"AuditStatus", duration, now() - interval '10 minutes', now()
       FROM generate_series(1, 3000) AS i
       CROSS JOIN LATERAL (VALUES ('tail', ((i * 7919) % 300) ^ 2), ('short', (i * 31) % 24), ('flat', CASE WHEN i = 1 THEN 60000 ELSE 1234 END)) AS d(tool, duration)`,
      [threadId, runId],
    );
    const exact = await t.app.db.driver.query<{ name: string; p50: number; p95: number; max: number }>(
      `SELECT name, percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50, percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95,
         max(duration_ms) AS max FROM message WHERE run_id = $1 GROUP BY name`,
      [runId],
    );
    const view = await activity(who.owner);
    for (const { name, p50, p95, max } of exact) {
      const stat = view.tools.find((tool: { name: string }) => tool.name === name);
      expect(stat.completed + stat.failed, name).toBe(3000);
      expect(Math.abs(stat.p50DurationMs - p50), `${name} p50 ${stat.p50DurationMs} against ${p50}`).toBeLessThanOrEqual(0.05 * p50);
      expect(Math.abs(stat.p95DurationMs - p95), `${name} p95 ${stat.p95DurationMs} against ${p95}`).toBeLessThanOrEqual(0.05 * p95);
      expect(stat.maxDurationMs, name).toBe(max);
      if (name !== 'tail') expect([stat.p50DurationMs, stat.p95DurationMs], name).toEqual([p50, p95]);
    }
  });

  it('puts the durations either side of a bin edge in their own bins, from 0 ms to the largest a duration can be', async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner);
    const runId = await createRun(t, who.owner, threadId);
    // A bin holds (1.04^(h−1), 1.04^h]: ⌊1.04^h⌋ is the last duration of bin h, one more the first
    // of bin h + 1. Each tool has three of each, so its p50 is the lower and its p95 the upper:
    // both exact only if the two are counted in different bins.
    const edges = [1, 18, 30, 60, 100, 200, 300, 400, 500, 547].map((h) => Math.floor(1.04 ** h));
    const pairs = [...edges.map((edge) => [`edge-${edge}`, edge, edge + 1] as const), ['extremes', 0, 2_147_483_647] as const];
    await t.app.db.driver.query(
      `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at)
       SELECT gen_random_uuid(), $1, $2, 'TOOL', 'tool_audit', p.name || i, p.name, 'COMPLETED', CASE WHEN i <= 3 THEN p.lower ELSE p.upper END,
         now() - interval '1 minute', now()
       FROM jsonb_to_recordset($3::jsonb) AS p(name text, lower int, upper int) CROSS JOIN generate_series(1, 6) AS i`,
      [threadId, runId, JSON.stringify(pairs.map(([name, lower, upper]) => ({ name, lower, upper })))],
    );
    const view = await activity(who.owner);
    for (const [name, lower, upper] of pairs) {
      const stat = view.tools.find((tool: { name: string }) => tool.name === name);
      expect([stat.completed, stat.p50DurationMs, stat.p95DurationMs, stat.maxDurationMs], name).toEqual([6, lower, upper, upper]);
    }
  });

  it("reads several owners' views in one call (the dashboards' feeds), each what the query answers for that owner and window", async () => {
    const owners = await Promise.all(
      [['a-1', 'a-2'], ['b-1']].map(async (names) => {
        const who = await actors(t);
        const session = await claim(t, who.worker, await createRun(t, who.owner, await createThread(t, who.owner)));
        await session.declare('m1', names.map((name, i) => ({ id: `c${i}`, name })));
        for (const [i, name] of names.entries()) {
          must(await session.toolStarted(`c${i}`, name));
          if (i > 0) must(await session.toolFinished(`c${i}`, { content: 'ok', status: 'success' }));
        }
        return who;
      }),
    );
    const [a, b] = owners as [Actors, Actors];
    const reads = [
      { ownerId: a.ownerSub, args: { windowSeconds: 3600, name: null } },
      { ownerId: b.ownerSub, args: { windowSeconds: 3600, name: null } },
      { ownerId: a.ownerSub, args: { windowSeconds: 60, name: 'a-2' } },
    ];
    const views = await readOwnersToolActivity(t.app.db.sql, reads);
    const queried = [await activity(a.owner), await activity(b.owner), await activity(a.owner, { windowSeconds: 60, name: 'a-2' })];
    // The query's rows add each tool's calls and failure rate to what the domain read.
    expect(views.map((view) => view.tools.map((stat) => ({ ...stat, calls: callsOf(stat), failureRate: failureRateOf(stat) })))).toEqual(queried.map((view) => view.tools));
    expect(views.map((view) => [view.runningCount, view.buckets.length])).toEqual(queried.map((view) => [view.runningCount, view.buckets.length]));
    expect(views.map((view) => view.running.map((audit) => audit.id))).toEqual(queried.map((view) => view.running.map((audit: { id: string }) => audit.id)));
    for (const view of views) expect(view.since.getTime()).toBe(view.at.getTime() - (view.buckets.length === 60 ? 60_000 : 3_600_000));
  });

  it('refuses bad bounds with BAD_USER_INPUT', async () => {
    const { owner } = await actors(t);
    for (const windowSeconds of [59, 604_801, 0, -1]) {
      expect(errorCode(await t.gql(TOOL_ACTIVITY, { windowSeconds, first: 1 }, owner))).toBe('BAD_USER_INPUT');
    }
    // An explicit null is no window either: the message says to leave it out for the default.
    const nullWindow = await t.gql(TOOL_ACTIVITY, { windowSeconds: null, first: 1 }, owner);
    expect(errorCode(nullWindow)).toBe('BAD_USER_INPUT');
    expect(nullWindow.errors?.[0]?.message).toMatch(/not null.*leave it out.*3600/);
    for (const first of [0, 101, -5]) expect(errorCode(await t.gql(TOOL_ACTIVITY, { first }, owner))).toBe('BAD_USER_INPUT');
    expect(errorCode(await t.gql(TOOL_ACTIVITY, { name: 'x'.repeat(300), first: 1 }, owner))).toBe('BAD_USER_INPUT');
    expect((await t.gql(TOOL_ACTIVITY, { windowSeconds: 604_800, first: 100 }, owner)).errors).toBeUndefined();
  });

  it('lists the first `first` tools, the most audits first, and counts every tool in toolCount; a `first` out of range is BAD_USER_INPUT', async () => {
    const who = await actors(t);
    const session = await claim(t, who.worker, await createRun(t, who.owner, await createThread(t, who.owner)));
    const calls = ['one', 'two', 'two', 'three', 'three', 'three'].map((name, i) => ({ id: `c${i}`, name }));
    await session.declare('m1', calls);
    for (const call of calls) must(await session.toolStarted(call.id, call.name, { clock: clockAt(0) }));
    const query = `query($first: Int) { result: toolActivity { toolCount tools(first: $first) { name running } all: tools { name } } }`;
    expect(must(await t.gql(query, { first: 2 }, who.owner))).toEqual({
      toolCount: 3,
      tools: [{ name: 'three', running: 3 }, { name: 'two', running: 2 }],
      all: [{ name: 'three' }, { name: 'two' }, { name: 'one' }],
    });
    expect(must(await t.gql(query, { first: 1000 }, who.owner)).tools).toHaveLength(3);
    for (const first of [0, -1, 1001]) {
      const refused = await t.gql(query, { first }, who.owner);
      expect(errorCode(refused)).toBe('BAD_USER_INPUT');
      expect(refused.errors?.[0]?.message).toBe('tools(first) must be between 1 and 1000; leave it out for every tool');
    }
  });

  it('orders `tools` by the column `orderBy` names, either way, ties by name, tools without a value last, then keeps the first `first`', async () => {
    const who = await actors(t);
    const session = await claim(t, who.worker, await createRun(t, who.owner, await createThread(t, who.owner)));
    // [tool, duration in ms, failed]; a duration of null leaves the call running (no duration).
    const calls: [string, number | null, boolean][] = [
      ['b-fetch', 100, false], ['b-fetch', 300, false], ['b-fetch', 20, true], // 3 calls, 1/3 failed, p50 100, max 300
      ['a-search', 200, false], ['a-search', 200, true], // 2 calls, 1/2 failed, p50 200, max 200
      ['c-calc', 50, false], ['c-calc', 400, false], // 2 calls, none failed, p50 50, max 400
      ['d-idle', null, false], // 1 call running: no failure rate, no durations
      ['e-fail', 1000, true], // 1 call, all failed, p50 1000
      ['g-half', 5, false], ['g-half', 5, true], // 2 calls, 1/2 failed (a tie with a-search), p50 5
    ];
    await session.declare('m1', calls.map(([name], i) => ({ id: `c${i}`, name })));
    for (const [i, [name, ms, failed]] of calls.entries()) {
      must(await session.toolStarted(`c${i}`, name, { clock: clockAt(1000) }));
      if (ms !== null) must(await session.toolFinished(`c${i}`, { content: 'x', status: failed ? 'error' : 'success' }, { clock: clockAt(1000 + ms) }));
    }
    const query = `query($first: Int, $orderBy: ToolActivityOrder) { result: toolActivity { toolCount tools(first: $first, orderBy: $orderBy) { name } } }`;
    const names = async (orderBy: unknown, first?: number) => {
      const { tools, toolCount } = must(await t.gql(query, { orderBy, first }, who.owner));
      expect(toolCount).toBe(6);
      return tools.map((tool: { name: string }) => tool.name).join(' ');
    };
    const today = 'b-fetch a-search c-calc g-half d-idle e-fail';
    expect(await names(undefined)).toBe(today);
    expect(await names(null)).toBe(today);
    const expected: [string, string, string][] = [
      ['CALLS', 'DESC', today],
      ['CALLS', 'ASC', 'd-idle e-fail a-search c-calc g-half b-fetch'],
      ['FAILURE_RATE', 'DESC', 'e-fail a-search g-half b-fetch c-calc d-idle'],
      ['FAILURE_RATE', 'ASC', 'c-calc b-fetch a-search g-half e-fail d-idle'],
      ['OTHER_ENDED', 'DESC', 'a-search b-fetch c-calc d-idle e-fail g-half'],
      ['OTHER_ENDED', 'ASC', 'a-search b-fetch c-calc d-idle e-fail g-half'],
      ['P50', 'DESC', 'e-fail a-search b-fetch c-calc g-half d-idle'],
      ['P50', 'ASC', 'g-half c-calc b-fetch a-search e-fail d-idle'],
      ['P95', 'DESC', 'e-fail c-calc b-fetch a-search g-half d-idle'],
      ['P95', 'ASC', 'g-half a-search b-fetch c-calc e-fail d-idle'],
      ['MAX', 'DESC', 'e-fail c-calc b-fetch a-search g-half d-idle'],
      ['MAX', 'ASC', 'g-half a-search b-fetch c-calc e-fail d-idle'],
      ['NAME', 'ASC', 'a-search b-fetch c-calc d-idle e-fail g-half'],
      ['NAME', 'DESC', 'g-half e-fail d-idle c-calc b-fetch a-search'],
    ];
    for (const [field, direction, order] of expected) {
      expect(await names({ field, direction }), `${field} ${direction}`).toBe(order);
      // The first `first` of that order, bounds included.
      expect(await names({ field, direction }, 2), `${field} ${direction}, first 2`).toBe(order.split(' ').slice(0, 2).join(' '));
      expect(await names({ field, direction }, 1000)).toBe(order);
    }
    // Left out, the direction is the column's natural one: the largest values first, names A to Z.
    expect(await names({ field: 'P50' })).toBe('e-fail a-search b-fetch c-calc g-half d-idle');
    expect(await names({ field: 'NAME' })).toBe('a-search b-fetch c-calc d-idle e-fail g-half');
    for (const orderBy of [{ field: 'LATENCY' }, { field: 'P50', direction: 'UP' }, { direction: 'ASC' }, { field: null }, 'P50']) {
      const refused = await t.gql(query, { orderBy }, who.owner);
      expect(errorCode(refused), JSON.stringify(orderBy)).toBe('BAD_USER_INPUT');
      expect(refused.data ?? null).toBeNull();
    }
    // Written into the document, an unknown value makes it invalid, as any unknown enum value does.
    const inline = await t.gql(`{ result: toolActivity { tools(orderBy: { field: P50, direction: SIDEWAYS }) { name } } }`, {}, who.owner);
    expect(errorCode(inline)).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('is for super administrators: every other role is FORBIDDEN, no token UNAUTHENTICATED', async () => {
    for (const role of ['user', 'admin', 'worker'] as const) {
      expect(errorCode(await t.gql(TOOL_ACTIVITY, { first: 1 }, await t.token(`${role}-activity`, role)))).toBe('FORBIDDEN');
    }
    expect(errorCode(await t.gql(TOOL_ACTIVITY, { first: 1 }, null))).toBe('UNAUTHENTICATED');
  });
});
