import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { claim, createRun, createThread, must } from '../support/lifecycle.js';
import { subscribeSse } from '../support/streams.js';

/**
 * Three teams on one server, each a superadmin owning its agents' threads: no team reads, counts
 * or tells apart another's data, through any read that takes an id, a cursor or a filter.
 */
let t: TestApp;
const TEAMS = ['alpha', 'beta', 'gamma'] as const;
type Team = (typeof TEAMS)[number];
interface TeamData {
  owner: string;
  worker: string;
  threadId: string;
  runId: string;
  modelAuditId: string;
  toolAuditId: string;
  toolCallRowId: string;
  cursor: string;
}
const teams = {} as Record<Team, TeamData>;

/** One run of `team`'s: a model call declaring `<team>_lookup`, which ran and failed, and a tool still running. */
async function teamData(team: Team): Promise<TeamData> {
  const owner = await t.token(`${team}-owner`, 'superadmin');
  const worker = await t.token(`${team}-worker`, 'worker');
  const threadId = await createThread(t, owner, `${team} thread`);
  const runId = await createRun(t, owner, threadId);
  const session = await claim(t, worker, runId);
  const model = await session.declare('m1', [
    { id: `${team}-c1`, name: `${team}_lookup`, args: { q: `${team} secret` } },
    { id: `${team}-c2`, name: `${team}_lookup`, args: { q: `${team} secret 2` } },
  ]);
  const tool = must(await session.toolStarted(`${team}-c1`, `${team}_lookup`, { effectiveInput: { q: `${team} secret` } }));
  must(await session.toolFinished(`${team}-c1`, { content: `${team} quota exceeded`, status: 'error' }));
  must(await session.toolStarted(`${team}-c2`, `${team}_lookup`, { effectiveInput: { q: `${team} secret 2` } }));
  const read = await t.gql(`query($id: ID!) { threadAudits(threadId: $id) { cursor } }`, { id: threadId }, owner);
  return {
    owner, worker, threadId, runId, modelAuditId: model.id, toolAuditId: tool.id, toolCallRowId: tool.toolCall.id,
    cursor: read.data.threadAudits.cursor,
  };
}

beforeAll(async () => {
  t = await startTestApp();
  for (const team of TEAMS) teams[team] = await teamData(team);
});
afterAll(() => t.close());

/** The answer with the id it was asked about written as `<id>`, to compare it with the answer about a made-up id. */
const withoutId = (response: GraphQLResponse, id: string) => JSON.parse(JSON.stringify(response).split(id).join('<id>'));

describe('what one team reads of its own: none of the others', () => {
  it('searchAudits across threads finds no other team\'s audits, by text or by name', async () => {
    const { owner } = teams.beta;
    for (const other of ['alpha', 'gamma'] as const) {
      const byText = await t.gql(`query($text: String) { searchAudits(text: $text) { items { audit { id } } hasMore } }`, { text: other }, owner);
      expect(byText).toEqual({ data: { searchAudits: { items: [], hasMore: false } } });
      const byName = await t.gql(`query($name: String) { searchAudits(name: $name) { items { audit { id } } hasMore } }`, { name: `${other}_lookup` }, owner);
      expect(byName).toEqual({ data: { searchAudits: { items: [], hasMore: false } } });
    }
  });

  it('toolCallLedger across threads holds no other team\'s calls', async () => {
    const { owner } = teams.beta;
    const ledger = await t.gql(`{ toolCallLedger(first: 100) { edges { node { name } } pageInfo { hasNextPage } } }`, {}, owner);
    expect(ledger.errors).toBeUndefined();
    expect(new Set(ledger.data.toolCallLedger.edges.map((edge: { node: { name: string } }) => edge.node.name))).toEqual(new Set(['beta_lookup']));
    const byName = await t.gql(`{ toolCallLedger(name: "alpha_lookup") { edges { node { name } } pageInfo { hasNextPage } } }`, {}, owner);
    expect(byName).toEqual({ data: { toolCallLedger: { edges: [], pageInfo: { hasNextPage: false } } } });
  });

  it('toolActivity counts the team\'s own tools only', async () => {
    const activity = await t.gql(
      `{ toolActivity { runningCount tools { name } running { id } recentFailures { id } buckets { started completed failed otherEnded } } }`,
      {},
      teams.beta.owner,
    );
    expect(activity.errors).toBeUndefined();
    const view = activity.data.toolActivity;
    expect(view.runningCount).toBe(1);
    expect(view.tools).toEqual([{ name: 'beta_lookup' }]);
    expect(view.running).toHaveLength(1);
    expect(view.recentFailures).toEqual([{ id: teams.beta.toolAuditId }]);
    const sum = (key: string) => view.buckets.reduce((total: number, bucket: Record<string, number>) => total + bucket[key]!, 0);
    expect(['started', 'completed', 'failed', 'otherEnded'].map(sum)).toEqual([2, 0, 1, 0]);
  });
});

