// Issue 42, items 2, 3 and 5: text a principal gives is bounded and storable (titles at most
// 1,000 characters; no NUL, no unpaired surrogate: BAD_USER_INPUT, nothing stored); a search
// text the trigram index cannot narrow is refused, saying why; searches are limited per request
// and per principal, and so are toolActivity views over windows longer than the default hour.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WINDOW_SECONDS, MAX_WINDOW_SECONDS } from '../../src/domain/tool-activity.js';
import { MAX_LEDGER_READS_PER_PRINCIPAL, MAX_SEARCHES_PER_PRINCIPAL, MAX_WIDE_VIEWS_PER_PRINCIPAL } from '../../src/graphql/search-limits.js';
import { backendName } from '../support/database.js';
import { errorCode, startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('text-admin', 'superadmin');
});
afterAll(() => t.close());

const CREATE = 'mutation($title: String) { createThread(input: { title: $title }) { id title } }';
const THREADS = '{ threads(first: 100) { edges { node { id } } } }';
const SEARCH = 'query($text: String, $name: String) { searchAudits(text: $text, name: $name, first: 5) { hasMore } }';
const LEDGER = 'query($name: String) { toolCallLedger(name: $name, first: 5) { edges { node { id } } } }';
const ACTIVITY = 'query($name: String, $windowSeconds: Int) { toolActivity(name: $name, windowSeconds: $windowSeconds) { runningCount } }';

function refused(response: GraphQLResponse, why: RegExp) {
  expect(errorCode(response), JSON.stringify(response)).toBe('BAD_USER_INPUT');
  expect(response.errors![0]!.message).toMatch(why);
  expect(JSON.stringify(response.errors)).not.toMatch(/SELECT|ILIKE|invalid byte|at .*\.ts/);
}

const threadCount = async () => (await t.gql(THREADS, {}, admin)).data.threads.edges.length;

describe(`text inputs (${backendName})`, () => {
  it('a thread title is at most 1,000 characters; a longer one is refused and nothing is created', async () => {
    const before = await threadCount();
    refused(await t.gql(CREATE, { title: 'x'.repeat(1001) }, admin), /title is longer than its limit of 1000 characters/);
    expect(await threadCount()).toBe(before);
    const created = await t.gql(CREATE, { title: 'y'.repeat(1000) }, admin);
    expect(created.data.createThread.title).toHaveLength(1000);
    // Characters as a person counts them: an emoji is one, though JavaScript's length says two.
    expect((await t.gql(CREATE, { title: '🚀'.repeat(1000) }, admin)).errors).toBeUndefined();
    refused(await t.gql(CREATE, { title: '🚀'.repeat(1001) }, admin), /title is longer than its limit of 1000 characters/);
  });

  it("a NUL or an unpaired surrogate in a title, a search text or name, a ledger name or an activity view's tool name is BAD_USER_INPUT", async () => {
    const before = await threadCount();
    for (const bad of ['a\u0000b', 'lone \ud800 high', 'lone \udc00 low']) {
      refused(await t.gql(CREATE, { title: bad }, admin), /title contains (a NUL character|an unpaired surrogate)/);
      refused(await t.gql(SEARCH, { text: `invoice ${bad}` }, admin), /text contains/);
      refused(await t.gql(SEARCH, { name: bad }, admin), /name contains/);
      refused(await t.gql(LEDGER, { name: bad }, admin), /name contains/);
      refused(await t.gql(ACTIVITY, { name: bad }, admin), /name contains/);
    }
    expect(await threadCount()).toBe(before);
    // A paired surrogate (an emoji) is ordinary text.
    expect((await t.gql(CREATE, { title: 'ship it 🚀' }, admin)).data.createThread.title).toBe('ship it 🚀');
  });
});

