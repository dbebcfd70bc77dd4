// The page's Activity view (`#activity`, docs/dashboards.md) in headless Chromium against the
// server process (PGlite, or PostgreSQL in the services pass), offline: live without a reload, a
// failure appearing among the recent failures with how long ago it ended, a cancelled call among
// its tool's other ends, a click opening the row's thread, the window and tool filter kept in the
// address (every tool of the window suggested, and only those, Back stepping through the changes), a running call's bare
// error marked, the running calls left out said, other ends charted, the chart following the
// window's width with its time labels apart, the parts lined up with the heading, what 'Other
// ends' counts said on the page, another role's refusal final (no link to the view, no loading,
// no reconnecting), axe-core clean, no request leaving the machine.
import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile, tokenFor } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { saveScreenshot } from './support/screenshots.js';
import { noteOutsideRequests, pageSuite, runWithOneTool, seriousViolations, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;
const outsideRequests: string[] = [];

async function newPage(viewport = { width: 1400, height: 900 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  noteOutsideRequests(page, origin, outsideRequests);
  return page;
}

/**
 * The best contrast ratio (WCAG's) of the chart's y-axis labels against the page's background:
 * the opaque pixels the canvas drew left of the plot, where only the labels are.
 */
const axisLabelContrast = (page: Page) =>
  page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('.activity-chart canvas')!;
    const plotLeft = document.querySelector<HTMLElement>('.activity-chart .u-over')!.offsetLeft * devicePixelRatio;
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, Math.floor(plotLeft) - 2, canvas.height);
    const luminance = ([r, g, b]: number[]) => {
      const [R, G, B] = [r!, g!, b!].map((c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4));
      return 0.2126 * R! + 0.7152 * G! + 0.0722 * B!;
    };
    const background = luminance(getComputedStyle(document.documentElement).backgroundColor.match(/\d+/g)!.map(Number));
    let best = 1;
    for (let at = 0; at < data.length; at += 4) {
      if (data[at + 3] !== 255) continue;
      const shade = luminance([data[at]!, data[at + 1]!, data[at + 2]!]);
      best = Math.max(best, (Math.max(shade, background) + 0.05) / (Math.min(shade, background) + 0.05));
    }
    return best;
  });

/**
 * The chart's width against its box's (the figure's content width), and how wide the document
 * and #app (which scrolls the page) are against the window.
 */
const widths = (page: Page) =>
  page.evaluate(() => {
    const box = document.querySelector<HTMLElement>('.activity-chart')!;
    return {
      box: box.clientWidth,
      chart: Math.round(box.querySelector('.uplot')!.getBoundingClientRect().width),
      window: innerWidth,
      document: document.documentElement.scrollWidth,
      app: document.getElementById('app')!.scrollWidth,
    };
  });

/** The view's parts whose content does not start where its heading does (their left edges, in px). */
const misaligned = (page: Page) =>
  page.evaluate(() => {
    const heading = document.querySelector('.activity h1')!.getBoundingClientRect().left;
    return [...document.querySelectorAll<HTMLElement>('.activity section')]
      .map((section) => ({ name: section.getAttribute('aria-label'), left: section.getBoundingClientRect().left + parseFloat(getComputedStyle(section).paddingLeft) }))
      .filter(({ left }) => Math.abs(left - heading) > 0.5)
      .map(({ name, left }) => `${name} starts at ${Math.round(left)} px, the heading at ${Math.round(heading)} px`);
  });

/**
 * The chart's time labels, as drawn on its canvas below the plot: the widths (CSS px) of the runs
 * of inked columns there, a run ending at 8 px of blank. Labels apart are a run each, none wider
 * than a label ("12:40pm"); labels drawn into one another make one long run.
 */
