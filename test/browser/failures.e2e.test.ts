// Issue 41 in Chromium, against the server process (PGlite, or PostgreSQL in the services pass):
// a debugger finds the failing call of a long thread in one key, reads the row beside the rows,
// links and copies it; a run whose entries are not loaded says so and loads them.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { saveScreenshot } from './support/screenshots.js';
import { openThread as openThreadAt, pageSuite, signIn as signInAt } from './support/page.js';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;
let context: BrowserContext;

async function newPage(viewport = { width: 1600, height: 1000 }): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  return page;
}

const signIn = (page: Page, token: string) => signInAt(page, origin, token);

const openThread = (page: Page, hash: string) => openThreadAt(page, origin, hash);

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);

/**
 * The text of each part of a row that is cut with no ellipsis to say so: an element clipping its
 * overflow without `text-overflow: ellipsis`, or with it on a flex or grid box (where it draws nothing).
 */
const cutWithoutEllipsis = (page: Page) =>
  page.locator('.row-space .row').evaluateAll((rows) =>
    rows.flatMap((element) =>
      [...element.querySelectorAll<HTMLElement>('.label, .label *, .info, .info *:not(.visually-hidden)')]
        .filter((part) => {
          const style = getComputedStyle(part);
          const marked = style.textOverflow === 'ellipsis' && !/flex|grid/.test(style.display);
          return style.overflowX === 'hidden' && part.scrollWidth > part.clientWidth + 1 && !marked;
        })
        .map((part) => part.textContent),
    ),
  );
const selectedKey = (page: Page) => page.locator('.row.selected').getAttribute('data-key');

async function violations(page: Page, where: string) {
  // Through the DevTools protocol: the page's CSP (rightly) refuses an injected <script>.
  await page.evaluate(readFileSync(AXE, 'utf8'));
  const found = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
  });
  return found.map((violation) => `${where}: ${violation}`);
}

/** A run of `models` model calls each declaring one tool that completes; `fail` makes the tool of that call fail, `abandon` leaves it running. */
async function writeRun(
  owner: AuditClient,
  worker: AuditClient,
  threadId: string,
  options: { models: number; fail?: number; abandon?: number; status?: 'COMPLETED' | 'FAILED'; model?: string },
) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const ids: Record<string, string> = {};
  let sequence = 1;
  for (let i = 1; i <= options.models; i++) {
    const operationId = `m${i}`;
    ids[operationId] = (await worker.recordModelStarted({ lease, operationId, sequence: sequence++, model: options.model ?? 'gpt-x' })).id;
    await worker.recordModelFinished({
      lease, operationId, status: 'COMPLETED', sequence: sequence++, toolCalls: [{ id: `c${i}`, name: 'pay', args: { n: i } }],
      usage: { inputTokens: { total: 100 }, outputTokens: { total: 10 } },
    });
    ids[`c${i}`] = (await worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'pay', effectiveInput: { n: i }, sequence: sequence++ })).id;
    if (i === options.abandon) continue;
    const output = i === options.fail ? { content: 'permission denied\n  at pay (pay.ts:12)', status: 'error' } : { content: 'paid', status: 'success' };
    await worker.recordToolFinished({ lease, toolCallId: `c${i}`, output, sequence: sequence++ });
  }
  await worker.finishRun({ lease, status: options.status ?? 'COMPLETED' });
  return { runId: run.id, ids };
}

/**
 * A run of `models` model calls each declaring one tool, then an answer: 2 × models + 1 entries,
 * written as one queue (the client batches them). `fail` makes that call's tool fail; `answer:
 * false` leaves the answer out (2 × models entries); `startAt` (epoch ms) has the runtime observe
 * its entries from then, 480 ms apart.
 */
