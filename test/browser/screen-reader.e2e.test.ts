// The thread's timeline as a blind engineer debugging an agent hears it, through Chromium's
// accessibility tree and the keyboard alone: what a live run's writes say (and how often), what
// each row is called, and where focus goes.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { Relay } from './relay.js';
import { endedRunsOfOneModelCall, openThread, pageSuite, runWithOneTool, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** A running run whose model declared `search` (`k1`, started) and `lookup` (`k2`, not started); the page open on its thread. */
async function liveRun() {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'listening');
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'k1', name: 'search', args: {} }, { id: 'k2', name: 'lookup', args: {} }] });
  const search = await worker.recordToolStarted({ lease, toolCallId: 'k1', name: 'search', effectiveInput: {}, sequence: 3 });
  const page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
  await signIn(page, origin, who.owner);
  await openThread(page, origin, `#thread=${threadId}`);
  await page.locator(`#row-${search.id}`).waitFor();
  return { page, worker, lease, searchId: search.id };
}

/** Starts noting each text a live region of the page's main part (or of `within`) says (a region's text as it changes to it); `said()` reads them. */
async function listen(page: Page, within = 'main') {
  await page.evaluate((within) => {
    const said: string[] = ((window as unknown as { said: string[] }).said = []);
    const last = new Map<Element, string>();
    new MutationObserver(() => {
      for (const region of document.querySelectorAll(`${within} [role=status], ${within} [role=alert], ${within} [aria-live]`)) {
        const text = region.textContent ?? '';
        if (text && last.get(region) !== text) said.push(text);
        last.set(region, text);
      }
    }).observe(document.querySelector(within)!, { subtree: true, childList: true, characterData: true });
  }, within);
  return () => page.evaluate(() => (window as unknown as { said: string[] }).said);
}

