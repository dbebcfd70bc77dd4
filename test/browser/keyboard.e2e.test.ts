// The page as an engineer who never touches the mouse debugs with it (the keyboard and a screen
// magnifier only): how many Tab stops a task takes, where focus lands after each action (a load,
// a view change, a row going away), and that every action has a key.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { endedRunsOfOneModelCall, openThread, pageSuite, runWithOneTool, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** What holds the focus, named: its tag, its role, and its text or label (BODY when nothing does). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement;
    if (!element || element === document.body) return 'BODY';
    const name = element.getAttribute('aria-label') ?? element.textContent?.trim().slice(0, 60) ?? '';
    return `${element.tagName.toLowerCase()}${element.getAttribute('role') ? `[${element.getAttribute('role')}]` : ''}: ${name}`;
  });

/** Whether the focus is on the timeline's rows (the grid). */
const onRows = async (page: Page) => (await focused(page)).startsWith('div[grid]');

/**
 * `count` tool calls of `name` in the run of `lease`, declared by one model call (`operationId`) and
 * left running, from `sequence` on: the calls' writes sent together.
 */
async function manyTools(worker: AuditClient, lease: Awaited<ReturnType<AuditClient['claimRun']>>, operationId: string, name: string, count: number) {
  const calls = Array.from({ length: count }, (_, i) => ({ id: `${operationId}-${i}`, name, args: {} }));
  await worker.recordModelStarted({ lease, operationId, sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId, status: 'COMPLETED', sequence: 2, toolCalls: calls });
  for (let at = 0; at < count; at += 50) {
    await Promise.all(calls.slice(at, at + 50).map((call, i) => worker.recordToolStarted({ lease, toolCallId: call.id, name, effectiveInput: {}, sequence: 3 + at + i })));
  }
}

/**
 * A thread of more than one page (500) of entries: run 1 (interrupted, 4 entries) and run 2 (its
 * resume, 3 entries) older than the newest 500, which are run 3's. Written once, for the tests that
 * only read it.
 */
let longThread: ReturnType<typeof writeLongThread> | undefined;
async function writeLongThread() {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'long, with a resume');
  const first = await owner.createRun({ threadId });
  let lease = await worker.claimRun(first.id, 600);
  await manyTools(worker, lease, 'm1', 'fetch', 3);
  await worker.finishRun({ lease, status: 'INTERRUPTED' });
  const resumed = await owner.createRun({ threadId, resumeFromRunId: first.id });
  lease = await worker.claimRun(resumed.id, 600);
  await manyTools(worker, lease, 'm2', 'fetch', 2);
  await worker.finishRun({ lease, status: 'COMPLETED' });
  const last = await owner.createRun({ threadId });
  lease = await worker.claimRun(last.id, 600);
  await manyTools(worker, lease, 'm3', 'lookup', 499);
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { who, threadId, runs: [first.id, resumed.id, last.id] };
}

/** The long thread (longThread) open in a new page. */
async function longThreadWithResume() {
  const { who, threadId, runs } = await (longThread ??= writeLongThread());
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await signIn(page, origin, who.owner);
  await openThread(page, origin, `#thread=${threadId}`);
  await page.locator('.row-space .row').first().waitFor();
  return { page, runs };
}

/** A new owner's thread with one failed tool call (fetch: permission denied), its owner signed in on a new page. */
async function signedInWithAFailedTool(title: string) {
  const thread = await superadminThread(server.url, title);
  const tool = await runWithOneTool(thread, { name: 'fetch', output: { content: 'permission denied', status: 'error' } });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await signIn(page, origin, thread.who.owner);
  return { threadId: thread.threadId, tool, page };
}

/** signedInWithAFailedTool, on the Activity view (15 min), with its link to the failed call. */
async function activityWithAFailure(title: string) {
  const { threadId, tool, page } = await signedInWithAFailedTool(title);
  await page.goto(`${origin}/#activity&window=900`);
  return { threadId, tool, page, link: page.locator(`[data-testid=activity-failures] a[href="#thread=${threadId}&audit=${tool.id}"]`) };
}