async function writeRunBatched(
  owner: AuditClient, worker: AuditClient, threadId: string, models: number, fail?: number,
  shape: { answer?: boolean; startAt?: number } = {},
) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const writes: Promise<{ id: string }>[] = [];
  let sequence = 1;
  const observedAt = () => (shape.startAt === undefined ? {} : { observedAt: new Date(shape.startAt + 240 * sequence).toISOString() });
  for (let i = 1; i <= models; i++) {
    writes.push(worker.recordModelStarted({ lease, operationId: `m${i}`, model: 'gpt-x', ...observedAt(), sequence: sequence++ }));
    writes.push(worker.recordModelFinished({
      lease, operationId: `m${i}`, status: 'COMPLETED', ...observedAt(), sequence: sequence++, toolCalls: [{ id: `c${i}`, name: 'pay', args: { n: i } }],
      usage: { input_tokens: 100, output_tokens: 10 },
    }));
    writes.push(worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'pay', effectiveInput: { n: i }, ...observedAt(), sequence: sequence++ }));
    const output = i === fail ? { content: 'permission denied', status: 'error' } : { content: 'paid', status: 'success' };
    writes.push(worker.recordToolFinished({ lease, toolCallId: `c${i}`, output, ...observedAt(), sequence: sequence++ }));
  }
  if (shape.answer !== false) {
    writes.push(worker.recordModelStarted({ lease, operationId: 'answer', model: 'gpt-x', ...observedAt(), sequence: sequence++ }));
    writes.push(worker.recordModelFinished({ lease, operationId: 'answer', status: 'COMPLETED', ...observedAt(), sequence: sequence++, usage: { input_tokens: 100, output_tokens: 10 } }));
  }
  const written = await Promise.all(writes);
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { runId: run.id, failingTool: fail ? written[4 * (fail - 1) + 2]!.id : null, lastAnswer: written[written.length - 1]!.id };
}