const timeLabelWidths = (page: Page) =>
  page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('.activity-chart canvas')!;
    const over = document.querySelector<HTMLElement>('.activity-chart .u-over')!;
    // Below the series drawn along zero, at the plot's bottom edge.
    const top = Math.ceil((over.offsetTop + over.offsetHeight + 3) * devicePixelRatio);
    const { data, width, height } = canvas.getContext('2d')!.getImageData(0, top, canvas.width, canvas.height - top);
    const inked = Array.from({ length: width }, (_, x) => {
      for (let y = 0; y < height; y++) if (data[(y * width + x) * 4 + 3]! > 128) return true;
      return false;
    });
    const runs: number[] = [];
    let start = -1;
    let blank = 0;
    inked.forEach((ink, x) => {
      if (ink) {
        if (start < 0) start = x;
        blank = 0;
      } else if (start >= 0 && ++blank >= 8 * devicePixelRatio) {
        runs.push(Math.round((x - blank + 1 - start) / devicePixelRatio));
        start = -1;
      }
    });
    if (start >= 0) runs.push(Math.round((width - blank - start) / devicePixelRatio));
    return runs;
  });

/** A new superadmin whose thread `title` holds one run with one failed tool call ('lookup'). */
async function superadminWithAFailure(title: string) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title });
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'lookup', args: {} }] });
  await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'lookup', effectiveInput: {}, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'quota exceeded', status: 'error' }, sequence: 4 });
  return who;
}

/** Signs in with `token` and opens the Activity view from the header's link. */
async function openActivity(page: Page, token: string) {
  await signIn(page, origin, token);
  await page.click('header a[href="#activity"]');
}

/** The Activity view at `viewport`, of a new superadmin with one failed tool call. */
async function activityWithAFailure(viewport: { width: number; height: number }): Promise<Page> {
  const who = await superadminWithAFailure('watched on a phone');
  const page = await newPage(viewport);
  await openActivity(page, who.owner);
  await page.waitForSelector('[data-testid=activity-failures] .error-line');
  await page.waitForSelector('.activity-chart canvas');
  return page;
}

