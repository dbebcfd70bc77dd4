import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredLeases } from '../../src/domain/convergence.js';
import { ledgerStatement, type LedgerQuery } from '../../src/domain/tool-call-ledger.js';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, expireLeases, must, type Actors } from '../support/lifecycle.js';

// toolCallLedger: every declared tool call with its latest execution and the cases a debugger
// hunts for, within a thread or across the caller's threads, each case made by real lifecycle
// mutations; the audit access rule; filters; exact paging.

let t: TestApp;
beforeAll(async () => {
  // Only the test sweeps (endedThread counts what its sweep ended): the background sweep, every
  // 200 ms by default here, could end the expired lease first.
  t = await startTestApp({ LEASE_SWEEP_INTERVAL_MS: '3600000' });
});
afterAll(() => t.close());

const LEDGER = `query($threadId: ID, $name: String, $status: ToolCallLedgerStatus, $case: ToolCallLedgerCase, $first: Int, $after: String) {
  toolCallLedger(threadId: $threadId, name: $name, status: $status, case: $case, first: $first, after: $after) {
    edges { cursor node {
      id threadId threadTitle runId declaredById executedInRunId auditId toolCallId name declaredInput effectiveInput inputDiffers
      status startedAt finishedAt durationMs cases leaseExpiresAt
    } }
    pageInfo { hasNextPage endCursor }
  }
}`;

interface Entry {
  id: string;
  threadId: string;
  threadTitle: string | null;
  runId: string;
  executedInRunId: string | null;
  auditId: string | null;
  toolCallId: string;
  name: string;
  declaredInput: unknown;
  effectiveInput: unknown;
  inputDiffers: boolean | null;
  status: string;
  durationMs: number | null;
  cases: string[];
  leaseExpiresAt: string | null;
}

