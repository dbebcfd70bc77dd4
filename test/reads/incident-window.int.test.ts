import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// "Between 14:02 and 14:10 our agents started failing: what ran, what failed, in which threads?"
// searchAudits and toolCallLedger take `since` (inclusive) and `until` (exclusive): the time the
// server recorded an audit's start (a call's declaration), to the millisecond, by the database's
// clock: the time part of the row's UUIDv7 id and the order the pages come in (docs/debug-ui.md,
// "An incident window"). The tests read that time from the ids, as the docs tell an engineer to.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** The millisecond the server recorded a row at: the time part of its id (a UUIDv7). */
const recordedMs = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
const at = (ms: number) => new Date(ms).toISOString();
/** Lets the clock pass a few milliseconds, so that the next row is recorded at a later one. */
const nextMillisecond = async () => {
  const from = Date.now();
  while (Date.now() < from + 3) await new Promise((resolve) => setTimeout(resolve, 1));
};

const SEARCH = `query($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $first: Int, $after: ID, $since: DateTime, $until: DateTime) {
  searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, first: $first, after: $after, since: $since, until: $until) {
    hasMore items { threadId audit { id status startedAt } }
  }
}`;

const LEDGER = `query($threadId: ID, $status: ToolCallLedgerStatus, $first: Int, $after: String, $since: DateTime, $until: DateTime) {
  toolCallLedger(threadId: $threadId, status: $status, first: $first, after: $after, since: $since, until: $until) {
    edges { cursor node { id toolCallId status startedAt } } pageInfo { hasNextPage endCursor }
  }
}`;

async function search(token: string, variables: Record<string, unknown>) {
  const response = await t.gql(SEARCH, variables, token);
  expect(response.errors).toBeUndefined();
  return response.data.searchAudits as { hasMore: boolean; items: { threadId: string; audit: { id: string; status: string; startedAt: string } }[] };
}
const searchIds = async (token: string, variables: Record<string, unknown>) => (await search(token, variables)).items.map((hit) => hit.audit.id);