describe('/metrics', () => {
  it('names no tool, thread, run or principal of any team', async () => {
    const url = await t.app.start(0);
    const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
    expect(text).toContain('agent_audit_mutations_total');
    for (const team of TEAMS) {
      const { threadId, runId } = teams[team];
      for (const named of [team, threadId, runId]) expect(text, named).not.toContain(named);
    }
  });
});

describe('ids of another team\'s are answered as ids that do not exist', () => {
  // Each read, the id it is asked about, and what it answers an id that names nothing: an error code, or a page (undefined).
  const cases: [string, string, (d: TeamData) => string, (own: TeamData, id: string) => Record<string, unknown>, string | undefined][] = [
    ['audit(id)', `query($id: ID!) { audit(id: $id) { id } }`, (d) => d.toolAuditId, (_own, id) => ({ id }), 'NOT_FOUND'],
    ['threadAudits(threadId)', `query($id: ID!) { threadAudits(threadId: $id) { truncated } }`, (d) => d.threadId, (_own, id) => ({ id }), 'NOT_FOUND'],
    ['threadAudits(before)', `query($t: ID!, $id: ID) { threadAudits(threadId: $t, before: $id) { truncated } }`, (d) => d.toolAuditId, (own, id) => ({ t: own.threadId, id }), 'BAD_USER_INPUT'],
    ['threadAudits(runId)', `query($t: ID!, $id: ID) { threadAudits(threadId: $t, runId: $id) { truncated } }`, (d) => d.runId, (own, id) => ({ t: own.threadId, id }), 'BAD_USER_INPUT'],
    ['searchAudits(threadId)', `query($id: ID) { searchAudits(threadId: $id, text: "lookup") { hasMore } }`, (d) => d.threadId, (_own, id) => ({ id }), 'NOT_FOUND'],
    ['searchAudits(after)', `query($id: ID) { searchAudits(after: $id, text: "lookup") { hasMore items { audit { id } } } }`, (d) => d.toolAuditId, (_own, id) => ({ id }), undefined],
    ['searchAudits(after), no text', `query($id: ID) { searchAudits(after: $id) { hasMore items { audit { id } } } }`, (d) => d.toolAuditId, (_own, id) => ({ id }), undefined],
    ['toolCallLedger(threadId)', `query($id: ID) { toolCallLedger(threadId: $id) { pageInfo { hasNextPage } } }`, (d) => d.threadId, (_own, id) => ({ id }), 'NOT_FOUND'],
    ['toolCallLedger(after)', `query($id: String) { toolCallLedger(after: $id) { pageInfo { hasNextPage } edges { node { name } } } }`, (d) => d.toolCallRowId, (_own, id) => ({ id }), undefined],
  ];
  it.each(cases)('%s', async (_name, query, idOf, variables, code) => {
    const own = teams.beta;
    // Of the team before and of the team after, so that a page below the id holds none or all of the team's.
    for (const other of [teams.alpha, teams.gamma]) {
      const theirs = idOf(other);
      // The same id with another last digit (a UUIDv7's random tail): it names nothing, at the same place in the order.
      const made = theirs.slice(0, -1) + (theirs.endsWith('0') ? '1' : '0');
      const answered = await t.gql(query, variables(own, theirs), own.owner);
      expect(errorCode(answered), JSON.stringify(answered)).toBe(code);
      expect(withoutId(answered, theirs)).toEqual(withoutId(await t.gql(query, variables(own, made), own.owner), made));
    }
  });

  it.each([
    ['threadChanges(threadId)', `subscription($id: ID!) { threadChanges(threadId: $id) { cursor } }`, (d: TeamData) => d.threadId, 'NOT_FOUND'],
    ['auditChanged(threadId)', `subscription($id: ID!) { auditChanged(threadId: $id) { id } }`, (d: TeamData) => d.threadId, 'NOT_FOUND'],
    ['threadChanges(runId)', `subscription($t: ID!, $id: ID) { threadChanges(threadId: $t, runId: $id) { cursor } }`, (d: TeamData) => d.runId, 'BAD_USER_INPUT'],
    ['toolStatusChanged(runId)', `subscription($t: ID!, $id: ID) { toolStatusChanged(threadId: $t, runId: $id) { id } }`, (d: TeamData) => d.runId, 'BAD_USER_INPUT'],
  ])('subscription %s', async (_name, query, idOf, code) => {
    const own = teams.beta;
    const theirs = idOf(teams.alpha);
    const made = theirs.slice(0, -1) + (theirs.endsWith('0') ? '1' : '0');
    const first = async (id: string) => (await (await subscribeSse(t.app, query, { t: own.threadId, id }, own.owner)).take(1))[0]!;
    const answered = await first(theirs);
    expect(errorCode(answered)).toBe(code);
    expect(withoutId(answered, theirs)).toEqual(withoutId(await first(made), made));
  });

  it('threadChanges after a cursor of another team\'s thread: as a cursor of a thread that does not exist', async () => {
    const own = teams.beta;
    const query = `subscription($t: ID!, $after: String) { threadChanges(threadId: $t, after: $after) { cursor } }`;
    const theirs = teams.alpha.cursor;
    // The same cursor, naming a thread that does not exist.
    const [named, counter] = theirs.split('.');
    const made = `${Buffer.from(Buffer.from(named!, 'base64url').toString().replace(teams.alpha.threadId, randomUUID())).toString('base64url')}.${counter}`;
    const first = async (after: string) => (await (await subscribeSse(t.app, query, { t: own.threadId, after }, own.owner)).take(1))[0]!;
    const [a, b] = [await first(theirs), await first(made)];
    expect(errorCode(a)).toBe('BAD_USER_INPUT');
    expect(withoutId(a, theirs)).toEqual(withoutId(b, made));
  });
});