describe.skipIf(!haveChromium && !browserRequired)(`the timeline for a screen reader (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it("says a live run's failure and its new rows politely, a few times over 10 s of writes, and leaves the reader's focus and selection be", async () => {
    const { page, worker, lease, searchId } = await liveRun();
    const grid = page.getByRole('grid');
    await grid.focus();
    await page.keyboard.press('Home');
    const selected = await grid.getAttribute('aria-activedescendant');
    expect(selected).not.toBeNull();
    const said = await listen(page);
    // About ten writes a second for ten seconds, the tool failing in the first of them.
    let sequence = 4;
    await worker.recordToolFinished({ lease, toolCallId: 'k1', output: { content: 'quota exceeded\nretry later', status: 'error' }, sequence: sequence++ });
    const until = Date.now() + 10_000;
    for (let i = 0; Date.now() < until; i++) {
      const write = i % 2 === 0
        ? worker.recordModelStarted({ lease, operationId: `m${i >> 1}`, sequence: sequence++, model: 'gpt-x' })
        : worker.recordModelFinished({ lease, operationId: `m${i >> 1}`, status: 'COMPLETED', sequence: sequence++ });
      await Promise.all([write, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    await expect.poll(() => page.locator(`#row-${searchId}`).getAttribute('data-status')).toBe('FAILED');
    await expect.poll(async () => (await said()).join(' | ')).toMatch(/search \(k1\) failed: quota exceeded/);
    await expect.poll(async () => (await said()).join(' | ')).toMatch(/\d+ new rows/);
    // Told in a polite status, in a few summaries, not once per write.
    expect(await page.locator('[data-testid=live-news]').getAttribute('role')).toBe('status');
    const told = await said();
    expect(told.length, told.join('\n')).toBeLessThanOrEqual(4);
    // The reader stays where they were.
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
    expect(await grid.getAttribute('aria-activedescendant')).toBe(selected);
    await page.close();
  }, 120_000);
  it('keeps the focus on the timeline when the keyboard takes the cue for new rows below, which goes away', async () => {
    const { page, worker, lease } = await liveRun();
    await page.setViewportSize({ width: 1280, height: 420 });
    for (let i = 0; i < 12; i++) await worker.recordModelStarted({ lease, operationId: `more${i}`, sequence: 10 + i, model: 'gpt-x' });
    await page.locator('.row', { hasText: 'call 13' }).waitFor();
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    await worker.recordModelStarted({ lease, operationId: 'late', sequence: 30, model: 'gpt-x' });
    const cue = page.getByRole('button', { name: /new rows? below/ });
    await cue.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => cue.count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
    await page.close();
  }, 120_000);
  it("names each row by what it is, its status, failures, duration and why it ended, once each", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'each ending');
    await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', output: { content: 'permission denied\nat line 3', status: 'error' } });
    const cancelled = await owner.createRun({ threadId });
    await owner.cancelRun(cancelled.id);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${cancelled.id}`).waitFor();
    const names = await page.getByRole('grid').ariaSnapshot();
    const name = (pattern: RegExp) => names.split('\n').map((line) => /^\s*- row "(.*)"/.exec(line)?.[1]).find((found) => found && pattern.test(found));
    expect(name(/^fetch/)).toMatch(/^fetch \(c1\), failed, [\d.]+ (ms|s), permission denied$/);
    // A cancelled run says so once, not again as its reason.
    expect(name(/^run 2/)).toMatch(/^run 2 · \w+, cancelled(, [\d.]+ (ms|s))?$/);
    await page.close();
  }, 120_000);
  it("ties a refused search text to the box (invalid, described by the reason) and says each search's count from a status already in the page", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'searched aloud');
    await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', output: { content: 'permission denied', status: 'error' } });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const box = page.getByRole('searchbox', { name: 'Search audits' });
    const description = () => box.evaluate((input) => [...(input.getAttribute('aria-describedby') ?? '').split(' ')].map((id) => document.getElementById(id)?.textContent ?? '').join(' ').trim());
    // The live regions in the page before the search: only a change of one of them is read out.
    const markRegions = () => page.evaluate(() => document.querySelectorAll('[role=status], [aria-live]').forEach((region) => region.setAttribute('data-was-there', '')));
    const countSaidBy = (pattern: RegExp) => page.locator('[role=status][data-was-there]', { hasText: pattern });
    for (const [text, refusal] of [['ab', /at least three characters/], ['x'.repeat(300), /longer than its limit of 256 characters/]] as const) {
      await box.fill(text);
      await box.press('Enter');
      await expect.poll(() => box.getAttribute('aria-invalid')).toBe('true');
      // The box is already invalid from the refusal before: its reason is what changes.
      await expect.poll(description).toMatch(refusal);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('search');
    }
    // A search that answers: the box is valid again, and its count is said.
    await page.getByRole('button', { name: 'Clear' }).click();
    await markRegions();
    await box.fill('permission');
    await box.press('Enter');
    await expect.poll(() => countSaidBy(/^1 matching audit/).count()).toBe(1);
    expect(await box.getAttribute('aria-invalid')).toBeNull();
    expect(await description()).toBe('');
    await box.fill('zzzqqq');
    await box.press('Enter');
    await expect.poll(() => countSaidBy(/^No audit matches/).count()).toBe(1);
    await page.close();
  }, 120_000);
  it("keeps the runs' zoom buttons out of the Tab order, and z zooms to the selected row's run (the keys' help says so)", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'five runs');
    const calls = await endedRunsOfOneModelCall({ owner, worker, threadId }, 5);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${calls[4]!.id}`).waitFor();
    expect(await page.locator('.zoom-run').count()).toBe(5);
    // Tab from the rows leaves the grid: no stop on each run's button.
    const grid = page.getByRole('grid');
    await grid.focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest('[role=grid]')))).toBe(false);
    // z on a model call's row zooms to its run, as the run's button does.
    const address = () => page.evaluate(() => location.hash.replace(/&audit=[^&]*/, ''));
    await page.locator(`#row-${calls[1]!.id}`).click();
    await grid.focus();
    await page.keyboard.press('z');
    await expect.poll(address).toMatch(/&from=.*&to=/);
    const byKey = await address();
    await page.getByRole('button', { name: 'Whole thread' }).click();
    await expect.poll(address).not.toMatch(/&from=/);
    await page.locator(`#row-${calls[1]!.runId} .zoom-run`).click();
    await expect.poll(address).toMatch(/&from=/);
    expect(await address()).toBe(byKey);
    expect(await page.locator('.keys-help').textContent()).toMatch(/z zoom to the run/);
    expect(await grid.getAttribute('aria-label')).toMatch(/z zooms to the selected row's run/);
    await page.close();
  }, 120_000);
  it('says politely, once each, that the connection dropped and that it is live again, from the header', async () => {
    const relay = new Relay(Number(new URL(server.url).port));
    const through = await relay.listen();
    try {
      const { who, threadId } = await superadminThread(server.url, 'through a dropped connection');
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await signIn(page, through, who.owner);
      await openThread(page, through, `#thread=${threadId}`);
      const said = await listen(page, 'header');
      relay.disconnect();
      await page.waitForSelector('[data-testid=connection]:text("reconnecting")');
      await expect.poll(said).toEqual(['Connection lost; reconnecting…']);
      relay.reconnect();
      await page.waitForSelector('[data-testid=connection]:text("live")');
      await expect.poll(said).toEqual(['Connection lost; reconnecting…', 'Live again.']);
      expect(await page.locator('header [role=status]', { hasText: 'Live again.' }).count()).toBe(1);
      await page.close();
    } finally {
      relay.close();
    }
  }, 120_000);
  it("reads a row's status, duration, reason and sizes as separate words, not run together", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'cells apart');
    const tool = await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', input: { url: 'b' }, output: { content: 'permission denied', status: 'error' } });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const row = page.locator(`#row-${tool.id}`);
    await row.waitFor();
    const seen = () => row.locator('.info > :not(.visually-hidden)').allInnerTexts();
    const before = await seen();
    const snapshot = await row.ariaSnapshot();
    const cells = snapshot.split('\n').map((line) => /^\s*- gridcell "(.*)"/.exec(line)?.[1]).filter(Boolean);
    expect(cells.find((cell) => cell!.startsWith('FAILED')), snapshot).toMatch(/^FAILED, [\d.]+ (ms|s), permission denied, input \d+ B · output \d+ B · error \d+ B$/);
    // What a sighted reader sees is as it was.
    expect(before.slice(0, 3)).toEqual(['FAILED', expect.stringMatching(/ms|s$/), 'permission denied']);
    // The separators draw nothing: their text's widths. Not their boxes': the cell is cut short
    // (text-overflow), and the ellipsis is drawn in the box the cut falls in, a separator's when
    // the parts before it end there (with a duration of 100 ms or more here, 14 px wide).
    const drawn = await page.locator('.info .visually-hidden').evaluateAll((marks) =>
      marks.map((mark) => {
        const text = document.createRange();
        text.selectNodeContents(mark);
        return text.getBoundingClientRect().width;
      }),
    );
    expect(drawn.filter((width) => width > 0)).toEqual([]);
    await page.close();
  }, 120_000);
  it("names a payload's heading by the payload alone, says what Expand opens and that it is open, says a copy was made, and Escape takes the reader back to the rows", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'payloads aloud');
    const tool = await runWithOneTool({ owner, worker, threadId }, { name: 'fetch', args: { url: 'a' }, input: { url: 'b' }, output: { content: 'denied '.repeat(500), status: 'error' } });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    const page = await context.newPage();
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
    const details = page.getByRole('complementary', { name: 'Details of fetch (c1)' });
    await details.locator('.diff').waitFor();
    // Jumping by headings reads the payload's name and size, not its buttons too.
    expect(await details.getByRole('heading', { name: /^output/ }).textContent()).toMatch(/^output \([\d.]+ kB\)$/);
    const expand = details.getByRole('button', { name: 'Expand all output' });
    expect(await expand.getAttribute('aria-expanded')).toBe('false');
    await expand.focus();
    await page.keyboard.press('Enter');
    const collapse = details.getByRole('button', { name: 'Collapse output' });
    expect(await collapse.getAttribute('aria-expanded')).toBe('true');
    expect(await collapse.evaluate((button) => button === document.activeElement)).toBe(true);
    // A copy says it was made, where a screen reader hears it.
    await details.getByRole('button', { name: 'Copy output' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => details.getByRole('status').filter({ hasText: 'Copied output' }).count()).toBe(1);
    // Escape anywhere in the details: back on the rows, the same row selected.
    await page.keyboard.press('Escape');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
    expect(await page.getByRole('grid').getAttribute('aria-activedescendant')).toBe(`row-${tool.id}`);
    await context.close();
  }, 120_000);
});
