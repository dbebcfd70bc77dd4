import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerStatement, type LedgerQuery } from '../../src/domain/tool-call-ledger.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors, type WorkerSession } from '../support/lifecycle.js';
import { rowsTouched, type PlanNode } from '../support/plans.js';

// A long-lived agent's conversation is one resume chain, hundreds of runs deep; a call declared at
// its root may still be started by the run going at its tip, so the ledger calls it PENDING. What
// deciding that costs must not grow with the chain's depth: counted from the plan's rows, not time.

let t: TestApp;
let who: Actors;
beforeAll(async () => {
  t = await startTestApp();
  who = await actors(t);
});
afterAll(() => t.close());

const DECLARED = 10;

/** A thread whose first run declared DECLARED calls, then `depth` resumes, each of the one before; the last one running. */
async function chain(depth: number, title: string) {
  const threadId = await createThread(t, who.owner, title);
  const runs = [await createRun(t, who.owner, threadId)];
  let session: WorkerSession = await claim(t, who.worker, runs[0]!);
  await session.declare('plan', Array.from({ length: DECLARED }, (_, i) => ({ id: `${title}-${i}`, name: 'search' })));
  for (let i = 0; i < depth; i++) {
    must(await session.finish('INTERRUPTED'));
    runs.push(await createRun(t, who.owner, threadId, session.lease.runId));
    session = await claim(t, who.worker, runs.at(-1)!);
  }
  return { threadId, runs, tip: session };
}

/** Rows the ledger's statement touched, every table's and index's, from its plan. */
async function rowsRead(query: LedgerQuery) {
  const statement = ledgerStatement(who.ownerSub, { ...query, first: 50 });
  const [row] = await t.app.db.driver.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.params);
  return [...rowsTouched(row!['QUERY PLAN'][0].Plan).values()].reduce((sum, rows) => sum + rows, 0);
}

const LEDGER = `query($threadId: ID, $case: ToolCallLedgerCase) {
  toolCallLedger(threadId: $threadId, case: $case, first: 100) { edges { node { toolCallId cases } } }
}`;
async function cases(variables: { threadId?: string; case?: string }) {
  const response = await t.gql(LEDGER, variables, who.owner);
  expect(response.errors).toBeUndefined();
  return response.data.toolCallLedger.edges.map(({ node }: { node: { toolCallId: string; cases: string[] } }) => [node.toolCallId, ...node.cases]);
}

describe('the ledger of a call declared at the root of a deep resume chain', () => {
  it('calls it PENDING while the tip goes, reading no more rows at depth 80 than at depth 2', { timeout: 120_000 }, async () => {
    const shallow = await chain(2, 'shallow');
    const deep = await chain(80, 'deep');
    const pending = (title: string) => Array.from({ length: DECLARED }, (_, i) => [`${title}-${DECLARED - 1 - i}`, 'PENDING']);
    expect(await cases({ threadId: deep.threadId })).toEqual(pending('deep'));
    expect(await cases({ threadId: shallow.threadId })).toEqual(pending('shallow'));

    for (const query of [{}, { case: 'PENDING' as const }, { case: 'NEVER_RUN' as const }]) {
      const near = await rowsRead({ ...query, threadId: shallow.threadId });
      const far = await rowsRead({ ...query, threadId: deep.threadId });
      expect(far, `${JSON.stringify(query)}: ${far} rows at depth 80, ${near} at depth 2`).toBeLessThanOrEqual(near);
    }

    // Ended, nothing can start them any more.
    must(await deep.tip.finish('COMPLETED'));
    expect(await cases({ threadId: deep.threadId })).toEqual(pending('deep').map(([id]) => [id, 'NEVER_RUN']));
  });

  it('follows the branch a resume took: a sibling resume going does not keep the other branch\'s calls pending', async () => {
    const { threadId, runs, tip } = await chain(2, 'branched');
    await tip.declare('tip-plan', [{ id: 'on-the-tip', name: 'search' }]);
    must(await tip.finish('INTERRUPTED'));
    // A second resume of the middle run, beside the tip: the root's calls may still start there, the tip's may not.
    const sibling = await claim(t, who.worker, await createRun(t, who.owner, threadId, runs[1]!));
    const byCase = Object.fromEntries((await cases({ threadId })).map(([id, ...rest]: string[]) => [id, rest]));
    expect(byCase['on-the-tip']).toEqual(['NEVER_RUN']);
    expect(byCase['branched-0']).toEqual(['PENDING']);
    must(await sibling.finish('COMPLETED'));
    expect((await cases({ threadId, case: 'PENDING' })).length).toBe(0);
  });
});
