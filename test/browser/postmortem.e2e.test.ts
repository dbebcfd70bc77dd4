// A thread as an engineer writing a postmortem uses it, in headless Chromium against the server
// process: the timeline printed (or saved as PDF) for the document.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** The pages of a PDF Chromium printed (its page objects: `/Type /Page`, not the `/Pages` tree). */
const pageCount = (pdf: Buffer) => pdf.toString('latin1').match(/\/Type\s*\/Page(?!s)/g)?.length ?? 0;

describe.skipIf(!haveChromium && !browserRequired)(`a thread printed for a postmortem (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it('prints every row of the view on as many sheets as they take, payloads whole and the bars in their colours, without the search form', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'printed');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    let sequence = 0;
    for (let i = 0; i < 40; i++) {
      await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: ++sequence, model: 'gpt-x' });
      await worker.recordModelFinished({ lease, operationId: `m${i}`, status: 'COMPLETED', sequence: ++sequence, toolCalls: [{ id: `c${i}`, name: 'pay', args: { i } }] });
      await worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'pay', effectiveInput: { i }, sequence: ++sequence });
      await worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: { content: i === 0 ? `declined ${'x'.repeat(3000)}` : 'ok', status: i === 0 ? 'error' : 'success' }, sequence: ++sequence });
    }
    await worker.finishRun({ lease, status: 'COMPLETED' });
    const failed = (await owner.threadAudits(threadId)).items.find((audit) => audit.status === 'FAILED')!;

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${failed.id}`);
    await page.waitForSelector('.details [data-testid=facts]');
    // 81 rows (the run, 40 model calls, 40 tools), the window shows about 20: the rest is on later sheets.
    expect(await page.locator('.row').count()).toBeLessThan(81);
    expect(pageCount(await page.pdf({ format: 'A4' }))).toBeGreaterThan(2);

    await page.emulateMedia({ media: 'print' });
    await expect.poll(() => page.locator('.row').count()).toBe(81);
    const printed = await page.evaluate(() => {
      const style = (selector: string) => getComputedStyle(document.querySelector(selector)!);
      const pre = document.querySelector('.details .json-view pre')!;
      return {
        rowPosition: style('.row-space > .row').position,
        barColours: style('.bar.FAILED').printColorAdjust,
        payloadCut: pre.scrollHeight > pre.clientHeight + 1 || pre.scrollWidth > pre.clientWidth + 1,
        searchShown: style('form.search').display !== 'none',
      };
    });
    expect(printed).toEqual({ rowPosition: 'static', barColours: 'exact', payloadCut: false, searchShown: false });
    await page.close();
  }, 120_000);

  it('quotes a call\'s times, a thread\'s latest activity and the Activity view\'s times with their offset from UTC, so colleagues in other zones read the same moment', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'quoted times');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const observedAt = '2026-12-06T13:55:37.286Z';
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x', observedAt });
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 1, toolCalls: [{ id: 'c1', name: 'pay', args: {} }], observedAt });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'pay', effectiveInput: {}, sequence: 2, observedAt });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'declined', status: 'error' }, sequence: 3 });
    for (const [timezoneId, shown] of [['America/New_York', '2026-12-06 08:55:37.286 UTC-05:00'], ['Asia/Kolkata', '2026-12-06 19:25:37.286 UTC+05:30'], ['UTC', '2026-12-06 13:55:37.286 UTC']]) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId });
      const page = await context.newPage();
      await signIn(page, origin, who.owner);
      await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
      await expect.poll(() => page.locator('[data-testid=facts]').textContent()).toContain(`started (runtime clock)${shown}`);
      // The ruler's clock times ("08:55:37") say their zone beside them.
      expect(await page.locator('.ruler-row .label').textContent()).toContain(shown!.split(' ')[2]);
      // A search hit's time, the same way.
      await page.fill('input.search-name', 'pay');
      await page.click('form.search button[type=submit]');
      await expect.poll(() => page.locator('[data-testid=search-results] li').first().textContent()).toContain(` · ${shown}`);
      // The thread list's latest activity and the Activity view's times (the failure ended now, as the server took it): with the offset too.
      const offset = shown!.split(' ')[2]!.replace('+', '\\+');
      const zoned = new RegExp(`\\d\\d:\\d\\d:\\d\\d\\.\\d{3} ${offset}$`);
      await page.locator('a:text("← threads")').click();
      await expect.poll(() => page.locator(`section.threads li[data-thread-id="${threadId}"]`).textContent()).toMatch(zoned);
      await page.goto(`${origin}/#activity`);
      const failure = page.locator(`[data-testid=activity-failures] li:has(a[href*="${tool.id}"]) time`);
      await expect.poll(() => failure.getAttribute('title')).toMatch(zoned);
      const zone = new RegExp(` ${offset}$`);
      expect(await page.locator('[data-testid=activity-at]').textContent()).toMatch(zone);
      expect(await page.locator('[data-testid=activity-buckets] tbody th').first().textContent()).toMatch(zone);
      await context.close();
    }
  });

  it('links to a row as the thread shows: the zoom, Errors only and the search stay when the link is followed in the same tab', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'row linked');
    const at = (seconds: number) => new Date(Date.parse('2026-12-06T10:00:00.000Z') + seconds * 1000).toISOString();
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x', observedAt: at(0) });
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'pay', args: {} }], observedAt: at(1) });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'pay', effectiveInput: {}, sequence: 3, observedAt: at(2) });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'declined', status: 'error' }, sequence: 4, observedAt: at(3) });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&errors&from=${at(-1)}&to=${at(4)}`);
    await page.fill('input.search-name', 'pay');
    await page.click('form.search button[type=submit]');
    await page.locator('[data-testid=search-results] li').first().waitFor();
    await page.locator(`.row[data-key="${tool.id}"] .name`).click();
    await expect.poll(() => page.url()).toContain(`&audit=${tool.id}`);
    const shown = page.url();
    expect(shown).toMatch(/&errors.*&from=.*&to=.*&name=pay/);
    const link = page.locator('[data-testid=row-link]');
    expect(await link.getAttribute('href')).toBe(new URL(shown).hash);
    await link.click();
    expect(page.url()).toBe(shown);
    expect(await page.locator('.zoom-out').count()).toBe(1);
    expect(await page.locator('[data-testid=errors-only]').getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('[data-testid=search-results] li').count()).toBe(1);
    await page.close();
  });

  it('shares a zoom as a link: the span shown is in the address, and a colleague opening it sees the same span', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'zoom shared');
    const runAt = async (observedAt: string) => {
      const run = await owner.createRun({ threadId });
      const lease = await worker.claimRun(run.id, 600);
      await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x', observedAt });
      await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [], observedAt: new Date(Date.parse(observedAt) + 1500).toISOString() });
      await worker.finishRun({ lease, status: 'COMPLETED' });
      return run.id;
    };
    const first = await runAt('2026-12-06T10:00:00.000Z');
    const second = await runAt('2026-12-06T10:30:00.000Z');
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`.row[data-key="${first}"] .zoom-run`).click();
    await expect.poll(() => page.url()).toMatch(/&from=2026-12-06T09:59:59\.\d{3}Z&to=2026-12-06T10:00:\d\d\.\d{3}Z$/);
    const ticks = await page.locator('.ruler-row .tick').allTextContents();

    const colleague = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(colleague, origin, who.owner);
    await openThread(colleague, origin, new URL(page.url()).hash);
    await expect.poll(() => colleague.locator('.zoom-out').count()).toBe(1);
    expect(await colleague.locator('.ruler-row .tick').allTextContents()).toEqual(ticks);
    expect(await colleague.locator(`.row[data-key="${second}"] .bar`).count()).toBe(0);
    expect(colleague.url()).toBe(page.url());
    // Whole thread: the span leaves the address.
    await colleague.locator('.zoom-out').click();
    await expect.poll(() => colleague.url()).toBe(`${origin}/#thread=${threadId}`);
    await page.close();
    await colleague.close();
  });

  it('prints a dark-mode reader\'s page in dark ink, as paper takes it: the dark colours are for the screen', async () => {
    const { who, threadId } = await superadminThread(server.url, 'printed in the dark');
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, colorScheme: 'dark' });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const ink = () => page.evaluate(() => [':root', '.thread-head', '.muted'].map((selector) => getComputedStyle(document.querySelector(selector)!).color));
    expect((await ink())[0]).toBe('rgb(229, 231, 235)');
    await page.emulateMedia({ media: 'print' });
    expect(await ink()).toEqual(['rgb(29, 35, 48)', 'rgb(29, 35, 48)', 'rgb(107, 114, 128)']);
    await page.close();
  });
});