describe.skipIf(!haveChromium && !browserRequired)(`failures at a glance, rows you can link (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));
  beforeAll(async () => {
    context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  });

  it('marks the run whose tool failed, finds the failing call in one key, opens a linked row beside the rows, copies it', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'twelve runs, one failing tool' });
    await owner.createThread({ title: 'another thread' });
    const runs: Awaited<ReturnType<typeof writeRun>>[] = [];
    for (let i = 1; i <= 12; i++) runs.push(await writeRun(owner, worker, threadId, i === 7 ? { models: 3, fail: 2, abandon: 3 } : { models: 3 }));
    const failing = runs[6]!;

    const page = await newPage();
    await signIn(page, who.owner);
    // The thread list: runs, failures and latest activity per thread, and a title filter.
    const item = page.locator(`.threads li[data-thread-id="${threadId}"]`);
    await expect.poll(() => item.locator('[data-testid=thread-stats]').textContent()).toBe(' 12 runs · 1 tool failed, 1 abandoned');
    expect(await item.textContent()).toContain('latest activity');
    // The filter asks the server: it finds a thread the first page does not list.
    for (let i = 0; i < 20; i++) await owner.createThread({ title: `newer thread ${i}` });
    await page.reload();
    await page.waitForSelector('section.threads li');
    await expect.poll(() => page.locator('.threads li').count()).toBe(20);
    expect(await item.count()).toBe(0);
    await page.fill('input.thread-filter', 'TWELVE runs');
    await expect.poll(() => page.locator('.threads li').evaluateAll((items) => items.map((li) => li.getAttribute('data-thread-id')))).toEqual([threadId]);
    await expect.poll(() => item.locator('[data-testid=thread-stats]').textContent()).toBe(' 12 runs · 1 tool failed, 1 abandoned');
    await page.fill('input.thread-filter', 'no such title');
    await expect.poll(() => page.locator('.threads').textContent()).toContain('No thread you may read has that in its title.');

    await openThread(page, `#thread=${threadId}`);
    // It opens at its newest activity: the last run, with nothing failed under it.
    const newest = runs[11]!;
    await expect.poll(() => row(page, newest.ids.c3!).isVisible()).toBe(true);
    expect(await row(page, newest.runId).locator('[data-testid=run-failures]').count()).toBe(0);

    // One key: the failing call (in run 7, out of sight), selected and scrolled to, its error's
    // first line on the row, its facts beside the rows.
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(failing.ids.c2);
    expect(await row(page, failing.ids.c2!).locator('.reason').textContent()).toBe('permission denied');
    // The COMPLETED run says what ended badly under it; a model row is labelled by its model name and call number.
    expect(await row(page, failing.runId).locator('[data-testid=run-failures]').textContent()).toBe('1 tool failed, 1 abandoned');
    expect(await row(page, failing.runId).getAttribute('data-status')).toBe('COMPLETED');
    expect(await row(page, failing.ids.m2!).locator('.name').textContent()).toBe('gpt-x · call 2');
    await expect.poll(() => page.locator('[data-testid=facts]').textContent()).toContain(failing.ids.c2);
    const facts = await page.locator('[data-testid=facts]').textContent();
    for (const fact of ['tool call id', 'c2', 'operation id', 'sequence', 'lease epoch', 'started', 'finished', 'duration']) expect(facts).toContain(fact);
    // Times read as a date and a time to the millisecond, not a bare fraction of a second.
    expect(facts).toMatch(/started \(runtime clock\)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\S*finished \(runtime clock\)\d{4}-/);
    expect(page.url()).toBe(`${origin}/#thread=${threadId}&audit=${failing.ids.c2}`);
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(failing.ids.c3);
    await page.keyboard.press('p');
    await expect.poll(() => selectedKey(page)).toBe(failing.ids.c2);

    // Copy as JSON: the row with its payloads.
    await page.click('[data-testid=copy-json]');
    await expect.poll(() => page.locator('[data-testid=copy-json]').textContent()).toBe('Copied');
    const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    expect(copied).toMatchObject({ id: failing.ids.c2, toolCallId: 'c2', status: 'FAILED', error: { message: 'permission denied\n  at pay (pay.ts:12)' } });

    // Errors only: the failing run and its failing rows.
    await page.click('[data-testid=errors-only]');
    await expect.poll(() => page.locator('.row-space .row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')))).toEqual([failing.runId, failing.ids.c2, failing.ids.c3]);
    await saveScreenshot(page, 'timeline-failures.png');
    await page.click('[data-testid=errors-only]');
    expect([...(await violations(page, 'timeline with a failing row open'))]).toEqual([]);
    await page.close();

    // The link opens the thread scrolled to that row, with it open; the panel sits beside the rows.
    for (const viewport of [{ width: 1280, height: 720 }, { width: 1600, height: 1000 }]) {
      const linked = await newPage(viewport);
      await signIn(linked, who.owner);
      await openThread(linked, `#thread=${threadId}&audit=${failing.ids.c2}`);
      await expect.poll(() => selectedKey(linked)).toBe(failing.ids.c2);
      expect(await row(linked, failing.ids.c2!).isVisible()).toBe(true);
      await expect.poll(() => linked.locator('.details h2').textContent()).toContain('pay (c2)');
      const rowsBox = (await linked.locator('[data-testid=rows]').boundingBox())!;
      const detailsBox = (await linked.locator('.details').boundingBox())!;
      expect(detailsBox.x).toBeGreaterThanOrEqual(rowsBox.x + rowsBox.width - 1);
      expect(detailsBox.y).toBeLessThan(viewport.height);
      expect(rowsBox.y + rowsBox.height).toBeLessThanOrEqual(viewport.height);
      await linked.close();
    }
  }, 300_000);

  it('searches as a debugger narrows: tools and errors first, the name filter, the run and a snippet on each hit, the next page; and reads in the dark', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'search me' });
    const failing = await writeRun(owner, worker, threadId, { models: 1, fail: 1 });
    // Four later model calls whose history merely carries the text.
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    for (let i = 1; i <= 4; i++) {
      const input = { messages: [{ role: 'tool', content: 'permission denied', tool_call_id: 'c1' }] };
      await worker.recordModelStarted({ lease, operationId: `h${i}`, sequence: 2 * i - 1, model: 'historian', input });
      await worker.recordModelFinished({ lease, operationId: `h${i}`, status: 'COMPLETED', sequence: 2 * i });
    }
    await worker.finishRun({ lease, status: 'COMPLETED' });
    await writeRun(owner, worker, threadId, { models: 26, model: 'many-calls' });

    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    const hits = page.locator('[data-testid=search-results] li');
    await page.fill('input[name=q]', 'permission denied');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => hits.count()).toBe(5);
    // The tool that produced the error first, though oldest; its run and the error around the match.
    expect(await hits.first().getAttribute('data-audit-id')).toBe(failing.ids.c1);
    expect(await hits.first().locator('.hit-run').textContent()).toBe(`run 1 · ${failing.runId.replace(/-/g, '').slice(-6)}`);
    expect(await hits.first().locator('.snippet').textContent()).toContain('permission denied');
    // A model call matching in its input shows the input around the match.
    const inInput = hits.nth(1).locator('.snippet');
    expect(await inInput.textContent()).toMatch(/^….*"content": ?"permission denied".*…$/);
    expect(await inInput.getAttribute('title')).toBe(await inInput.textContent());
    // The name filter: only that tool.
    await page.fill('input[name=name]', 'pay');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([failing.ids.c1]);
    // The next page: the 57 COMPLETED audits (1 + 4 + 26 model calls, 26 tools), 50 a page.
    await page.fill('input[name=q]', '');
    await page.fill('input[name=name]', '');
    await page.selectOption('select[aria-label=Status]', 'COMPLETED');
    await expect.poll(() => hits.count()).toBe(50);
    await page.click('[data-testid=search-more]');
    await expect.poll(() => hits.count()).toBe(57);
    await expect.poll(() => page.locator('[data-testid=search-results]').textContent()).toContain('57 matching audits');
    expect(await page.locator('[data-testid=search-more]').count()).toBe(0);

    // Dark: the colours change, and stay readable (axe-core's contrast rule among the rest).
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.locator('[data-testid=thread-failures]').click();
    await page.keyboard.press('n');
    await page.waitForSelector('[data-testid=facts]');
    expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe('rgb(17, 20, 24)');
    await saveScreenshot(page, 'timeline-dark.png');
    expect(await violations(page, 'dark timeline with search results')).toEqual([]);
    await page.close();
  }, 300_000);

  it('opens a row link in the timeline with that row selected, whichever view was last shown', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: first } = await owner.createThread({ title: 'read in the ledger' });
    const { id: second } = await owner.createThread({ title: 'linked to' });
    const here = await writeRun(owner, worker, first, { models: 2 });
    const there = await writeRun(owner, worker, second, { models: 2, fail: 2 });
    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    for (const [thread, key] of [[second, there.ids.c2!], [first, here.ids.m1!]] as const) {
      await openThread(page, `#thread=${first}`);
      await page.click('button:text("Tool calls")');
      await page.waitForSelector('[data-testid=ledger] tbody tr');
      // A shared link (Activity's failures, "Link to this row"), to another thread or this one.
      await page.goto(`${origin}/#thread=${thread}&audit=${key}`);
      await expect.poll(() => selectedKey(page)).toBe(key);
      expect(await row(page, key).isVisible()).toBe(true);
      expect(await page.locator('[data-testid=ledger]').count()).toBe(0);
    }
    await page.close();
  }, 120_000);

  it("says a deleted thread is gone, stops following it, and shows no timeline for it after a reload", async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'to be deleted' });
    const { runId } = await writeRun(owner, worker, threadId, { models: 1 });
    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    await expect.poll(() => row(page, runId).count()).toBe(1);
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` },
      body: JSON.stringify({ query: 'mutation($id: ID!) { deleteThread(id: $id) { threadId } }', variables: { id: threadId } }),
    });
    expect((await response.json()).errors).toBeUndefined();
    await page.waitForSelector('[data-testid=thread-gone]');
    expect(await page.locator('[data-testid=connection]').count()).toBe(0);
    expect(await page.locator('[data-testid=rows]').count()).toBe(0);
    await page.reload();
    await page.waitForSelector('[data-testid=thread-gone]');
    expect(await page.locator('[data-testid=rows]').count()).toBe(0);
    expect(await page.locator('.banner.error').count()).toBe(1);
    await page.close();
  }, 120_000);

  it("a thread deleted while open leaves none of it in the search results: not its hits' titles, nor their snippets", async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: doomed } = await owner.createThread({ title: 'erase me' });
    const { id: kept } = await owner.createThread({ title: 'keep me' });
    const gone = await writeRun(owner, worker, doomed, { models: 1, fail: 1 });
    const stays = await writeRun(owner, worker, kept, { models: 1, fail: 1 });
    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    // Across threads (searched from the thread list), then a hit of the doomed thread opened.
    const hits = page.locator('[data-testid=search-results] li');
    await page.fill('input[name=q]', 'permission denied');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toContain(gone.ids.c1);
    await page.click(`[data-testid=search-results] li[data-audit-id="${gone.ids.c1}"] a`);
    await expect.poll(() => selectedKey(page)).toBe(gone.ids.c1);
    expect((await owner.deleteThread(doomed)).threadId).toBe(doomed);
    await page.waitForSelector('[data-testid=thread-gone]');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).not.toContain(gone.ids.c1);
    expect(await page.locator('[data-testid=search-results]').textContent()).not.toContain('erase me');
    // The other thread's hit is still there; a search of "this thread" would have nothing left.
    expect(await hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toContain(stays.ids.c1);
    await page.close();
  }, 120_000);

  it('says which runs are not loaded, loads a run on demand, and takes its counts and tokens from the server', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'longer than one page' });
    // (10 + 245) model calls and their tools, 510 entries: the newest 500 leave the first run's 10
    // oldest out, its failing tool among them.
    const first = await writeRun(owner, worker, threadId, { models: 10, fail: 1 });
    const second = await writeRun(owner, worker, threadId, { models: 245 });

    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    // It opens at its newest activity.
    await expect.poll(() => row(page, second.ids.c245!).isVisible()).toBe(true);
    // A reader at the bottom keeps following: a run written now comes into sight without a click.
    const tail = await writeRun(owner, worker, threadId, { models: 1 });
    await expect.poll(() => row(page, tail.ids.c1!).isVisible()).toBe(true);
    expect(await page.locator('[data-testid=new-activity]').count()).toBe(0);
    // A reader scrolled up gets a cue for new rows, not a jump; the cue takes them to the tail.
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    const third = await writeRun(owner, worker, threadId, { models: 1 });
    await expect.poll(() => page.locator('[data-testid=new-activity]').textContent()).toMatch(/new rows? below/);
    expect(await row(page, first.runId).isVisible()).toBe(true);
    await page.click('[data-testid=new-activity]');
    await expect.poll(() => row(page, third.ids.c1!).isVisible()).toBe(true);
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    const run = row(page, first.runId);
    await expect.poll(() => run.locator('[data-testid=load-run]').textContent()).toBe('10 entries not loaded · load');
    // The run's failures and tokens are the server's: all 10 model calls, the failing tool though not loaded.
    expect(await run.locator('[data-testid=run-failures]').textContent()).toBe('1 tool failed');
    expect(await run.locator('.tokens').textContent()).toBe('1,000 → 100 tokens');
    await expect.poll(() => page.locator('[data-testid=thread-tokens]').textContent()).toBe(' · 25,700 → 2,570 tokens in this thread');
    // One press of the failure key loads the run and selects its failing call.
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(first.ids.c1);
    expect(await run.locator('[data-testid=load-run]').count()).toBe(0);
    await expect.poll(() => row(page, first.ids.c1!).isVisible()).toBe(true);
    expect(await row(page, first.ids.m1!).locator('.name').textContent()).toBe('gpt-x · call 1');
    await page.close();

    // Zooming into a run whose entries are not loaded loads them.
    const again = await newPage({ width: 1280, height: 720 });
    await signIn(again, who.owner);
    await openThread(again, `#thread=${threadId}`);
    await again.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    const unloaded = row(again, first.runId);
    await expect.poll(() => unloaded.locator('[data-testid=load-run]').count()).toBe(1);
    await unloaded.locator('.zoom-run').click();
    await expect.poll(() => unloaded.locator('[data-testid=load-run]').count()).toBe(0);
    await expect.poll(() => row(again, first.ids.m1!).isVisible()).toBe(true);
    await again.close();

    // The button loads the run at common widths: in sight, not covered by the run's lease and epoch.
    for (const viewport of [{ width: 1400, height: 900 }, { width: 1280, height: 720 }]) {
      const clicked = await newPage(viewport);
      await signIn(clicked, who.owner);
      await openThread(clicked, `#thread=${threadId}`);
      await clicked.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
      const button = row(clicked, first.runId).locator('[data-testid=load-run]');
      await button.click();
      await expect.poll(() => button.count()).toBe(0);
      await expect.poll(() => row(clicked, first.ids.m1!).isVisible()).toBe(true);
      await clicked.close();
    }
  }, 300_000);

  it('shows cut text in full on hover, and one size for a payload in its row and its panel', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'a long tool name, a large output' });
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const name = `lookup_${'customer_billing_history_'.repeat(8)}`;
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name, args: { n: 1 } }] });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name, effectiveInput: { n: 1 }, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'x'.repeat(300_000), status: 'success' }, sequence: 4 });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await newPage({ width: 1100, height: 720 });
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    const toolRow = row(page, tool.id);
    // The name is cut at 1100 px; its full text is on hover, and so is the row's whole info.
    const label = await toolRow.locator('.label .name').evaluate((element) => ({ cut: element.scrollWidth > element.clientWidth, title: element.getAttribute('title') }));
    expect(label.cut).toBe(true);
    expect(label.title).toContain(name);
    const rowSizes = (await toolRow.locator('.sizes').textContent())!;
    expect(rowSizes).toMatch(/^input \S+ B · output \S+ kB$/);
    expect(await toolRow.locator('.info').getAttribute('title')).toContain(rowSizes);
    // Whatever a row cannot show at this width ends in an ellipsis, never mid-word with no mark.
    for (const width of [1100, 1280, 1400]) {
      await page.setViewportSize({ width, height: 720 });
      expect(await cutWithoutEllipsis(page), `at ${width} px`).toEqual([]);
    }
    // One size formatter: the panel says of the output what its row says, bytes of the stored value.
    await toolRow.click();
    const panelSize = page.locator('.details .json-view[data-label=output] h3 [title="bytes of the stored JSON"]');
    await expect.poll(() => panelSize.textContent()).toMatch(/^\(.+\)$/);
    expect(rowSizes).toContain(`output ${(await panelSize.textContent())!.slice(1, -1)}`);
    expect(await page.locator('[data-testid=facts]').textContent()).toContain(rowSizes);
    await page.close();
  }, 120_000);

  it("opens a call that never ran, from the ledger across threads, at its own row under its model call, its run loaded", async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'a call that never ran, long ago' });
    // The first run declares `skip` and ends without running it; 501 newer entries leave that run unloaded.
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const model = await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'skip', name: 'notify', args: { to: 'ops' } }] });
    await worker.finishRun({ lease, status: 'COMPLETED' });
    await writeRunBatched(owner, worker, threadId, 250);

    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    await page.click('button:text("Tool calls across threads")');
    await page.selectOption('select[aria-label=Case]', 'never run');
    const entry = page.locator(`[data-testid=ledger] tr[data-tool-call-id="skip"][data-thread-id="${threadId}"]`);
    await entry.locator('a').click();
    // Its own row, not the model call that declared it.
    await expect.poll(() => selectedKey(page)).toMatch(/^declared:/);
    const selected = page.locator('.row.selected');
    expect(await selected.locator('.name').textContent()).toBe('notify (skip)');
    expect(await selected.getAttribute('data-status')).toBe('NEVER_RUN');
    expect(await selected.isVisible()).toBe(true);
    await expect.poll(() => page.locator('[data-testid=declared-note]').textContent()).toContain('never');
    // Under its model call, in its run.
    const keys = await page.locator('.row-space .row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')));
    expect(keys.indexOf(await selected.getAttribute('data-key'))).toBe(keys.indexOf(model.id) + 1);
    expect(keys.indexOf(model.id)).toBe(keys.indexOf(run.id) + 1);
    expect(await row(page, run.id).locator('[data-testid=load-run]').count()).toBe(0);
    // Back returns to the ledger across threads, its filter as it was.
    await page.goBack();
    await page.waitForSelector('[data-testid=ledger]');
    expect(await page.locator('select[aria-label=Case]').inputValue()).toBe('NEVER_RUN');
    await page.goForward();
    // Its address reopens it.
    await expect.poll(() => selectedKey(page)).toMatch(/^declared:/);
    const key = (await selected.getAttribute('data-key'))!;
    expect(page.url()).toBe(`${origin}/#thread=${threadId}&audit=${key}`);
    await page.reload();
    await page.waitForSelector('section.timeline');
    await expect.poll(() => selectedKey(page)).toBe(key);
    expect(await page.locator('.row.selected .name').textContent()).toBe('notify (skip)');
    await page.close();
  }, 300_000);

  it("reaches the failing call of the issue's thread, 30 runs × 26 entries minutes apart with one failing tool in run 7, in one key from opening it", async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: '30 runs, one failing tool in run 7' });
    // 13 model calls each with its tool: 26 entries a run, about 6.3 s long, runs three minutes apart.
    const base = Date.now() - 30 * 3 * 60_000;
    const runs: Awaited<ReturnType<typeof writeRunBatched>>[] = [];
    for (let i = 1; i <= 30; i++) {
      runs.push(await writeRunBatched(owner, worker, threadId, 13, i === 7 ? 5 : undefined, { answer: false, startAt: base + (i - 1) * 3 * 60_000 }));
    }
    const failing = runs[6]!;

    const page = await newPage();
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('In this thread: 1 tool failed');
    expect(await page.locator('.row.selected').count()).toBe(0);
    // It opens at its newest activity: run 7 out of sight, among the 280 oldest entries not loaded.
    await expect.poll(() => row(page, runs[29]!.lastAnswer).isVisible()).toBe(true);
    expect(await row(page, failing.failingTool!).count()).toBe(0);
    // The one action: a key.
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(failing.failingTool);
    await expect.poll(() => row(page, failing.failingTool!).isVisible()).toBe(true);
    expect(await row(page, failing.failingTool!).locator('.reason').textContent()).toBe('permission denied');
    await expect.poll(() => page.locator('[data-testid=facts]').textContent()).toContain(failing.failingTool);
    expect(await row(page, failing.runId).locator('[data-testid=run-failures]').textContent()).toBe('1 tool failed');
    expect(await row(page, failing.runId).locator('[data-testid=load-run]').count()).toBe(0);
    await page.close();
  }, 300_000);

  it('opens a thread of 100 runs and 2,300 entries at its newest activity, with the failure in it marked and reached in one key', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: '100 runs, 2,300 entries' });
    const runs: Awaited<ReturnType<typeof writeRunBatched>>[] = [];
    for (let i = 1; i <= 100; i++) runs.push(await writeRunBatched(owner, worker, threadId, 11, i === 7 ? 2 : undefined));
    const failing = runs[6]!;

    const page = await newPage({ width: 1280, height: 720 });
    await signIn(page, who.owner);
    await openThread(page, `#thread=${threadId}`);
    // The newest activity in sight; the thread's totals and failures are the server's, all 2,300 entries'.
    await expect.poll(() => row(page, runs[99]!.lastAnswer).isVisible()).toBe(true);
    await expect.poll(() => page.locator('[data-testid=thread-tokens]').textContent()).toBe(' · 120,000 → 12,000 tokens in this thread');
    await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('In this thread: 1 tool failed');
    // Run 7 (scrolled up to: only rows in sight are drawn) is not loaded, and says so, with its failure and its own numbers.
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    const run7 = row(page, failing.runId);
    await expect.poll(() => run7.locator('[data-testid=load-run]').textContent()).toBe('23 entries not loaded · load');
    expect(await run7.locator('[data-testid=run-failures]').textContent()).toBe('1 tool failed');
    expect(await run7.locator('.tokens').textContent()).toBe('1,200 → 120 tokens');
    // Errors only: the one run holding the failure, not the 78 runs whose entries are not loaded.
    await page.click('[data-testid=errors-only]');
    await expect.poll(() => page.locator('.row-space .row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')))).toEqual([failing.runId]);
    await page.click('[data-testid=errors-only]');
    // One key: the failing call, its run loaded.
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(failing.failingTool);
    await expect.poll(() => row(page, failing.failingTool!).locator('.reason').textContent()).toBe('permission denied');
    // Rows loaded above the tail are not "new rows below".
    expect(await page.locator('[data-testid=new-activity]').count()).toBe(0);
    await saveScreenshot(page, 'timeline-long-thread-failure.png');
    await page.close();
  }, 600_000);
});