describe.skipIf(!haveChromium && !browserRequired)(`the Activity view in Chromium (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
  });

  it('updates live without a reload, shows a failure with its first line and age, counts a cancelled call among other ends, sorts, keeps the window in the address, and a click opens the row', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const worker = new AuditClient({ url: server.url, token: who.worker });
    const { id: threadId } = await owner.createThread({ title: 'watched fleet' });
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({
      lease, operationId: 'plan', status: 'COMPLETED', sequence: 2,
      toolCalls: [{ id: 'c1', name: 'lookup', args: {} }, { id: 'c2', name: 'fetch', args: {} }, { id: 'c3', name: 'fetch', args: {} }],
    });
    await worker.recordToolStarted({ lease, toolCallId: 'c3', name: 'fetch', effectiveInput: {}, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c3', output: { content: 'ok' }, sequence: 4 });

    const page = await newPage();
    await openActivity(page, who.owner);
    await page.waitForSelector('[data-testid=activity-tools]');
    await expect.poll(() => page.locator('section[aria-label="Running now"] h2').textContent()).toBe('Running now (0)');
    // The chart library is loaded on demand (chart.js): it draws once that arrives.
    await expect.poll(() => page.locator('.activity-chart canvas').count()).toBeGreaterThan(0);

    // Live: a tool starts, and the view shows it running without a reload.
    const started = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'lookup', effectiveInput: {}, sequence: 5 });
    await expect.poll(() => page.locator('[data-testid=activity-running] tbody tr').count()).toBe(1);
    const running = page.locator('[data-testid=activity-running] tbody tr');
    expect(await running.locator('td').allTextContents()).toEqual([
      'lookup', 'watched fleet', `run · ${run.id.slice(-6)}`, expect.any(String), expect.stringMatching(/ (s|min)/),
    ]);

    // A failure appears among the recent failures with its error's first line.
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'quota exceeded\nretry later', status: 'error' }, sequence: 6 });
    await expect.poll(() => page.locator('[data-testid=activity-failures] li').count()).toBe(1);
    expect(await page.locator('[data-testid=activity-failures] .error-line').textContent()).toBe('quota exceeded');
    expect(await page.locator('[data-testid=activity-failures] time').textContent()).toMatch(/^\d+ s ago$/);
    await expect.poll(() => page.locator('section[aria-label="Running now"] h2').textContent()).toBe('Running now (0)');

    // A call cancelled with its run counts among the tool's other ends, not its failures.
    const cancelled = await owner.createRun({ threadId });
    const cancelledLease = await worker.claimRun(cancelled.id, 600);
    await worker.recordModelStarted({ lease: cancelledLease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({
      lease: cancelledLease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c4', name: 'fetch', args: {} }],
    });
    await worker.recordToolStarted({ lease: cancelledLease, toolCallId: 'c4', name: 'fetch', effectiveInput: {}, sequence: 3 });
    await owner.cancelRun(cancelled.id);
    const fetchRow = page.locator('[data-testid=activity-tools] tbody tr', { hasText: 'fetch' });
    await expect.poll(() => fetchRow.locator('td').allTextContents()).toEqual(['fetch', '2', '0 %', '1', expect.any(String), expect.any(String), expect.any(String)]);
    await saveScreenshot(page, 'activity.png');

    // The per-tool table sorts by each column (the server answering in that order).
    const names = () => page.locator('[data-testid=activity-tools] tbody tr td:first-child').allTextContents();
    await page.click('[data-testid=activity-tools] th button:text("Tool")');
    await expect.poll(names).toEqual(['fetch', 'lookup']);
    await page.click('[data-testid=activity-tools] th button:text("Failure rate")');
    await expect.poll(names).toEqual(['lookup', 'fetch']);
    expect(await page.locator('[data-testid=activity-tools] th[aria-sort=descending] button').textContent()).toBe('Failure rate');

    // The window and the tool filter are kept in the address.
    const [windowSelect, toolBox] = [page.locator('.activity-controls select'), page.getByRole('combobox', { name: 'Tool' })];
    const chooseTool = async (name: string) => {
      await toolBox.fill(name);
      await toolBox.press('Enter');
    };
    await windowSelect.selectOption('900');
    await chooseTool('lookup');
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900&tool=lookup');
    await expect.poll(() => names()).toEqual(['lookup']);
    // With a tool chosen, the others are still suggested: one change switches tools.
    expect(await page.locator(`datalist#${await toolBox.getAttribute('list')} option`).evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))).toEqual(['fetch', 'lookup']);
    await chooseTool('fetch');
    await expect.poll(() => names()).toEqual(['fetch']);
    // Back steps through the filter changes, the view following the address.
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900&tool=lookup');
    await expect.poll(() => names()).toEqual(['lookup']);
    await page.goBack();
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    expect([await windowSelect.inputValue(), await toolBox.inputValue()]).toEqual(['900', '']);
    await page.goForward();
    await expect.poll(() => names()).toEqual(['lookup']);
    await page.reload();
    await expect.poll(() => names()).toEqual(['lookup']);
    // A window the page does not offer is shown as the one it falls back to, in the address too.
    await page.goto(`${origin}/#activity&window=120&tool=lookup`);
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=3600&tool=lookup');
    expect(await windowSelect.inputValue()).toBe('3600');

    expect(await seriousViolations(page)).toEqual([]);

    // A failure opens its row in its thread's timeline (the link form the timeline reads).
    const link = page.locator('[data-testid=activity-failures] a');
    expect(await link.getAttribute('href')).toBe(`#thread=${threadId}&audit=${started.id}`);
    await link.click();
    await page.waitForSelector('section.timeline');
    expect(new URL(page.url()).hash).toMatch(new RegExp(`^#thread=${threadId}`));
    // Back returns to the Activity view, as it was.
    await page.goBack();
    await page.waitForSelector('[data-testid=activity-failures] a');
    expect(new URL(page.url()).hash).toMatch(/^#activity/);
  }, 120_000);

  it("offers the current window's tool names in the Tool filter, not those a window before offered", async () => {
    const kept = await superadminThread(server.url, 'kept agent');
    await runWithOneTool(kept, { name: 'lookup', output: { content: 'ok' } });
    const { id: goneThread } = await kept.owner.createThread({ title: 'deleted agent' });
    await runWithOneTool({ ...kept, threadId: goneThread }, { name: 'fetch', output: { content: 'ok' } });
    const page = await newPage();
    await signIn(page, origin, kept.who.owner);
    await page.goto(`${origin}/#activity&window=3600`);
    const offered = () => page.locator('.activity-controls label:has-text("Tool") option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value).filter(Boolean));
    await expect.poll(offered).toEqual(['fetch', 'lookup']);
    // Its thread deleted, no window holds 'fetch' any more: the 15 min window's names are 'lookup' alone.
    await kept.owner.deleteThread(goneThread);
    const namesRead = page.waitForResponse((response) => /PageToolNames/.test(response.request().postData() ?? '') && /"windowSeconds":900/.test(response.request().postData() ?? ''));
    await page.selectOption('.activity-controls select >> nth=0', '900');
    await namesRead;
    await expect.poll(offered).toEqual(['lookup']);

    // A suggestion picked is chosen at once. Headless Chromium opens no suggestion list: the pick as
    // Chromium reports it, a plain input event (a typed key's is an InputEvent).
    const toolBox = page.getByRole('combobox', { name: 'Tool' });
    await toolBox.evaluate((box: HTMLInputElement) => ((box.value = 'lookup'), box.dispatchEvent(new Event('input', { bubbles: true }))));
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900&tool=lookup');
    await expect.poll(() => page.locator('[data-testid=activity-tools] tbody td:first-child').allTextContents()).toEqual(['lookup']);
    // Typed keys are not a choice until Enter (or leaving the box): live views keep what was typed.
    await toolBox.press('End');
    await toolBox.pressSequentially('_x');
    await runWithOneTool(kept, { name: 'lookup', output: { content: 'ok' } });
    await expect.poll(() => page.locator('[data-testid=activity-tools] tbody td:nth-child(2)').allTextContents()).toEqual(['2']);
    expect(new URL(page.url()).hash).toBe('#activity&window=900&tool=lookup');
    expect(await toolBox.inputValue()).toBe('lookup_x');

    // A name no call of the window has, typed: said so, no error, kept in the address; cleared, every tool again.
    await toolBox.fill('fetch');
    await toolBox.press('Enter');
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900&tool=fetch');
    await expect.poll(() => page.getByTestId('activity-no-tool').textContent()).toBe('No call of fetch ran within the 15 min window.');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.locator('[data-testid=activity-tools] tbody tr').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await toolBox.fill('');
    await toolBox.press('Enter');
    await expect.poll(() => new URL(page.url()).hash).toBe('#activity&window=900');
    await expect.poll(() => page.locator('[data-testid=activity-tools] tbody td:first-child').allTextContents()).toEqual(['lookup']);
    expect(await page.getByTestId('activity-no-tool').textContent()).toBe('');
    await page.close();
  }, 120_000);

  it('tells an admin the view is for super administrators and stops there: no Activity link, no "Loading…", no "reconnecting…"', async () => {
    const page = await newPage();
    await signIn(page, origin, await tokenFor(`e2e-admin-${process.pid}`, 'admin'));
    expect(await page.locator('header a[href="#activity"]').count()).toBe(0);
    // Through the address, as a bookmark or a shared link would.
    await page.goto(`${origin}/#activity`);
    await expect.poll(() => page.locator('.activity [role=alert]').textContent()).toBe('Audit data is for super administrators only');
    // The refusal is final: the header shows no connection at all, and the view waits for nothing.
    await expect.poll(() => page.locator('[data-testid=connection]').count()).toBe(0);
    expect(await page.locator('.activity').textContent()).not.toContain('Loading');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  }, 120_000);

  it("times a running call's lease and age by the server's clock, on a browser whose clock is 15 minutes ahead: in Activity, the thread and its ledger", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'watched from a fast clock');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'lookup', args: {} }] });
    await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'lookup', effectiveInput: {}, sequence: 3 });

    const page = await newPage();
    // Every Date of the page's reads 15 minutes ahead of the database's clock (and this machine's).
    await page.addInitScript(() => {
      const RealDate = Date;
      const AHEAD_MS = 15 * 60_000;
      class Ahead extends RealDate {
        constructor(...args: unknown[]) {
          if (args.length === 0) super(RealDate.now() + AHEAD_MS);
          else super(...(args as [string]));
        }
        static override now() {
          return RealDate.now() + AHEAD_MS;
        }
      }
      globalThis.Date = Ahead as DateConstructor;
    });
    await openActivity(page, who.owner);
    const cells = page.locator('[data-testid=activity-running] tbody tr td');
    await expect.poll(() => cells.count()).toBe(5);
    // Leased for 10 minutes a moment ago: minutes left, not "expired"; running for seconds, not 15 minutes.
    expect(await cells.nth(4).textContent()).toMatch(/^9 min \d+ s$/);
    expect(await cells.nth(3).textContent()).toMatch(/^[\d.]+ (ms|s)$/);

    // The thread's timeline and its ledger read no view's `at`: they time by the answers' Date.
    await page.goto(`${origin}/#thread=${threadId}`);
    await page.waitForSelector('[data-testid=connection]:text("live")');
    expect(await page.locator('.row.run .meta').first().textContent()).toMatch(/ · 9 min \d+ s left/);
    await page.click('button:text("Tool calls")');
    const entry = page.locator('[data-testid=ledger] tbody tr').first();
    await expect.poll(() => entry.locator('.lease-left').textContent()).toMatch(/^lease 9 min \d+ s left$/);
    expect(await entry.locator('td').nth(4).textContent()).toMatch(/^[\d.]+ (ms|s)$/);
    await page.close();
  }, 120_000);

  it("marks a running call that reported an error, says how many running calls it leaves out, and charts other ends", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'busy fleet');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    // One more than the page lists: the first (the longest running, listed first) reports a bare error.
    const calls = Array.from({ length: 51 }, (_, i) => ({ id: `c${i}`, name: i === 0 ? 'flaky' : 'steady', args: {} }));
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: calls });
    let sequence = 3;
    for (const call of calls) await worker.recordToolStarted({ lease, toolCallId: call.id, name: call.name, effectiveInput: {}, sequence: sequence++ });
    await worker.recordToolError({ lease, toolCallId: 'c0', error: { message: 'connection reset\nby peer' }, sequence: sequence++ });
    // A call cancelled with its run: an other end.
    const cancelled = await owner.createRun({ threadId: (await owner.createThread({ title: 'cancelled' })).id });
    const cancelledLease = await worker.claimRun(cancelled.id, 600);
    await worker.recordModelStarted({ lease: cancelledLease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease: cancelledLease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'x1', name: 'steady', args: {} }] });
    await worker.recordToolStarted({ lease: cancelledLease, toolCallId: 'x1', name: 'steady', effectiveInput: {}, sequence: 3 });
    await owner.cancelRun(cancelled.id);

    const page = await newPage();
    await openActivity(page, who.owner);
    const rows = page.locator('[data-testid=activity-running] tbody tr');
    await expect.poll(() => rows.count()).toBe(50);
    expect(await page.locator('section[aria-label="Running now"] h2').textContent()).toBe('Running now (51)');
    expect(await page.locator('section[aria-label="Running now"]').textContent()).toContain('showing 50 of 51');
    const awaiting = page.locator('[data-testid=activity-running] [data-testid=awaiting-verdict]');
    expect(await awaiting.count()).toBe(1);
    expect(await rows.first().locator('td').first().textContent()).toBe("flaky error reported: connection reset, awaiting the run's verdict");
    // The chart has a series for each kind of end the table counts (after the legend's time).
    await page.waitForSelector('.activity-chart canvas');
    expect((await page.locator('.activity-chart .u-legend .u-label').allTextContents()).slice(1)).toEqual(['started', 'completed', 'failed', 'other ends']);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  }, 120_000);

  it("follows the window's width: the chart fills its box at 1200 px, stays within it at 340 px with nothing scrolling sideways, and fills it again", async () => {
    const page = await activityWithAFailure({ width: 1200, height: 900 });
    const fills = async (where: string) => {
      await expect.poll(async () => { const { box, chart } = await widths(page); return chart - box; }, { message: `the chart against its box at ${where}` }).toBe(0);
      const { window, document, app } = await widths(page);
      expect({ document, app }, where).toEqual({ document: window, app: window });
    };
    await fills('1200 px');
    // A narrow phone, held upright.
    await page.setViewportSize({ width: 340, height: 700 });
    await fills('340 px');
    // Turned back (or a desktop window widened again).
    await page.setViewportSize({ width: 1200, height: 900 });
    await fills('1200 px again');
    await page.close();
  }, 120_000);

  it('keeps the chart\'s time labels apart, on a phone too, for every window', async () => {
    const page = await activityWithAFailure({ width: 1200, height: 900 });
    for (const viewport of [{ width: 1200, height: 900 }, { width: 390, height: 844 }, { width: 340, height: 700 }]) {
      await page.setViewportSize(viewport);
      for (const { value, label } of [{ value: '900', label: '15 min' }, { value: '3600', label: '1 h' }, { value: '86400', label: '24 h' }, { value: '604800', label: '7 d' }]) {
        // The chart is drawn again for the new window: the previous one's canvas is marked, to be
        // waited out.
        await page.locator('.activity-chart canvas').evaluate((canvas) => canvas.setAttribute('data-previous', ''));
        await page.selectOption('.activity-controls select >> nth=0', value);
        await expect.poll(() => new URL(page.url()).hash).toContain(`window=${value}`);
        await page.waitForSelector('.activity-chart canvas:not([data-previous])');
        await expect.poll(async () => { const { box, chart } = await widths(page); return chart - box; }).toBe(0);
        await expect
          .poll(() => timeLabelWidths(page), { message: `${label} at ${viewport.width} px` })
          .toSatisfy((widths: number[]) => widths.length >= 2 && Math.max(...widths) <= 60);
      }
    }
    await page.close();
  }, 120_000);

  it('labels a phone\'s 1 h chart twice when the window began just after a half hour', async () => {
    // uPlot ticks a 1 h window 30 min apart at this width: the views are moved to end 17 s after
    // an hour, so that the window holds one half hour and two hours, whatever the time of the run.
    const who = await superadminWithAFailure('watched just after the hour');
    const page = await newPage({ width: 340, height: 700 });
    await page.routeWebSocket(/\/graphql/, (socket) => {
      const server = socket.connectToServer();
      socket.onMessage((message) => server.send(message));
      server.onMessage((message) => {
        const parsed = JSON.parse(String(message));
        const view = parsed.payload?.data?.toolActivity;
        if (view) {
          const at = Date.parse(view.at);
          const shift = at - (at % 3_600_000) + 17_000 - at;
          const moved = (time: string) => new Date(Date.parse(time) + shift).toISOString();
          Object.assign(view, { at: moved(view.at), since: moved(view.since) });
          for (const bucket of view.buckets) bucket.start = moved(bucket.start);
        }
        socket.send(JSON.stringify(parsed));
      });
    });
    await openActivity(page, who.owner);
    await expect.poll(() => new URL(page.url()).hash).toContain('window=3600');
    await page.waitForSelector('.activity-chart canvas');
    await expect
      .poll(() => timeLabelWidths(page))
      .toSatisfy((widths: number[]) => widths.length >= 2 && Math.max(...widths) <= 60);
    await page.close();
  });

  it('lines its parts up with its heading, on a desktop and on a phone', async () => {
    const page = await activityWithAFailure({ width: 1200, height: 900 });
    expect(await misaligned(page), '1200 px').toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => misaligned(page), { message: '390 px' }).toEqual([]);
    await page.close();
  }, 120_000);

  it("says what its 'Other ends' column counts in words on the page, not only on a mouse's hover", async () => {
    const page = await activityWithAFailure({ width: 390, height: 844 });
    const otherEnds = page.locator('[data-testid=activity-tools] th button:text("Other ends")');
    // What a finger can read: the text drawn on the page, and what the column's button is described by.
    const description = await otherEnds.evaluate((button) =>
      (button.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)).filter((element) => element?.checkVisibility()).map((element) => element!.textContent).join(' '),
    );
    expect(description).toMatch(/CANCELLED, INTERRUPTED or ABANDONED/);
    await page.close();
  }, 120_000);

  it('reads in the light and in the dark: the chart\'s axis labels, the failures, the tables', async () => {
    const who = await superadminWithAFailure('read at night');
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, colorScheme });
      await openActivity(page, who.owner);
      await page.waitForSelector('[data-testid=activity-failures] .error-line');
      await page.waitForSelector('.activity-chart canvas');
      expect(await axisLabelContrast(page), colorScheme).toBeGreaterThanOrEqual(4.5);
      expect(await seriousViolations(page), colorScheme).toEqual([]);
      await page.close();
    }
  }, 120_000);
});