async function ledger(token: string, variables: Record<string, unknown>) {
  const response = await t.gql(LEDGER, variables, token);
  expect(response.errors).toBeUndefined();
  return response.data.toolCallLedger as { edges: { cursor: string; node: { id: string; toolCallId: string; status: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

/** Every hit of a search (after `variables.after`, if given), `first` at a time, following `after`. */
async function pagedIds(token: string, variables: Record<string, unknown>, first: number) {
  const ids: string[] = [];
  let after = (variables.after as string | undefined) ?? null;
  for (;;) {
    const page = await search(token, { ...variables, first, after });
    ids.push(...page.items.map((hit) => hit.audit.id));
    if (!page.hasMore) return ids;
    after = page.items.at(-1)!.audit.id;
  }
}

/**
 * A thread whose run declares `tools` in one model call, then runs them one by one, each recorded
 * at a later millisecond than the one before; `failing` ends with a controlled error. Returns the
 * tool audits' and the ledger entries' ids, in order.
 */
async function incidentThread(who: Actors, title: string, tools: string[], failing: string[] = []) {
  const threadId = await createThread(t, who.owner, title);
  const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
  await worker.declare('plan', tools.map((id) => ({ id, name: id.replace(/-\d+$/, ''), args: { for: id } })));
  const audits: string[] = [];
  for (const id of tools) {
    await nextMillisecond();
    audits.push(must(await worker.toolStarted(id, id.replace(/-\d+$/, ''), { effectiveInput: { for: id, note: 'kettle billing' } })).id);
    must(await worker.toolFinished(id, failing.includes(id) ? { content: `upstream timeout in ${id}`, status: 'error' } : { content: 'ok', status: 'success' }));
  }
  return { threadId, worker, audits };
}

describe(`an incident window on searchAudits and toolCallLedger (${backendName})`, () => {
  let who: Actors;
  let stranger: Actors;
  /** Five tool audits, recorded one after another: [0] before the window, [1..3] in it, [4] after. */
  let one: Awaited<ReturnType<typeof incidentThread>>;
  let two: Awaited<ReturnType<typeof incidentThread>>;
  let strangers: Awaited<ReturnType<typeof incidentThread>>;

  beforeAll(async () => {
    who = await actors(t);
    stranger = await actors(t);
    one = await incidentThread(who, 'first thread', ['fetch-0', 'charge-1', 'charge-2', 'fetch-3', 'charge-4'], ['charge-1', 'charge-2']);
    two = await incidentThread(who, 'second thread', ['fetch-10', 'charge-11'], ['charge-11']);
    strangers = await incidentThread(stranger, "another superadmin's thread", ['charge-20', 'charge-21'], ['charge-20', 'charge-21']);
  }, 60_000);

  it('the ids carry the time the server recorded each start, one millisecond after another', () => {
    const times = [...one.audits, ...two.audits, ...strangers.audits].map(recordedMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(new Set(times).size).toBe(times.length);
    // The database's clock, as the instance read it: close to this process's own.
    expect(Math.abs(times.at(-1)! - Date.now())).toBeLessThan(60_000);
  });

  it('since is inclusive and until exclusive, to the millisecond, within a thread', async () => {
    const [, a1, , a3, a4] = one.audits.map(recordedMs);
    const within = (since: number, until: number) => searchIds(who.owner, { threadId: one.threadId, since: at(since), until: at(until) });
    expect(await within(a1!, a3!)).toEqual([one.audits[2], one.audits[1]]);
    expect(await within(a1! + 1, a3!)).toEqual([one.audits[2]]);
    expect(await within(a1!, a3! + 1)).toEqual([one.audits[3], one.audits[2], one.audits[1]]);
    // One bound alone.
    expect(await searchIds(who.owner, { threadId: one.threadId, since: at(a4!) })).toEqual([one.audits[4]]);
    expect(await searchIds(who.owner, { threadId: one.threadId, until: at(a1!) })).toEqual([one.audits[0], ...(await modelAuditsOf(one.threadId))]);
    // A bound written with another offset names the same instant.
    const inZone = (ms: number, hours: number) => new Date(ms + hours * 3_600_000).toISOString().replace('Z', `+0${hours}:00`);
    expect(await searchIds(who.owner, { threadId: one.threadId, since: inZone(a1!, 2), until: inZone(a3!, 5) })).toEqual([one.audits[2], one.audits[1]]);
  });

  /** The model audits of a thread (recorded before its tools). */
  async function modelAuditsOf(threadId: string) {
    const page = await t.gql(`query($threadId: ID!) { threadAudits(threadId: $threadId) { items { __typename id } } }`, { threadId }, who.owner);
    return (page.data.threadAudits.items as { __typename: string; id: string }[]).filter((audit) => audit.__typename === 'ModelAudit').map((audit) => audit.id).reverse();
  }

  it('across threads: the window holds the caller\'s audits of every thread, never another superadmin\'s recorded in it', async () => {
    const since = at(recordedMs(one.audits[3]!));
    const until = at(recordedMs(strangers.audits[1]!) + 1);
    const hits = (await search(who.owner, { since, until })).items;
    // The stranger's thread was written inside this window: none of its audits (nor its model call) shows.
    expect(hits.map((hit) => hit.threadId)).not.toContain(strangers.threadId);
    const twoModel = await modelAuditsOf(two.threadId);
    expect(hits.map((hit) => hit.audit.id)).toEqual([two.audits[1], two.audits[0], ...twoModel, one.audits[4], one.audits[3]]);
    // The stranger sees its own, and only its own.
    const theirs = await searchIds(stranger.owner, { since, until, status: 'FAILED' });
    expect(theirs).toEqual([strangers.audits[1], strangers.audits[0]]);
  });

  it('a window with no audits: an empty page, before the first audit and after the last', async () => {
    expect(await search(who.owner, { since: '2001-09-09T01:46:40Z', until: '2001-09-09T01:46:41Z' })).toEqual({ hasMore: false, items: [] });
    expect(await search(who.owner, { since: at(Date.now() + 3_600_000) })).toEqual({ hasMore: false, items: [] });
    expect(await search(who.owner, { until: '1970-01-01T00:00:00Z' })).toEqual({ hasMore: false, items: [] });
    // Before 1970 (an id's time starts there): every audit is after it.
    expect((await search(who.owner, { since: '1969-07-20T20:17:40Z', threadId: one.threadId })).items).toHaveLength(6);
    expect(await search(who.owner, { threadId: two.threadId, since: at(recordedMs(one.audits[1]!)), until: at(recordedMs(one.audits[3]!)) }))
      .toEqual({ hasMore: false, items: [] });
  });

  it('pages through a window with after, one to three hits a page, each hit once, none from outside it', async () => {
    const window = { since: at(recordedMs(one.audits[1]!)), until: at(recordedMs(two.audits[1]!) + 1) };
    const whole = await searchIds(who.owner, { ...window, first: 100 });
    // The first thread's last four tools, then the second thread's model call and its two tools.
    expect(whole).toEqual([two.audits[1], two.audits[0], ...(await modelAuditsOf(two.threadId)), ...one.audits.slice(1).reverse()]);
    for (const first of [1, 2, 3]) expect(await pagedIds(who.owner, window, first), `first: ${first}`).toEqual(whole);
    // A window open at its end, paged while audits are written: they come before the first page, never into the next.
    const since = { since: window.since };
    const before = await searchIds(who.owner, { ...since, first: 100 });
    const page = await search(who.owner, { ...since, first: 2 });
    await incidentThread(who, 'written while paging', ['fetch-30']);
    const rest = await pagedIds(who.owner, { ...since, after: page.items.at(-1)!.audit.id }, 2);
    expect([...page.items.map((hit) => hit.audit.id), ...rest]).toEqual(before);
  });

  it('combines with status, name and text, and with threadId', async () => {
    const window = { since: at(recordedMs(one.audits[2]!)), until: at(recordedMs(two.audits[1]!) + 1) };
    expect(await searchIds(who.owner, { ...window, status: 'FAILED' })).toEqual([two.audits[1], one.audits[2]]);
    expect(await searchIds(who.owner, { ...window, name: 'charge' })).toEqual([two.audits[1], one.audits[4], one.audits[2]]);
    expect(await searchIds(who.owner, { ...window, text: 'upstream timeout' })).toEqual([two.audits[1], one.audits[2]]);
    expect(await searchIds(who.owner, { ...window, text: 'kettle', status: 'COMPLETED', threadId: one.threadId })).toEqual([one.audits[4], one.audits[3]]);
    // Without the window the same criteria reach beyond it.
    expect(await searchIds(who.owner, { status: 'FAILED', threadId: one.threadId })).toEqual([one.audits[2], one.audits[1]]);
  });

  it('an audit interrupted in the window stays in it after its run is resumed later; the resumed execution is recorded when it ran', async () => {
    const threadId = await createThread(t, who.owner, 'interrupted');
    const runId = await createRun(t, who.owner, threadId);
    const first = await claim(t, who.worker, runId);
    await first.declare('plan', [{ id: 'slow', name: 'slow_tool' }]);
    await nextMillisecond();
    const interrupted = must(await first.toolStarted('slow', 'slow_tool')).id as string;
    must(await first.finish('INTERRUPTED'));
    const window = { since: at(recordedMs(interrupted)), until: at(recordedMs(interrupted) + 1), threadId };
    await nextMillisecond();
    const resumed = await claim(t, who.worker, await createRun(t, who.owner, threadId, runId));
    const rerun = must(await resumed.toolStarted('slow', 'slow_tool')).id as string;
    must(await resumed.toolFinished('slow', { content: 'done', status: 'success' }));
    const hits = (await search(who.owner, window)).items;
    expect(hits.map((hit) => [hit.audit.id, hit.audit.status])).toEqual([[interrupted, 'INTERRUPTED']]);
    expect(await searchIds(who.owner, { threadId, since: at(recordedMs(rerun)) })).toEqual([rerun]);
    // The ledger's entry is the call, declared in the window: found there, though its startedAt is now the resume's.
    const declaredAt = recordedMs((await ledger(who.owner, { threadId })).edges[0]!.node.id);
    const calls = await ledger(who.owner, { threadId, since: at(declaredAt), until: at(declaredAt + 1) });
    expect(calls.edges.map((edge) => [edge.node.toolCallId, edge.node.status])).toEqual([['slow', 'COMPLETED']]);
  });

  it('a long call that started before the window and failed inside it is not in the window; since moved back by its length finds it, and toolActivity lists it by its end', async () => {
    const threadId = await createThread(t, who.owner, 'a long call');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    await worker.declare('plan', [{ id: 'long', name: 'long_export' }]);
    const started = must(await worker.toolStarted('long', 'long_export')).id as string;
    // The window opens a millisecond after the start was recorded; the call fails inside it.
    const since = recordedMs(started) + 1;
    await nextMillisecond();
    must(await worker.toolFinished('long', { content: 'disk full', status: 'error' }));
    expect(await searchIds(who.owner, { threadId, since: at(since), status: 'FAILED' })).toEqual([]);
    expect(await searchIds(who.owner, { threadId, since: at(since), kind: 'TOOL' })).toEqual([]);
    // Moved back by the longest call expected (here the call's own length), it is found.
    expect(await searchIds(who.owner, { threadId, since: at(since - 1), status: 'FAILED' })).toEqual([started]);
    // Ends are what toolActivity counts, over a window ending now.
    const activity = await t.gql(`{ toolActivity(name: "long_export", windowSeconds: 600) { recentFailures { id } } }`, {}, who.owner);
    expect(activity.errors).toBeUndefined();
    expect(activity.data.toolActivity.recentFailures).toEqual([{ id: started }]);
  });

  it('toolCallLedger: calls whose declaration was recorded in the window, edges as searchAudits\', paged with endCursor', async () => {
    // Each thread declares its calls in one model call, one after another.
    const declaredIn = async (threadId: string) => (await ledger(who.owner, { threadId })).edges.map((edge) => recordedMs(edge.node.id));
    const [oneFirst, oneLast] = [Math.min(...(await declaredIn(one.threadId))), Math.max(...(await declaredIn(one.threadId)))];
    const [twoFirst, twoLast] = [Math.min(...(await declaredIn(two.threadId))), Math.max(...(await declaredIn(two.threadId)))];
    expect(twoFirst).toBeGreaterThan(oneLast);
    const ids = async (variables: Record<string, unknown>) => (await ledger(who.owner, variables)).edges.map((edge) => edge.node.toolCallId);
    expect(await ids({ since: at(oneFirst), until: at(twoFirst) })).toEqual(['charge-4', 'fetch-3', 'charge-2', 'charge-1', 'fetch-0']);
    expect(await ids({ since: at(oneLast + 1), until: at(twoLast + 1) })).toEqual(['charge-11', 'fetch-10']);
    expect(await ids({ since: at(oneFirst), until: at(twoLast + 1), status: 'FAILED' })).toEqual(['charge-11', 'charge-2', 'charge-1']);
    // A stranger's calls, declared after, never show; nor does anything before the first.
    expect(await ids({ since: at(oneFirst), until: at(recordedMs(strangers.audits[1]!) + 1), status: 'FAILED' })).toEqual(['charge-11', 'charge-2', 'charge-1']);
    expect(await ids({ until: at(oneFirst) })).toEqual([]);
    // Paged one entry at a time.
    const paged: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await ledger(who.owner, { since: at(oneFirst), until: at(twoLast + 1), first: 1, after });
      paged.push(...page.edges.map((edge) => edge.node.toolCallId));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(paged).toEqual(['charge-11', 'fetch-10', 'charge-4', 'fetch-3', 'charge-2', 'charge-1', 'fetch-0']);
  });

  it('other roles are FORBIDDEN with a window as without', async () => {
    const window = { since: at(recordedMs(one.audits[0]!)), until: at(Date.now() + 1000) };
    for (const token of [await t.token(who.ownerSub, 'user'), await t.token('an-admin', 'admin'), who.worker]) {
      expect(errorCode(await t.gql(SEARCH, window, token))).toBe('FORBIDDEN');
      expect(errorCode(await t.gql(LEDGER, window, token))).toBe('FORBIDDEN');
    }
  });

  it('an until not after since, or a time that is none, is BAD_USER_INPUT, saying why', async () => {
    const since = at(recordedMs(one.audits[2]!));
    for (const until of [at(recordedMs(one.audits[1]!)), since]) {
      for (const query of [SEARCH, LEDGER]) {
        const refused = await t.gql(query, { since, until }, who.owner);
        expect(errorCode(refused)).toBe('BAD_USER_INPUT');
        expect(refused.errors![0]!.message).toMatch(/until .* must be later than since/);
        expect(refused.data ?? null).toBeNull();
      }
    }
    for (const time of ['yesterday', '2026-12-06 14:02', '2026-12-06T14:02:00', '2026-02-30T14:02:00Z', '2026-12-06T24:00:00Z', '', 1765029720000]) {
      for (const query of [SEARCH, LEDGER]) {
        for (const variables of [{ since: time }, { until: time }]) {
          const refused = await t.gql(query, variables, who.owner);
          expect(errorCode(refused), JSON.stringify(variables)).toBe('BAD_USER_INPUT');
          expect(refused.errors![0]!.message, JSON.stringify(variables)).toMatch(/DateTime/);
        }
      }
    }
    // Written in the document, too.
    const literal = await t.gql(`{ searchAudits(since: "14:02", until: "14:10") { hasMore } }`, {}, who.owner);
    expect(errorCode(literal)).toBe('BAD_USER_INPUT');
    const ledgerLiteral = await t.gql(`{ toolCallLedger(until: "2026-12-06T14:10:00Z", since: "2026-12-06T14:10:00.001Z") { pageInfo { hasNextPage } } }`, {}, who.owner);
    expect(errorCode(ledgerLiteral)).toBe('BAD_USER_INPUT');
    // Nothing the refusals asked for changed what a search finds.
    expect(await searchIds(who.owner, { threadId: one.threadId, status: 'FAILED' })).toEqual([one.audits[2], one.audits[1]]);
  });
});