async function ledger(token: string, variables: Record<string, unknown>) {
  const response = await t.gql(LEDGER, variables, token);
  expect(response.errors).toBeUndefined();
  const page = response.data.toolCallLedger as { edges: { cursor: string; node: Entry }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
  return { entries: page.edges.map((edge) => edge.node), cursors: page.edges.map((edge) => edge.cursor), ...page.pageInfo };
}
const callIds = (entries: Entry[]) => entries.map((entry) => entry.toolCallId);

/**
 * Billing: a lookup that completed as declared, a payment whose bare error awaits the verdict,
 * a refund declared and never run, a lookup still running (the run's lease open).
 */
async function billingThread(who: Actors, title: string) {
  const threadId = await createThread(t, who.owner, title);
  const runId = await createRun(t, who.owner, threadId);
  const worker = await claim(t, who.worker, runId, 120);
  await worker.declare('plan', [
    { id: 'lookup', name: 'search', args: { q: 'kettle' } },
    { id: 'pay', name: 'pay_invoice', args: { amount: 120 } },
    { id: 'refund', name: 'refund', args: { amount: 5 } },
    { id: 'slow', name: 'search', args: { q: 'teapot' } },
  ]);
  must(await worker.toolStarted('lookup', 'search', { effectiveInput: { q: 'kettle' } }));
  must(await worker.toolFinished('lookup', { content: 'found', status: 'success' }));
  must(await worker.toolStarted('pay', 'pay_invoice', { effectiveInput: { amount: 120, payee: 'Kettle Co.' } }));
  must(await worker.toolError('pay', { message: 'connection reset' }));
  must(await worker.toolStarted('slow', 'search', { effectiveInput: { q: 'teapot' } }));
  return { threadId, runId };
}

/**
 * Ended runs: a lookup closed by a FAILED run, a payment declared and never run, two calls
 * interrupted (one run again in a resume, one left), a call closed by cancelRun, one abandoned
 * when its run's lease expired.
 */
async function endedThread(who: Actors, title: string) {
  const threadId = await createThread(t, who.owner, title);
  const failedRun = await createRun(t, who.owner, threadId);
  const failing = await claim(t, who.worker, failedRun);
  await failing.declare('plan', [
    { id: 'cut', name: 'search', args: { q: 'a' } },
    { id: 'skipped', name: 'pay_invoice', args: { amount: 9 } },
  ]);
  must(await failing.toolStarted('cut', 'search', { effectiveInput: { q: 'a' } }));
  must(await failing.finish('FAILED'));

  const interruptedRun = await createRun(t, who.owner, threadId);
  const interrupted = await claim(t, who.worker, interruptedRun);
  await interrupted.declare('plan-2', [
    { id: 'again', name: 'search', args: { q: 'b' } },
    { id: 'left', name: 'search', args: { q: 'l' } },
  ]);
  must(await interrupted.toolStarted('again', 'search', { effectiveInput: { q: 'b' } }));
  must(await interrupted.toolStarted('left', 'search', { effectiveInput: { q: 'l' } }));
  must(await interrupted.finish('INTERRUPTED'));
  const resumeRun = await createRun(t, who.owner, threadId, interruptedRun);
  const resumed = await claim(t, who.worker, resumeRun);
  must(await resumed.toolStarted('again', 'search', { effectiveInput: { q: 'b', page: 2 } }));
  must(await resumed.toolFinished('again', { content: 'found b', status: 'success' }));
  must(await resumed.finish('COMPLETED'));

  const cancelledRun = await createRun(t, who.owner, threadId);
  const cancelled = await claim(t, who.worker, cancelledRun);
  await cancelled.declare('plan-3', [{ id: 'stopped', name: 'search', args: { q: 'c' } }]);
  must(await cancelled.toolStarted('stopped', 'search', { effectiveInput: { q: 'c' } }));
  must(await t.gql(`mutation($runId: ID!) { result: cancelRun(runId: $runId) { id } }`, { runId: cancelledRun }, who.owner));

  const expiredRun = await createRun(t, who.owner, threadId);
  const expiring = await claim(t, who.worker, expiredRun);
  await expiring.declare('plan-4', [{ id: 'lost', name: 'search', args: { q: 'd' } }]);
  must(await expiring.toolStarted('lost', 'search', { effectiveInput: { q: 'd' } }));
  await expireLeases(t.app.db.driver, [expiredRun]);
  expect(await sweepExpiredLeases(t.app.deps)).toBe(1);
  return { threadId, failedRun, interruptedRun, resumeRun, cancelledRun };
}

describe(`toolCallLedger (${backendName})`, () => {
  let who: Actors;
  let billing: Awaited<ReturnType<typeof billingThread>>;
  let ended: Awaited<ReturnType<typeof endedThread>>;
  let strangers: Awaited<ReturnType<typeof billingThread>>;

  beforeAll(async () => {
    who = await actors(t);
    billing = await billingThread(who, 'billing');
    ended = await endedThread(who, 'ended runs');
    strangers = await billingThread(await actors(t), "another superadmin's billing");
  }, 60_000);

  it('shows one thread newest first, with each case the lifecycle made', async () => {
    const { entries, hasNextPage } = await ledger(who.owner, { threadId: billing.threadId });
    expect(hasNextPage).toBe(false);
    expect(callIds(entries)).toEqual(['slow', 'refund', 'pay', 'lookup']);
    const [slow, refund, pay, lookup] = entries as [Entry, Entry, Entry, Entry];
    expect(lookup).toMatchObject({
      threadId: billing.threadId, threadTitle: 'billing', runId: billing.runId, executedInRunId: billing.runId, name: 'search',
      declaredInput: { q: 'kettle' }, effectiveInput: { q: 'kettle' }, inputDiffers: false, status: 'COMPLETED', cases: [], leaseExpiresAt: null,
    });
    expect(lookup.auditId).toEqual(expect.any(String));
    expect(pay).toMatchObject({
      declaredInput: { amount: 120 }, effectiveInput: { amount: 120, payee: 'Kettle Co.' }, inputDiffers: true,
      status: 'RUNNING', cases: ['AWAITING_VERDICT'], leaseExpiresAt: null,
    });
    expect(refund).toMatchObject({
      name: 'refund', auditId: null, executedInRunId: null, effectiveInput: null, inputDiffers: null, status: 'PENDING', cases: ['PENDING'],
    });
    expect(slow).toMatchObject({ status: 'RUNNING', cases: ['RUNNING'], inputDiffers: false });
    const run = await t.gql(`query($id: ID!) { run(id: $id) { leaseExpiresAt } }`, { id: billing.runId }, who.owner);
    expect(slow.leaseExpiresAt).toBe(run.data.run.leaseExpiresAt);
  });

  it("closes what a run's end closed, and follows a call run again in a resume", async () => {
    const { entries } = await ledger(who.owner, { threadId: ended.threadId });
    expect(entries.map((entry) => [entry.toolCallId, entry.status, entry.cases])).toEqual([
      ['lost', 'ABANDONED', ['CLOSED_BY_RUN_END']],
      ['stopped', 'CANCELLED', ['CLOSED_BY_RUN_END']],
      ['left', 'INTERRUPTED', ['CLOSED_BY_RUN_END']],
      ['again', 'COMPLETED', []],
      ['skipped', 'PENDING', ['NEVER_RUN']],
      ['cut', 'FAILED', ['CLOSED_BY_RUN_END']],
    ]);
    const again = entries[3]!;
    expect(again).toMatchObject({ runId: ended.interruptedRun, executedInRunId: ended.resumeRun, effectiveInput: { q: 'b', page: 2 }, inputDiffers: true });
  });

  it('reads across the threads the caller owns, with their titles, and filters by name, status and case', async () => {
    const all = await ledger(who.owner, { first: 100 });
    expect(callIds(all.entries)).toEqual(['lost', 'stopped', 'left', 'again', 'skipped', 'cut', 'slow', 'refund', 'pay', 'lookup']);
    expect(new Set(all.entries.map((entry) => entry.threadTitle))).toEqual(new Set(['billing', 'ended runs']));

    expect(callIds((await ledger(who.owner, { name: 'pay_invoice' })).entries)).toEqual(['skipped', 'pay']);
    expect(callIds((await ledger(who.owner, { status: 'RUNNING' })).entries)).toEqual(['slow', 'pay']);
    expect(callIds((await ledger(who.owner, { status: 'PENDING' })).entries)).toEqual(['skipped', 'refund']);
    expect(callIds((await ledger(who.owner, { status: 'FAILED' })).entries)).toEqual(['cut']);
    expect(callIds((await ledger(who.owner, { status: 'INTERRUPTED' })).entries)).toEqual(['left']);
    expect(callIds((await ledger(who.owner, { status: 'ABANDONED' })).entries)).toEqual(['lost']);
    // A call declared in a run still going is pending, not "never run": only the run's end decides that.
    expect(callIds((await ledger(who.owner, { case: 'NEVER_RUN' })).entries)).toEqual(['skipped']);
    expect(callIds((await ledger(who.owner, { case: 'PENDING' })).entries)).toEqual(['refund']);
    expect(callIds((await ledger(who.owner, { case: 'AWAITING_VERDICT' })).entries)).toEqual(['pay']);
    expect(callIds((await ledger(who.owner, { case: 'RUNNING' })).entries)).toEqual(['slow']);
    expect(callIds((await ledger(who.owner, { case: 'CLOSED_BY_RUN_END' })).entries)).toEqual(['lost', 'stopped', 'left', 'cut']);
    expect(callIds((await ledger(who.owner, { name: 'search', status: 'COMPLETED' })).entries)).toEqual(['again', 'lookup']);
    expect(callIds((await ledger(who.owner, { name: 'search', threadId: billing.threadId, case: 'RUNNING' })).entries)).toEqual(['slow']);
    expect((await ledger(who.owner, { name: 'no_such_tool' })).entries).toEqual([]);
  });

  it('pages with after: every entry exactly once, in order', async () => {
    const all = (await ledger(who.owner, { first: 100 })).entries.map((entry) => entry.id);
    for (const size of [1, 3]) {
      const paged: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await ledger(who.owner, { first: size, after });
        expect(page.entries.length).toBeLessThanOrEqual(size);
        expect(page.cursors).toEqual(page.entries.map((entry) => entry.id));
        paged.push(...page.entries.map((entry) => entry.id));
        if (!page.hasNextPage) break;
        after = page.endCursor;
      }
      expect(paged).toEqual(all);
    }
    const filtered = await ledger(who.owner, { name: 'search', first: 2 });
    expect(callIds(filtered.entries)).toEqual(['lost', 'stopped']);
    const rest = await ledger(who.owner, { name: 'search', first: 2, after: filtered.endCursor });
    expect(callIds(rest.entries)).toEqual(['left', 'again']);
    expect(rest.hasNextPage).toBe(true);
  });

  it("refuses an after that is no entry the same read could have returned: another thread's (with threadId), a run's or a thread's id (another owner's pages on as an id naming nothing: test/reads/tenants.int.test.ts)", async () => {
    const endedCursor = (await ledger(who.owner, { threadId: ended.threadId, first: 1 })).endCursor!;
    const refused: [string, Record<string, unknown>][] = [
      ["another thread's entry, with threadId", { threadId: billing.threadId, after: endedCursor }],
      ['a run id', { after: billing.runId }],
      ['a thread id', { threadId: billing.threadId, after: billing.threadId }],
      // A name never changes: a call of another name was never an entry of a read by name.
      ['a call of another name', { name: 'pay', after: endedCursor }],
    ];
    for (const [what, variables] of refused) {
      const response = await t.gql(LEDGER, variables, who.owner);
      expect(response.errors, what).toEqual([
        expect.objectContaining({ message: 'after must be the cursor of an entry of a previous page', extensions: { code: 'BAD_USER_INPUT' } }),
      ]);
      expect(response.data ?? null, what).toBeNull();
    }
    // An entry of this thread, or of any of the owner's threads without threadId, still pages on.
    expect(callIds((await ledger(who.owner, { after: endedCursor, first: 100 })).entries)).toEqual(['stopped', 'left', 'again', 'skipped', 'cut', 'slow', 'refund', 'pay', 'lookup']);
    const billingFirst = (await ledger(who.owner, { threadId: billing.threadId, first: 1 })).endCursor;
    expect(callIds((await ledger(who.owner, { threadId: billing.threadId, after: billingFirst })).entries)).toEqual(['refund', 'pay', 'lookup']);
  });

  it('keeps the ledger superadmin-on-own-thread data, and refuses malformed input', async () => {
    expect(errorCode(await t.gql(LEDGER, {}, await t.token('a-user', 'user')))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(LEDGER, {}, await t.token('an-admin', 'admin')))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(LEDGER, {}, who.worker))).toBe('FORBIDDEN');
    expect(errorCode(await t.gql(LEDGER, {}, null))).toBe('UNAUTHENTICATED');
    expect(errorCode(await t.gql(LEDGER, { threadId: strangers.threadId }, who.owner))).toBe('NOT_FOUND');
    expect(errorCode(await t.gql(LEDGER, { threadId: '00000000-0000-7000-8000-000000000000' }, who.owner))).toBe('NOT_FOUND');
    // Another owner's calls never show across threads either.
    expect((await ledger(who.owner, { first: 100 })).entries.every((entry) => entry.threadId !== strangers.threadId)).toBe(true);
    for (const variables of [{ first: 0 }, { first: 101 }, { first: null }, { after: 'nope' }, { name: 'x'.repeat(257) }, { threadId: ' ' }]) {
      const response = await t.gql(LEDGER, variables, who.owner);
      expect(errorCode(response), JSON.stringify(variables)).toBe('BAD_USER_INPUT');
      expect(JSON.stringify(response.errors)).not.toMatch(/SELECT|tool_call|at .*\.ts/);
    }
    expect(errorCode(await t.gql(LEDGER, { case: 'SOMETIMES' }, who.owner))).toBe('BAD_USER_INPUT');
  });

  it('finds a case that only calls older than the walk are in: the walk reads its budget, then the rest at once', async () => {
    // One owner's 2,500 calls, each executed; the three oldest closed by their run's end (CANCELLED),
    // the rest COMPLETED: a case the walk on (owner_id, id) cannot fill a page of within LEDGER_WALK_BUDGET.
    const owner = await t.token('ledger-deep-owner', 'superadmin');
    const id = (kind: number, i: string) => `('00000000-0000-7000-800${kind}-' || lpad(to_hex(${i}), 12, '0'))::uuid`;
    await t.app.db.driver.exec(`
      INSERT INTO thread (id, title, owner_id) VALUES ('00000000-0000-7000-8000-00000000d001', 'deep', 'ledger-deep-owner');
      INSERT INTO run (id, thread_id, status) VALUES ('00000000-0000-7000-8000-00000000d002', '00000000-0000-7000-8000-00000000d001', 'COMPLETED');
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status)
        VALUES ('00000000-0000-7000-8000-00000000d003', '00000000-0000-7000-8000-00000000d001', '00000000-0000-7000-8000-00000000d002',
          'ASSISTANT', 'model_audit', 'plan', 'model', 1, 'COMPLETED');
      INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, status)
        SELECT ${id(1, 'i')}, '00000000-0000-7000-8000-00000000d001', '00000000-0000-7000-8000-00000000d002', '00000000-0000-7000-8000-00000000d003',
          i, 'deep-' || i, 'lookup', (CASE WHEN i <= 3 THEN 'CANCELLED' ELSE 'COMPLETED' END)::"ToolCallStatus"
        FROM generate_series(1, 2500) i;
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, tool_call_row_id)
        SELECT ${id(2, 'i')}, '00000000-0000-7000-8000-00000000d001', '00000000-0000-7000-8000-00000000d002', 'TOOL', 'tool_audit', 'deep-' || i,
          'lookup', i, (CASE WHEN i <= 3 THEN 'CANCELLED' ELSE 'COMPLETED' END)::"AuditStatus", ${id(1, 'i')}
        FROM generate_series(1, 2500) i;`);
    const closed = await ledger(owner, { case: 'CLOSED_BY_RUN_END', first: 2 });
    expect(callIds(closed.entries)).toEqual(['deep-3', 'deep-2']);
    expect(closed.hasNextPage).toBe(true);
    const rest = await ledger(owner, { case: 'CLOSED_BY_RUN_END', first: 2, after: closed.endCursor });
    expect(callIds(rest.entries)).toEqual(['deep-1']);
    expect(rest.hasNextPage).toBe(false);
    // And a filter most calls match still fills its page within the walk.
    expect(callIds((await ledger(owner, { status: 'COMPLETED', first: 3 })).entries)).toEqual(['deep-2500', 'deep-2499', 'deep-2498']);
  });

  it('finds one thread\'s, one tool\'s and one case\'s calls through an index, among many other calls', { timeout: 120_000 }, async () => {
    // Other owners' threads, each with a model call that declared twenty calls that completed.
    await t.app.db.driver.exec(`
      INSERT INTO thread (id, title, owner_id) SELECT gen_random_uuid(), 'filler ' || i, 'filler-owner-' || (i % 50) FROM generate_series(1, 1500) i;
      INSERT INTO run (id, thread_id, status) SELECT gen_random_uuid(), id, 'COMPLETED' FROM thread WHERE title LIKE 'filler %';
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status)
        SELECT gen_random_uuid(), thread_id, id, 'ASSISTANT', 'model_audit', 'plan', 'filler-model', 1, 'COMPLETED'
        FROM run WHERE thread_id IN (SELECT id FROM thread WHERE title LIKE 'filler %');
      INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, status, declared_input, effective_input)
        SELECT gen_random_uuid(), m.thread_id, m.run_id, m.id, i, 'call-' || i, 'filler_tool', 'COMPLETED', '{}', '{}'
        FROM message m, generate_series(1, 20) i WHERE m.name = 'filler-model';
      ANALYZE thread; ANALYZE run; ANALYZE message; ANALYZE tool_call;`);
    const plan = async (query: LedgerQuery) => {
      const statement = ledgerStatement(who.ownerSub, { ...query, first: 50 });
      const rows = await t.app.db.driver.query<Record<string, string>>(`EXPLAIN ${statement.text}`, statement.params);
      return rows.map((row) => Object.values(row)[0]).join('\n');
    };
    // Each read finds its calls through its index, never by reading the 30,000 others.
    const cases: [LedgerQuery, string][] = [
      // Any of the indexes that begin with the thread (its calls are few; with a status or a name, its own).
      [{ threadId: billing.threadId }, 'tool_call_thread_id_\\w*idx'],
      // Across threads, the owner's calls on an index that begins with the owner, never other owners'.
      [{ name: 'pay_invoice' }, 'tool_call_owner_id_\\w*idx'],
      [{ case: 'RUNNING' }, 'tool_call_owner_id_\\w*idx'],
      [{ case: 'NEVER_RUN' }, 'tool_call_owner_id_\\w*idx'],
      [{ case: 'PENDING' }, 'tool_call_owner_id_\\w*idx'],
      [{ status: 'PENDING' }, 'tool_call_owner_id_\\w*idx'],
      [{}, 'tool_call_owner_id_\\w*idx'],
    ];
    for (const [query, index] of cases) {
      const text = await plan(query);
      expect(text, JSON.stringify(query)).toMatch(new RegExp(`(on|using) ${index} `));
      expect(text, JSON.stringify(query)).not.toMatch(/Seq Scan on tool_call/);
    }
    // And the answers are the same as before the filler.
    expect(callIds((await ledger(who.owner, { case: 'RUNNING' })).entries)).toEqual(['slow']);
    expect(callIds((await ledger(who.owner, { first: 100 })).entries)).toEqual(['lost', 'stopped', 'left', 'again', 'skipped', 'cut', 'slow', 'refund', 'pay', 'lookup']);
  });

  it('calls a declared call pending while its run or a resume of it goes, and never run once they ended', async () => {
    const threadId = await createThread(t, who.owner, 'pending then never run');
    const cases = async () => (await ledger(who.owner, { threadId })).entries.map((entry) => [entry.toolCallId, entry.status, entry.cases]);
    const runId = await createRun(t, who.owner, threadId);
    const worker = await claim(t, who.worker, runId);
    await worker.declare('plan', [{ id: 'later', name: 'search', args: { q: 'x' } }]);
    expect(await cases()).toEqual([['later', 'PENDING', ['PENDING']]]);
    must(await worker.finish('INTERRUPTED'));
    expect(await cases()).toEqual([['later', 'PENDING', ['NEVER_RUN']]]);
    const resumeRun = await createRun(t, who.owner, threadId, runId);
    expect(await cases()).toEqual([['later', 'PENDING', ['PENDING']]]);
    const resumed = await claim(t, who.worker, resumeRun);
    must(await resumed.finish('COMPLETED'));
    expect(await cases()).toEqual([['later', 'PENDING', ['NEVER_RUN']]]);
  });

  it('follows the whole resume chain: a call is pending while a resume of a resume of its run goes, which can still start it', async () => {
    const threadId = await createThread(t, who.owner, 'resume chain');
    const cases = async () => (await ledger(who.owner, { threadId })).entries.map((entry) => [entry.toolCallId, entry.status, entry.cases]);
    const inCase = async (name: string) => callIds((await ledger(who.owner, { threadId, case: name })).entries);
    const declaring = await createRun(t, who.owner, threadId);
    const first = await claim(t, who.worker, declaring);
    await first.declare('plan', [{ id: 'x', name: 'search', args: { q: 'x' } }]);
    must(await first.finish('INTERRUPTED'));
    const middle = await createRun(t, who.owner, threadId, declaring);
    must(await (await claim(t, who.worker, middle)).finish('INTERRUPTED'));
    expect(await cases()).toEqual([['x', 'PENDING', ['NEVER_RUN']]]);

    // r3 resumes r2, which resumed r1: queued, then running, the call may still start.
    const third = await createRun(t, who.owner, threadId, middle);
    expect(await cases()).toEqual([['x', 'PENDING', ['PENDING']]]);
    const thirdWorker = await claim(t, who.worker, third);
    expect(await cases()).toEqual([['x', 'PENDING', ['PENDING']]]);
    expect([await inCase('PENDING'), await inCase('NEVER_RUN')]).toEqual([['x'], []]);
    must(await thirdWorker.finish('INTERRUPTED'));
    expect(await cases()).toEqual([['x', 'PENDING', ['NEVER_RUN']]]);
    expect([await inCase('PENDING'), await inCase('NEVER_RUN')]).toEqual([[], ['x']]);

    // Three resumes down, it does start it.
    const fourth = await createRun(t, who.owner, threadId, third);
    const fourthWorker = await claim(t, who.worker, fourth);
    expect(await cases()).toEqual([['x', 'PENDING', ['PENDING']]]);
    must(await fourthWorker.toolStarted('x', 'search', { effectiveInput: { q: 'x' } }));
    expect(await cases()).toEqual([['x', 'RUNNING', ['RUNNING']]]);
  });
});
