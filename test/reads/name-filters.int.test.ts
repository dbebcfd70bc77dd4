import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { must, runningRun } from '../support/lifecycle.js';

// The `name` filter of toolActivity, toolCallLedger and searchAudits keeps the tool of exactly
// that name: tool names are stored as written, spaces included, so a filter is not trimmed.
// A blank `name` filters nothing (no tool has a blank name: a blank one is refused when written).

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const NAMES = ['spaced', ' spaced ', 'calc'];

async function ownerWithTools() {
  const { owner, threadId, session } = await runningRun(t);
  await session.declare('m1', NAMES.map((name, index) => ({ id: `c${index}`, name })));
  for (const [index, name] of NAMES.entries()) {
    must(await session.toolStarted(`c${index}`, name));
    must(await session.toolFinished(`c${index}`, { content: name, status: 'success' }));
  }
  return { owner, threadId };
}

async function namesFound(owner: string, threadId: string, name: string) {
  const found = await t.gql(
    `query($threadId: ID!, $name: String) {
      toolActivity(name: $name) { tools { name } }
      toolCallLedger(threadId: $threadId, name: $name) { edges { node { name } } }
      searchAudits(threadId: $threadId, name: $name) { items { audit { ... on ToolAudit { name } } } }
    }`,
    { threadId, name },
    owner,
  );
  expect(found.errors).toBeUndefined();
  const sorted = (names: string[]) => [...names].sort();
  return {
    activity: sorted(found.data.toolActivity.tools.map((tool: { name: string }) => tool.name)),
    ledger: sorted(found.data.toolCallLedger.edges.map((edge: { node: { name: string } }) => edge.node.name)),
    search: sorted(found.data.searchAudits.items.map((hit: { audit: { name?: string } }) => hit.audit.name).filter(Boolean)),
  };
}

it('keeps only the tool of exactly that name, leading and trailing spaces included', async () => {
  const { owner, threadId } = await ownerWithTools();
  for (const name of NAMES) {
    expect(await namesFound(owner, threadId, name), JSON.stringify(name)).toEqual({ activity: [name], ledger: [name], search: [name] });
  }
  expect(await namesFound(owner, threadId, ' calc')).toEqual({ activity: [], ledger: [], search: [] });
});

it('filters nothing with a blank name', async () => {
  const { owner, threadId } = await ownerWithTools();
  const every = [...NAMES].sort();
  for (const blank of ['', '   ']) {
    expect(await namesFound(owner, threadId, blank), JSON.stringify(blank)).toEqual({ activity: every, ledger: every, search: every });
  }
});