describe(`search limits (${backendName})`, () => {
  it('a text without three letters or digits in a row is refused, saying why', async () => {
    for (const text of ['%%%', '___', '%_%_%', 'ab cd', 'a-b-c', '12.34']) {
      refused(await t.gql(SEARCH, { text }, admin), /at least 3 letters or digits in a row/);
    }
    for (const text of ['abc', 'x%abc', 'été', '123']) {
      const response = await t.gql(SEARCH, { text }, admin);
      expect(response.errors, text).toBeUndefined();
    }
  });

  it('a request may search at most twice; more is refused before anything runs', async () => {
    const two = await t.gql('{ a: searchAudits(text: "invoice", first: 1) { hasMore } b: searchAudits(text: "refund", first: 1) { hasMore } }', {}, admin);
    expect(two.errors).toBeUndefined();
    const aliases = Array.from({ length: 15 }, (_, i) => `s${i}: searchAudits(text: "invoice", first: 1) { hasMore }`).join(' ');
    const fifteen = await t.gql(`{ ${aliases} }`, {}, admin);
    refused(fifteen, /runs searchAudits 15 times; at most 2/);
    expect(fifteen.data ?? null).toBeNull();
  });

  it('a request may count threads (threads.totalCount) at most twice, however written; more is refused before anything runs', async () => {
    const two = await t.gql('{ a: threads(first: 1) { totalCount } b: threads(first: 1, title: "inv") { totalCount } }', {}, admin);
    expect(two.errors).toBeUndefined();
    // Each runs a count of up to 10,001 threads.
    const aliases = Array.from({ length: 15 }, (_, i) => `c${i}: threads(first: 1) { totalCount }`).join(' ');
    const fifteen = await t.gql(`{ ${aliases} }`, {}, admin);
    refused(fifteen, /runs threads.totalCount 15 times; at most 2/);
    expect(fifteen.errors![0]!.extensions).toMatchObject({ limit: 'THREAD_COUNTS_PER_REQUEST', max: 2 });
    expect(fifteen.data ?? null).toBeNull();
    refused(await t.gql('{ threads(first: 1) { a: totalCount b: totalCount c: totalCount } }', {}, admin), /runs threads.totalCount 3 times/);
    const spread = '{ a: threads(first: 1) { ...n } b: threads(first: 1) { ...n } c: threads(first: 1) { ... on ThreadConnection { ...n } } } fragment n on ThreadConnection { totalCount }';
    refused(await t.gql(spread, {}, admin), /runs threads.totalCount 3 times/);
    // A field written again under the same name runs once, and pages without a count are not counted.
    const once = '{ threads(first: 1) { totalCount ...n } threads(first: 1) { totalCount } b: threads(first: 1) { totalCount } c: threads(first: 1) { pageInfo { hasNextPage } } } fragment n on ThreadConnection { totalCount }';
    expect((await t.gql(once, {}, admin)).errors).toBeUndefined();
  });

  it('a request may read the tool-call ledger at most twice: a case few calls are in reads all the calls its status leaves', async () => {
    const two = await t.gql('{ a: toolCallLedger(case: CLOSED_BY_RUN_END, first: 1) { edges { node { id } } } b: toolCallLedger(first: 1) { edges { node { id } } } }', {}, admin);
    expect(two.errors).toBeUndefined();
    const aliases = Array.from({ length: 15 }, (_, i) => `l${i}: toolCallLedger(case: CLOSED_BY_RUN_END, first: 1) { edges { node { id } } }`).join(' ');
    const fifteen = await t.gql(`{ ${aliases} }`, {}, admin);
    refused(fifteen, /runs toolCallLedger 15 times; at most 2/);
    expect(fifteen.errors![0]!.extensions).toMatchObject({ limit: 'LEDGER_READS_PER_REQUEST', max: 2 });
    expect(fifteen.data ?? null).toBeNull();
  });

  it(`a principal may run at most ${MAX_SEARCHES_PER_PRINCIPAL} searches at once; another principal is not held back`, { timeout: 120_000 }, async () => {
    // Twelve at once from one principal: whatever the interleaving, at least the cap's worth run
    // and every other is refused with the limit's words; within a few tries some overlap.
    let refusedSome = false;
    for (let trial = 0; trial < 10 && !refusedSome; trial++) {
      const answers = await Promise.all(Array.from({ length: MAX_SEARCHES_PER_PRINCIPAL * 3 }, () => t.gql(SEARCH, { text: 'invoice' }, admin)));
      const refusals = answers.filter((answer) => answer.errors);
      for (const refusal of refusals) refused(refusal, new RegExp(`at most ${MAX_SEARCHES_PER_PRINCIPAL} searches at once`));
      expect(answers.length - refusals.length).toBeGreaterThanOrEqual(MAX_SEARCHES_PER_PRINCIPAL);
      refusedSome = refusals.length > 0;
    }
    expect(refusedSome).toBe(true);
    // Once they finished, the principal searches again; another principal never waited on it.
    expect((await t.gql(SEARCH, { text: 'invoice' }, admin)).errors).toBeUndefined();
    expect((await t.gql(SEARCH, { text: 'invoice' }, await t.token('other-admin', 'superadmin'))).errors).toBeUndefined();
  });

  it(`a principal may read the tool-call ledger at most ${MAX_LEDGER_READS_PER_PRINCIPAL} times at once; a search and another principal are not held back`, { timeout: 120_000 }, async () => {
    const reader = await t.token('ledger-reader', 'superadmin');
    let refusedSome = false;
    for (let trial = 0; trial < 10 && !refusedSome; trial++) {
      const reads = Array.from({ length: MAX_LEDGER_READS_PER_PRINCIPAL * 3 }, () => t.gql(LEDGER, {}, reader));
      const search = t.gql(SEARCH, { text: 'invoice' }, reader);
      const answers = await Promise.all(reads);
      expect((await search).errors).toBeUndefined();
      const refusals = answers.filter((answer) => answer.errors);
      for (const refusal of refusals) {
        refused(refusal, new RegExp(`at most ${MAX_LEDGER_READS_PER_PRINCIPAL} tool-call ledger reads at once`));
        expect(refusal.errors![0]!.extensions).toMatchObject({ limit: 'LEDGER_READS_PER_PRINCIPAL', max: MAX_LEDGER_READS_PER_PRINCIPAL });
      }
      expect(answers.length - refusals.length).toBeGreaterThanOrEqual(MAX_LEDGER_READS_PER_PRINCIPAL);
      refusedSome = refusals.length > 0;
    }
    expect(refusedSome).toBe(true);
    expect((await t.gql(LEDGER, {}, reader)).errors).toBeUndefined();
    expect((await t.gql(LEDGER, {}, await t.token('other-ledger-reader', 'superadmin'))).errors).toBeUndefined();
  });

  it(`a principal may run at most ${MAX_WIDE_VIEWS_PER_PRINCIPAL} toolActivity views over more than an hour at once; an hour's view, a search and another principal are not held back`, { timeout: 120_000 }, async () => {
    const owner = await t.token('week-viewer', 'superadmin');
    let refusedSome = false;
    for (let trial = 0; trial < 10 && !refusedSome; trial++) {
      const week = Array.from({ length: MAX_WIDE_VIEWS_PER_PRINCIPAL * 3 }, () => t.gql(ACTIVITY, { windowSeconds: MAX_WINDOW_SECONDS }, owner));
      // Alongside them, what the cap does not count: the default window's view and a search.
      const hour = t.gql(ACTIVITY, { windowSeconds: DEFAULT_WINDOW_SECONDS }, owner);
      const search = t.gql(SEARCH, { text: 'invoice' }, owner);
      const answers = await Promise.all(week);
      expect((await hour).errors).toBeUndefined();
      expect((await search).errors).toBeUndefined();
      const refusals = answers.filter((answer) => answer.errors);
      for (const refusal of refusals) {
        refused(refusal, new RegExp(`at most ${MAX_WIDE_VIEWS_PER_PRINCIPAL} toolActivity views over more than ${DEFAULT_WINDOW_SECONDS} seconds at once`));
        expect(refusal.errors![0]!.extensions).toMatchObject({ limit: 'WIDE_VIEWS_PER_PRINCIPAL', max: MAX_WIDE_VIEWS_PER_PRINCIPAL });
      }
      expect(answers.length - refusals.length).toBeGreaterThanOrEqual(MAX_WIDE_VIEWS_PER_PRINCIPAL);
      refusedSome = refusals.length > 0;
    }
    expect(refusedSome).toBe(true);
    expect((await t.gql(ACTIVITY, { windowSeconds: MAX_WINDOW_SECONDS }, owner)).errors).toBeUndefined();
    expect((await t.gql(ACTIVITY, { windowSeconds: MAX_WINDOW_SECONDS }, await t.token('other-week-viewer', 'superadmin'))).errors).toBeUndefined();
  });
});