describe.skipIf(!haveChromium && !browserRequired)(`the page by the keyboard alone (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it("makes the timeline's rows one Tab stop: a run's 'load' and 'resumes' are reached from its details, and focus stays on the rows after", async () => {
    const { page, runs } = await longThreadWithResume();
    const grid = page.getByRole('grid');
    await grid.focus();
    await page.keyboard.press('Home');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(runs[0]);
    // The older runs' rows are drawn, with their buttons and links for the mouse.
    await expect.poll(() => grid.locator('.load-run').count()).toBe(2);
    expect(await grid.locator('a.resumed-from').count()).toBe(1);
    // None of them is a Tab stop: Tab leaves the rows at once, to the selected run's details.
    expect(await grid.locator('a[href], button').evaluateAll((elements) => elements.filter((element) => (element as HTMLElement).tabIndex >= 0).length)).toBe(0);
    await page.keyboard.press('Tab');
    expect(await focused(page)).toMatch(/^button: Load the 4 entries not loaded/);
    // Its entries load, and focus is on the rows (the button has gone), the run still selected.
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator(`#row-${runs[0]} .load-run`).count()).toBe(0);
    await expect.poll(() => onRows(page)).toBe(true);
    expect(await page.locator('.row.selected').getAttribute('data-key')).toBe(runs[0]);
    // The resume's details lead to the run it resumes: selected, the focus on the rows.
    await page.locator(`#row-${runs[1]}`).click();
    await grid.focus();
    await page.keyboard.press('Tab');
    expect(await focused(page)).toMatch(/^button: Load the 3 entries not loaded/);
    await page.keyboard.press('Tab');
    expect(await focused(page)).toMatch(/^button: Go to run 1 · \w+, which this run resumes$/);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(runs[0]);
    expect(await onRows(page)).toBe(true);
    await page.close();
  }, 180_000);

  it("leaves the focus on the rows when 'Load older entries' has loaded the last of them and goes", async () => {
    const { page } = await longThreadWithResume();
    const button = page.getByRole('button', { name: 'Load older entries' });
    await button.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('[data-testid=loaded-count]').textContent()).toBe('507 entries loaded');
    expect(await button.count()).toBe(0);
    await expect.poll(() => focused(page)).toMatch(/^div\[grid\]/);
    await page.close();
  }, 180_000);

  it("puts the focus on the rows when an entry of the thread's Tool calls opens its row there", async () => {
    const { threadId, tool, page } = await signedInWithAFailedTool('a ledger entry opened');
    await openThread(page, origin, `#thread=${threadId}&calls`);
    const entry = page.locator('.ledger tbody a', { hasText: 'fetch' });
    await entry.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(tool.id);
    await expect.poll(() => focused(page)).toMatch(/^div\[grid\]/);
    expect(await page.getByRole('grid').getAttribute('aria-activedescendant')).toBe(`row-${tool.id}`);
    await page.close();
  }, 120_000);

  it("moves the focus to the next entry when the entry it was on leaves the filtered Tool calls (a running call ended)", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'running calls end');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await manyTools(worker, lease, 'm1', 'fetch', 2);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&calls`);
    await page.getByRole('combobox', { name: 'Tool-call status' }).selectOption('RUNNING');
    const entries = page.locator('.ledger tbody tr');
    await expect.poll(() => entries.count()).toBe(2);
    await page.locator('.ledger tbody tr[data-tool-call-id=m1-1] a').focus();
    await worker.recordToolFinished({ lease, toolCallId: 'm1-1', output: { content: 'ok' }, sequence: 10 });
    await expect.poll(() => entries.count()).toBe(1);
    await expect.poll(() => page.evaluate(() => document.activeElement?.closest('tr')?.dataset.toolCallId ?? document.activeElement?.tagName)).toBe('m1-0');
    // The last one going leaves the focus on the filters.
    await worker.recordToolFinished({ lease, toolCallId: 'm1-0', output: { content: 'ok' }, sequence: 11 });
    await expect.poll(() => entries.count()).toBe(0);
    await expect.poll(() => focused(page)).toBe('select: Tool-call status');
    await page.close();
  }, 120_000);

  it('zooms back out to the whole thread with Shift+Z, as z zoomed in to a run (the keys\' help says so)', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'zoomed in and out');
    const calls = await endedRunsOfOneModelCall({ owner, worker, threadId }, 2);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${calls[0]!.id}`);
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(calls[0]!.id);
    const grid = page.getByRole('grid');
    await grid.focus();
    const zoomed = () => page.evaluate(() => /&from=.*&to=/.test(location.hash));
    await page.keyboard.press('z');
    await expect.poll(zoomed).toBe(true);
    await page.keyboard.press('Shift+Z');
    await expect.poll(zoomed).toBe(false);
    expect(await page.getByRole('button', { name: 'Whole thread' }).count()).toBe(0);
    expect(await onRows(page)).toBe(true);
    expect(await page.locator('.row.selected').getAttribute('data-key')).toBe(calls[0]!.id);
    expect(await page.locator('.keys-help').textContent()).toMatch(/Z zoom out/);
    expect(await grid.getAttribute('aria-label')).toMatch(/Shift\+Z zooms back out to the whole thread/);
    // 'Whole thread' pressed goes with the zoom: the rows take its focus.
    await page.keyboard.press('z');
    const wholeThread = page.getByRole('button', { name: 'Whole thread' });
    await wholeThread.focus();
    await page.keyboard.press('Enter');
    await expect.poll(zoomed).toBe(false);
    await expect.poll(() => onRows(page)).toBe(true);
    await page.close();
  }, 120_000);

  it("keeps a search to tool calls or to model calls with a select the keyboard reaches: kept in the address, its count saying which", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'a failed tool and the model calls after it');
    const tool = await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', output: { content: 'permission denied', status: 'error' } });
    // The next model call's input holds the conversation, the tool's error in it.
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const input = { messages: [{ role: 'user', content: 'fetch it' }, { role: 'tool', content: 'permission denied' }] };
    const model = await worker.recordModelStarted({ lease, operationId: 'm2', sequence: 1, model: 'gpt-x', input });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const box = page.getByRole('searchbox', { name: 'Search audits' });
    await box.fill('permission denied');
    await box.press('Enter');
    const hitIds = () => page.locator('[data-testid=search-results] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')).sort());
    await expect.poll(hitIds).toEqual([tool.id, model.id].sort());
    // From the box, Tab reaches the kind; an arrow key chooses, and the search is read again.
    const kind = page.getByRole('combobox', { name: 'Kind' });
    for (let i = 0; i < 5 && !(await kind.evaluate((select) => select === document.activeElement)); i++) await page.keyboard.press('Tab');
    expect(await focused(page)).toMatch(/^select: Kind/);
    await page.keyboard.press('ArrowDown');
    expect(await kind.inputValue()).toBe('TOOL');
    await expect.poll(hitIds).toEqual([tool.id]);
    const count = page.locator('[data-testid=search-results] [role=status]');
    expect(await count.textContent()).toBe('1 matching tool call, newest first');
    await expect.poll(() => new URL(page.url()).hash).toBe(`#thread=${threadId}&q=permission+denied&kind=TOOL`);
    // A reload shows the same search.
    await page.reload();
    await expect.poll(hitIds).toEqual([tool.id]);
    expect(await kind.inputValue()).toBe('TOOL');
    await kind.selectOption('MODEL');
    await expect.poll(hitIds).toEqual([model.id]);
    expect(await count.textContent()).toBe('1 matching model call: those with an error first, each newest first');
    await kind.selectOption('');
    await expect.poll(hitIds).toEqual([tool.id, model.id].sort());
    expect(new URL(page.url()).hash).not.toMatch(/kind=/);
    await page.close();
  }, 120_000);

  it("puts the focus on the rows when a search hit opens its row in the thread shown, as an entry of its Tool calls does", async () => {
    const { threadId, tool, page } = await signedInWithAFailedTool('a hit in the thread shown');
    await openThread(page, origin, `#thread=${threadId}`);
    const box = page.getByRole('searchbox', { name: 'Search audits' });
    await box.fill('permission denied');
    await box.press('Enter');
    const hit = page.locator(`[data-testid=search-results] li[data-audit-id="${tool.id}"] a`);
    await hit.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(tool.id);
    await expect.poll(() => focused(page)).toMatch(/^div\[grid\]/);
    expect(await page.getByRole('grid').getAttribute('aria-activedescendant')).toBe(`row-${tool.id}`);
    // From the thread's Tool calls too, which the timeline replaces.
    await page.getByRole('button', { name: 'Tool calls', exact: true }).click();
    await page.locator('[data-testid=ledger] tbody tr').waitFor();
    await hit.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('grid').waitFor();
    await expect.poll(() => focused(page)).toMatch(/^div\[grid\]/);
    expect(await page.getByRole('grid').getAttribute('aria-activedescendant')).toBe(`row-${tool.id}`);
    await page.close();
  }, 120_000);

  it("moves the focus to the first thread or hit of the last page when 'More threads' or 'Next results' goes with it, not to the page's top", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'paged 0');
    for (let i = 1; i <= 20; i++) await owner.createThread({ title: `paged ${i}` });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    const focusedIn = (selector: string, attribute: string) => page.evaluate(([inside, name]) => document.activeElement?.closest(inside!)?.getAttribute(name!) ?? document.activeElement?.tagName, [selector, attribute]);
    const more = page.getByRole('button', { name: 'More threads' });
    const threads = page.locator('section.threads li');
    await more.waitFor(); // the first page is in
    let shown = 0;
    do {
      shown = await threads.count();
      await more.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => threads.count()).toBeGreaterThan(shown);
    } while (await more.count());
    await expect.poll(() => focusedIn('section.threads li', 'data-thread-id')).toBe(await threads.nth(shown).getAttribute('data-thread-id'));

    // 51 hits: a page of 50, and the last one.
    const run = await owner.createRun({ threadId });
    await manyTools(worker, await worker.claimRun(run.id, 600), 'm1', 'fetch', 51);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.getByRole('textbox', { name: 'Tool or model name (exact)' }).fill('fetch');
    await page.keyboard.press('Enter');
    const hits = page.locator('[data-testid=search-results] li');
    await expect.poll(() => hits.count()).toBe(50);
    const before = await hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')));
    await page.getByRole('button', { name: 'Next results' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => hits.count()).toBe(51);
    const added = (await hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).find((id) => !before.includes(id));
    await expect.poll(() => focusedIn('[data-testid=search-results] li', 'data-audit-id')).toBe(added);
    await page.close();
  }, 180_000);

  it("makes the Activity view's window one step of history however many arrow presses chose it: Back returns to the window before", async () => {
    const { who } = await superadminThread(server.url, 'activity windows');
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await page.goto(`${origin}/#activity&window=900`);
    const windowSelect = page.getByRole('combobox', { name: 'Window' });
    await windowSelect.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=86400');
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    expect(await windowSelect.inputValue()).toBe('900');
    // Chosen again after Back: a new step, Back returns to it.
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=3600');
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    await page.close();
  }, 120_000);

  it("puts the focus back on the Activity view's link to a thread when Back returns from that thread, not on the view's heading", async () => {
    const { threadId, tool, page, link } = await activityWithAFailure('opened from Activity');
    await link.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(tool.id);
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('href'))).toBe(`#thread=${threadId}&audit=${tool.id}`);
    await page.close();
  }, 120_000);

  it("returns to the Activity view with one Back from a thread one of its links opened while a search showed", async () => {
    const { threadId, tool, page, link } = await activityWithAFailure('opened from Activity, searched');
    const box = page.getByRole('searchbox', { name: 'Search audits' });
    await box.fill('permission denied');
    await box.press('Enter');
    await page.locator(`[data-testid=search-results] li[data-audit-id="${tool.id}"]`).waitFor();
    await link.click();
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(tool.id);
    // The search is kept in the thread's address, which the link's entry now holds.
    await expect.poll(() => new URL(page.url()).hash).toBe(`#thread=${threadId}&audit=${tool.id}&q=permission+denied&in=all`);
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    await page.locator('h1', { hasText: 'Tool activity' }).waitFor();
    await page.close();
  }, 120_000);

  it("nests the headings without a skip (h1, h2, h3…) in the timeline with a row's details open, a tool's and a model call's", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'headings in order');
    const tool = await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', args: { url: 'a' }, input: { url: 'b' }, output: { content: 'denied', status: 'error' } });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    const skips = () =>
      page.locator('h1, h2, h3, h4, h5, h6').evaluateAll((headings) =>
        headings.flatMap((heading, i) => {
          const level = Number(heading.tagName[1]);
          const before = i === 0 ? 0 : Number(headings[i - 1]!.tagName[1]);
          return level > before + 1 ? [`h${before} → h${level} "${heading.textContent?.trim().slice(0, 40)}"`] : [];
        }),
      );
    await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
    await page.locator('.details .diff').waitFor();
    expect(await skips()).toEqual([]);
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => page.locator('.details:not([aria-busy]) h2').textContent()).toMatch(/^gpt-x/);
    await page.locator('.details h3', { hasText: 'usage' }).waitFor();
    expect(await skips()).toEqual([]);
    await page.close();
  }, 120_000);
});
