import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_SEARCH_PROBE, AUDIT_SEARCH_TEXT } from '../../src/domain/audit-search.js';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// searchAudits: audits found by name, status and text in their input, output and error, within a
// thread or across the caller's threads, under the audit access rule, through the trigram index.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const SEARCH = `query($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $first: Int, $after: ID) {
  searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, first: $first, after: $after) {
    hasMore
    items { threadId threadTitle audit { __typename id status ... on ToolAudit { name } ... on ModelAudit { model } } }
  }
}`;

async function search(token: string, variables: Record<string, unknown>) {
  const response = await t.gql(SEARCH, variables, token);
  expect(response.errors).toBeUndefined();
  return response.data.searchAudits as { hasMore: boolean; items: { threadId: string; threadTitle: string; audit: any }[] };
}

/** A thread with a paid invoice (amount 120), a failed refund, and a payment still running. */
async function billingThread(who: Actors, title: string) {
  const threadId = await createThread(t, who.owner, title);
  const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
  must(await worker.modelStarted('plan', { model: 'planner-7', input: { messages: [{ role: 'user', content: 'Pay the Kettle Co. invoice' }] } }));
  must(await worker.modelFinished('plan', [
    { id: 'pay', name: 'pay_invoice', args: { amount: 120 } },
    { id: 'refund', name: 'refund', args: { amount: 5 } },
    { id: 'pay-2', name: 'pay_invoice', args: { amount: 300 } },
  ]));
  const paid = must(await worker.toolStarted('pay', 'pay_invoice', { effectiveInput: { amount: 120, payee: 'Kettle Co.' } }));
  must(await worker.toolFinished('pay', { content: 'paid', status: 'success' }));
  const refund = must(await worker.toolStarted('refund', 'refund', { effectiveInput: { amount: 5 } }));
  must(await worker.toolFinished('refund', { content: 'Card issuer declined: 100% of_the amount', status: 'error' }));
  const running = must(await worker.toolStarted('pay-2', 'pay_invoice', { effectiveInput: { amount: 300, payee: 'Teapot Ltd' } }));
  return { threadId, paid: paid.id as string, refund: refund.id as string, running: running.id as string };
}

describe(`searchAudits (${backendName})`, () => {
  let who: Actors;
  let first: Awaited<ReturnType<typeof billingThread>>;
  let second: Awaited<ReturnType<typeof billingThread>>;
  let strangers: Awaited<ReturnType<typeof billingThread>>;

  beforeAll(async () => {
    who = await actors(t);
    first = await billingThread(who, 'first billing');
    second = await billingThread(who, 'second billing');
    strangers = await billingThread(await actors(t), "another superadmin's billing");
  }, 60_000);

  it('finds text in inputs across the threads the caller owns, newest first, with their thread', async () => {
    const { items, hasMore } = await search(who.owner, { text: '"amount": 120' });
    expect(hasMore).toBe(false);
    expect(items.map((hit) => [hit.audit.id, hit.threadId, hit.threadTitle])).toEqual([
      [second.paid, second.threadId, 'second billing'],
      [first.paid, first.threadId, 'first billing'],
    ]);
  });

  it('finds text in outputs and in names, in any case, and a tool still running', async () => {
    const declined = await search(who.owner, { text: 'ISSUER DECLINED' });
    expect(declined.items.map((hit) => hit.audit.id)).toEqual([second.refund, first.refund]);
    const teapot = await search(who.owner, { text: 'teapot', threadId: first.threadId });
    expect(teapot.items).toEqual([
      { threadId: first.threadId, threadTitle: 'first billing', audit: { __typename: 'ToolAudit', id: first.running, status: 'RUNNING', name: 'pay_invoice' } },
    ]);
    const planner = await search(who.owner, { text: 'planner-7' });
    expect(planner.items.map((hit) => hit.audit.__typename)).toEqual(['ModelAudit', 'ModelAudit']);
  });

  it('gives each hit a snippet of its searched text around the match, in its own case; none without text', async () => {
    const SNIPPET = `query($text: String, $name: String) { searchAudits(text: $text, name: $name, first: 5) { items { snippet audit { id } } } }`;
    const declined = await t.gql(SNIPPET, { text: 'ISSUER DECLINED' }, who.owner);
    expect(declined.errors).toBeUndefined();
    const snippets = declined.data.searchAudits.items.map((hit: { snippet: string }) => hit.snippet);
    expect(snippets).toHaveLength(2);
    for (const snippet of snippets) {
      expect(snippet).toMatch(/^….{25}issuer declined.*$/);
      expect(snippet.length).toBeLessThanOrEqual(62);
    }
    // The start of a short text is not cut.
    const planner = await t.gql(SNIPPET, { text: 'planner-7' }, who.owner);
    expect(planner.data.searchAudits.items[0].snippet).toMatch(/^planner-7 \{"messages".*…$/);
    const byName = await t.gql(SNIPPET, { name: 'refund' }, who.owner);
    expect(byName.data.searchAudits.items.map((hit: { snippet: string | null }) => hit.snippet)).toEqual([null, null]);
  });

  it('takes LIKE wildcards in the text literally', async () => {
    expect((await search(who.owner, { text: '100% of_the' })).items.map((hit) => hit.audit.id)).toEqual([second.refund, first.refund]);
    expect((await search(who.owner, { text: '100_' })).items).toEqual([]);
    expect((await search(who.owner, { text: 'the%' })).items).toEqual([]);
  });

  it('finds text as the payload holds it: quotes, backslashes, line breaks and tabs, with a snippet as read', async () => {
    const threadId = await createThread(t, who.owner, 'escaped characters');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    must(await worker.modelStarted('quoting', { model: 'quoter', input: { prompt: 'He said "stop now"' } }));
    // Arguments a model wrote as a JSON string, as OpenAI's API gives them.
    must(await worker.modelFinished('quoting', [{ id: 'path', name: 'read_file', args: '{"path":"C:\\Users\\bob\\report.txt"}' }]));
    const read = must(await worker.toolStarted('path', 'read_file', { effectiveInput: { path: 'C:\\Users\\bob\\report.txt' } }));
    must(await worker.toolFinished('path', { content: 'first line\r\nsecond line\tcolumn', status: 'success' }));
    const found = async (text: string) => (await search(who.owner, { text, threadId })).items.map((hit) => hit.audit.id);
    expect(await found('said "stop now"')).toHaveLength(1);
    expect(await found('C:\\Users\\bob')).toEqual([read.id]);
    expect(await found('first line\r\nsecond line\tcolumn')).toEqual([read.id]);
    // Typed as the stored text shows it, too: the key's quotes and an escape as written.
    expect(await found('"path": "C:\\\\Users')).toEqual([read.id]);
    const SNIPPET = `query($text: String, $threadId: ID) { searchAudits(text: $text, threadId: $threadId) { items { snippet } } }`;
    const snippet = await t.gql(SNIPPET, { text: 'second line', threadId }, who.owner);
    expect(snippet.data.searchAudits.items[0].snippet).toContain('first line\\r\\nsecond line');
  });

  it('finds the failed tool alone with kind TOOL, not the model calls whose history repeats its error', async () => {
    const threadId = await createThread(t, who.owner, 'a retried refund');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    must(await worker.modelStarted('ask', { model: 'planner-7', input: { messages: [{ role: 'user', content: 'Refund order 7' }] } }));
    must(await worker.modelFinished('ask', [{ id: 'r1', name: 'refund', args: { order: 7 } }]));
    const failed = must(await worker.toolStarted('r1', 'refund', { effectiveInput: { order: 7 } }));
    must(await worker.toolFinished('r1', { content: 'gateway says: quota exhausted', status: 'error' }));
    // Each later model call carries the conversation so far, the tool's error with it.
    const history = { messages: [{ role: 'user', content: 'Refund order 7' }, { role: 'tool', content: 'gateway says: quota exhausted' }] };
    const models = [];
    for (const operationId of ['retry-1', 'retry-2']) {
      models.push(must(await worker.modelStarted(operationId, { model: 'planner-7', input: history })).id as string);
      must(await worker.modelFinished(operationId));
    }
    const ids = async (variables: Record<string, unknown>) => (await search(who.owner, { text: 'quota exhausted', ...variables })).items.map((hit) => hit.audit.id);
    expect(await ids({})).toEqual([models[1], models[0], failed.id]);
    expect(await ids({ kind: 'TOOL' })).toEqual([failed.id]);
    expect(await ids({ kind: 'TOOL', threadId, status: 'FAILED' })).toEqual([failed.id]);
    expect(await ids({ kind: 'MODEL', threadId })).toEqual([models[1], models[0]]);
    expect(await ids({ kind: 'MODEL', status: 'FAILED' })).toEqual([]);
    // Without text too, and paged.
    const tools = await search(who.owner, { kind: 'TOOL', threadId });
    expect(tools.items.map((hit) => hit.audit.__typename)).toEqual(['ToolAudit']);
    const page = await search(who.owner, { kind: 'MODEL', threadId, first: 1 });
    expect(page.hasMore).toBe(true);
    const next = await search(who.owner, { kind: 'MODEL', threadId, first: 2, after: page.items[0]!.audit.id });
    expect([...page.items, ...next.items].map((hit) => hit.audit.id)).toEqual([models[1], models[0], expect.any(String)]);
    expect(next.hasMore).toBe(false);
    // A kind that is not one is refused by the schema, naming the values it takes.
    const refused = await t.gql(SEARCH, { text: 'quota exhausted', kind: 'ASSISTANT' }, who.owner);
    expect(refused.errors?.[0]?.message).toMatch(/AuditKind/);
  });

  it('filters by exact name and by status, within one thread', async () => {
    const byName = await search(who.owner, { name: 'pay_invoice', threadId: first.threadId });
    expect(byName.items.map((hit) => hit.audit.id)).toEqual([first.running, first.paid]);
    const running = await search(who.owner, { name: 'pay_invoice', status: 'RUNNING' });
    expect(running.items.map((hit) => hit.audit.id)).toEqual([second.running, first.running]);
    const completedPayments = await search(who.owner, { text: 'payee', status: 'COMPLETED', threadId: second.threadId });
    expect(completedPayments.items.map((hit) => hit.audit.id)).toEqual([second.paid]);
  });

  it('pages with after: every hit exactly once', async () => {
    const all = (await search(who.owner, { text: 'amount', first: 100 })).items.map((hit) => hit.audit.id);
    expect(all).toHaveLength(6);
    const paged: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await search(who.owner, { text: 'amount', first: 4, after });
      paged.push(...page.items.map((hit) => hit.audit.id));
      if (!page.hasMore) break;
      after = page.items.at(-1)!.audit.id;
    }
    expect(paged).toEqual(all);
  });

  it("refuses an after that is no hit the same search could have returned: another thread's audit (with threadId), a run's or a thread's id (another owner's pages on as an id naming nothing: test/reads/tenants.int.test.ts)", async () => {
    const runId = (await t.gql(`query($id: ID!) { thread(id: $id) { latestRun { id } } }`, { id: first.threadId }, who.owner)).data.thread.latestRun.id;
    const refused: [string, Record<string, unknown>][] = [
      ["another thread's audit, with threadId", { threadId: first.threadId, after: second.paid }],
      ['a run id', { after: runId }],
      ['a thread id', { threadId: first.threadId, after: first.threadId }],
    ];
    // With text (the walk and the search index) and without (the filters' walk).
    for (const terms of [{ text: 'amount' }, { name: 'pay_invoice' }]) {
      // A name never changes: an audit of another name was never a hit of a search by name.
      if ('name' in terms) refused.push(["an audit of another name", { after: second.refund }]);
      for (const [what, variables] of refused) {
        const response = await t.gql(SEARCH, { ...terms, ...variables }, who.owner);
        expect(response.errors, `${what} ${JSON.stringify(terms)}`).toEqual([
          expect.objectContaining({ message: 'after must be the id of an audit of a previous page', extensions: { code: 'BAD_USER_INPUT' } }),
        ]);
        expect(response.data ?? null).toBeNull();
      }
    }
    // An audit of this thread, or of any of the owner's threads without threadId, still pages on,
    // whatever the search (a hit's status may have changed since its page).
    expect((await search(who.owner, { text: 'payee', threadId: first.threadId, after: first.running })).items.map((hit) => hit.audit.id)).toEqual([first.paid]);
    expect((await search(who.owner, { name: 'pay_invoice', after: second.paid })).items.map((hit) => hit.audit.id)).toEqual([first.running, first.paid]);
    expect((await search(who.owner, { name: 'pay_invoice', status: 'COMPLETED', after: second.running })).items.map((hit) => hit.audit.id)).toEqual([second.paid, first.paid]);
  });

  it('keeps audits superadmin-on-own-thread data, and refuses malformed input', async () => {
    expect(errorCode(await t.gql(SEARCH, { text: 'amount' }, await t.token('a-user', 'user')))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(SEARCH, { text: 'amount' }, await t.token('an-admin', 'admin')))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(SEARCH, { text: 'amount' }, who.worker))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(SEARCH, { text: 'amount', threadId: strangers.threadId }, who.owner))).toBe('NOT_FOUND');
    for (const variables of [{ text: 'ab' }, { text: 'x'.repeat(257) }, { first: 0 }, { first: 101 }, { after: 'nope' }]) {
      const response = await t.gql(SEARCH, variables, who.owner);
      expect(errorCode(response), JSON.stringify(variables)).toBe('BAD_USER_INPUT');
      expect(JSON.stringify(response.errors)).not.toMatch(/SELECT|ILIKE|at .*\.ts/);
    }
  });

  it('matches text through the search index, not by reading every audit', { timeout: 120_000 }, async () => {
    // Enough other audits that reading them all costs the planner more than the index (at 20 k
    // it still reads them all: a trigram search's fixed cost is high).
    const threadId = await createThread(t, who.owner, 'many audits');
    const runId = await createRun(t, who.owner, threadId);
    await t.app.db.driver.exec(`
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, input)
        SELECT gen_random_uuid(), '${threadId}', '${runId}', 'ASSISTANT', 'model_audit', 'op-' || i, 'filler-model', i, 'COMPLETED',
          jsonb_build_object('prompt', md5(i::text))
        FROM generate_series(1, 30000) i;
      ANALYZE message;`);
    const rows = await t.app.db.driver.query<Record<string, string>>(
      `EXPLAIN SELECT m.id FROM message m WHERE ${AUDIT_SEARCH_PROBE.audits} AND ${AUDIT_SEARCH_TEXT} ILIKE $1`,
      ['%issuer declined%'],
    );
    expect(rows.map((row) => Object.values(row)[0]).join('\n')).toContain('message_audit_search_owner_idx');
    expect((await search(who.owner, { text: 'issuer declined' })).items.map((hit) => hit.audit.id)).toEqual([second.refund, first.refund]);
  });
});