/**
 * What the contract's roles let one team reach of another's, where the teams share one server
 * (docs/operations.md, "Several teams on one server"): the isolation is the audit data's; the rest
 * follows roles, not teams.
 */
describe("what the contract's roles reach across teams", () => {
  it("a team's superadmin (or admin) reads another team's thread, its runs' tool calls with their inputs and outputs, and may delete it", async () => {
    const theirs = teams.alpha;
    for (const reader of [teams.beta.owner, await t.token('beta-admin', 'admin')]) {
      const read = await t.gql(
        `query($t: ID!, $r: ID!) { thread(id: $t) { title ownerId } run(id: $r) { leaseOwner toolCalls { name effectiveInput output } } }`,
        { t: theirs.threadId, r: theirs.runId },
        reader,
      );
      expect(read.errors).toBeUndefined();
      expect(read.data.thread).toEqual({ title: 'alpha thread', ownerId: 'alpha-owner' });
      expect(read.data.run.leaseOwner).toBe('alpha-worker');
      expect(read.data.run.toolCalls).toContainEqual({ name: 'alpha_lookup', effectiveInput: { q: 'alpha secret' }, output: 'alpha quota exceeded' });
    }
    const spare = await createThread(t, theirs.owner, 'alpha spare');
    const deleted = await t.gql(`mutation($id: ID!) { deleteThread(id: $id) { threadId } }`, { id: spare }, teams.beta.owner);
    expect(deleted).toEqual({ data: { deleteThread: { threadId: spare } } });
  });

  it("a team's user is FORBIDDEN another team's thread and run, and NOT_FOUND an id that names none: the answer tells that it exists", async () => {
    const user = await t.token('beta-user', 'user');
    for (const [query, id] of [
      [`query($id: ID!) { thread(id: $id) { id } }`, teams.alpha.threadId],
      [`query($id: ID!) { run(id: $id) { id } }`, teams.alpha.runId],
    ] as const) {
      expect(errorCode(await t.gql(query, { id }, user))).toBe('FORBIDDEN');
      expect(errorCode(await t.gql(query, { id: randomUUID() }, user))).toBe('NOT_FOUND');
    }
  });

  it("a team's worker claims another team's queued run, given its id", async () => {
    const queued = await createRun(t, teams.alpha.owner, teams.alpha.threadId);
    const claimed = await claim(t, teams.beta.worker, queued);
    expect(claimed.lease.runId).toBe(queued);
    must(await claimed.finish('CANCELLED'));
  });
});
