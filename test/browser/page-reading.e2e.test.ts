// The page as a reviewer read it, in headless Chromium against the server process (PGlite, or
// PostgreSQL in the services pass), offline: every view on a phone (390 px), its controls big
// enough for a finger, a drag across the ruler with a finger or a pen, the ruler's idle labels
// when gaps are close together and their lengths on a tap, the search's scope after a hit in
// another thread, search matches marked, a text output read as its lines.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { noteOutsideRequests, openThread as openThreadAt, pageSuite, seriousViolations, signIn as signInAt, superadminThread as superadminThreadAt } from './support/page.js';

const PHONE = { width: 390, height: 844 };

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;
/** Every request a page sent anywhere but this server. */
const outsideRequests: string[] = [];

async function newPage(viewport = { width: 1400, height: 900 }, device: { hasTouch?: boolean; isMobile?: boolean } = {}): Promise<Page> {
  const page = await browser.newPage({ viewport, ...device });
  return noteOutsideRequests(page, origin, outsideRequests);
}

const signIn = (page: Page, token: string) => signInAt(page, origin, token);

const openThread = (page: Page, threadId: string) => openThreadAt(page, origin, `#thread=${threadId}`);

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);
const hitIds = (page: Page) => page.locator('[data-testid=search-results] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')));

/**
 * The controls smaller than 24 by 24 CSS px as drawn (WCAG 2.5.8's size, without its spacing
 * exception: these are the ones a finger aims at): every button, select and input, the header's
 * links, the details' links (to the row), the Activity view's recent failures, the threads, the
 * search's hits, the ledger's tool names, a run's link to the run it resumes, and `more`.
 */
async function smallControls(page: Page, where: string, more: Record<string, Locator> = {}): Promise<string[]> {
  const found = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('button, select, input, textarea, header a, .details a, .activity-failures a, section.threads a, .search-results a, .ledger td a, a.resumed-from')]
      .map((element) => ({ element, box: element.getBoundingClientRect() }))
      .filter(({ box }) => box.width > 0 && (box.width < 24 || box.height < 24))
      .map(({ element, box }) => `${element.outerHTML.slice(0, 60)}… is ${Math.round(box.width)} × ${Math.round(box.height)} px`),
  );
  for (const [name, control] of Object.entries(more)) {
    const box = await control.first().boundingBox();
    if (!box) found.push(`${name}: not drawn`);
    else if (box.width < 24 || box.height < 24) found.push(`${name} is ${Math.round(box.width)} × ${Math.round(box.height)} px`);
  }
  return found.map((text) => `${where}: ${text}`);
}

/**
 * What keeps a view from being used at the window's width: the page scrolling sideways (the
 * document, or #app, which scrolls the page), and each control that is not wholly in sight
 * across the window or is covered where a click would land, once scrolled to vertically.
 */
async function unusable(page: Page, controls: Record<string, Locator>): Promise<string[]> {
  const found: string[] = [];
  const widths = await page.evaluate(() => ({
    window: innerWidth,
    document: document.documentElement.scrollWidth,
    app: document.getElementById('app')!.scrollWidth,
  }));
  if (widths.document > widths.window) found.push(`the document is ${widths.document} px wide`);
  if (widths.app > widths.window) found.push(`#app is ${widths.app} px wide`);
  for (const [name, control] of Object.entries(controls)) {
    if ((await control.count()) === 0) {
      found.push(`${name}: not found`);
      continue;
    }
    const problem = await control.first().evaluate((element) => {
      element.scrollIntoView({ block: 'center' });
      // In sight as the page opens, not after scrolling sideways to it.
      for (let box = element.parentElement; box; box = box.parentElement) box.scrollLeft = 0;
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) return 'not drawn';
      if (box.left < -0.5 || box.right > innerWidth + 0.5) return `from ${Math.round(box.left)} to ${Math.round(box.right)} px across a window of ${innerWidth}`;
      const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
      return hit && (hit === element || element.contains(hit)) ? null : `covered by ${hit?.outerHTML.slice(0, 80)}`;
    });
    if (problem) found.push(`${name}: ${problem}`);
  }
  return found;
}

/**
 * The ruler's labels (clock times and idle gaps, the boxes of their text) that overlap one another
 * or run past the ruler, and how many idle labels show of how many gaps.
 */
const rulerLabels = (page: Page) =>
  page.locator('[data-testid=ruler]').evaluate((ruler) => {
    const edges = ruler.getBoundingClientRect();
    const textBox = (element: Element) => {
      const range = document.createRange();
      range.selectNodeContents(element);
      return range.getBoundingClientRect();
    };
    const labels = [...ruler.querySelectorAll('.tick, .gap-label')].map((element) => ({ text: element.textContent ?? '', box: textBox(element) }));
    const found: string[] = [];
    labels.forEach(({ text, box }, index) => {
      if (box.left < edges.left - 0.5 || box.right > edges.right + 0.5) found.push(`${text} runs past the ruler`);
      for (const other of labels.slice(index + 1)) {
        const apart = box.right <= other.box.left + 0.5 || other.box.right <= box.left + 0.5 || box.bottom <= other.box.top + 0.5 || other.box.bottom <= box.top + 0.5;
        if (!apart) found.push(`${text} overlaps ${other.text}`);
      }
    });
    return { found, idleLabels: ruler.querySelectorAll('.gap-label').length, gaps: ruler.querySelectorAll('.gap').length };
  });

/**
 * A finger dragged from `from` to `to` (CSS pixels in the window), as a touch screen sends it
 * (Chromium's own touch input: pointer events of pointerType "touch", and no mouse events for a drag).
 */
async function touchDrag(page: Page, from: { x: number; y: number }, to: { x: number; y: number }, steps = 8) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [from] });
  for (let step = 1; step <= steps; step++) {
    const point = { x: from.x + ((to.x - from.x) * step) / steps, y: from.y + ((to.y - from.y) * step) / steps };
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [point] });
  }
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await cdp.detach();
}

/** A finger's tap at `point` (CSS pixels in the window). */
async function tap(page: Page, point: { x: number; y: number }) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [point] });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await cdp.detach();
}

/** The same drag with a pen (pointerType "pen"). */
async function penDrag(page: Page, from: { x: number; y: number }, to: { x: number; y: number }, steps = 8) {
  const cdp = await page.context().newCDPSession(page);
  const pen = { pointerType: 'pen' as const, button: 'left' as const };
  await cdp.send('Input.dispatchMouseEvent', { type: 'mousePressed', ...from, ...pen, buttons: 1, clickCount: 1 });
  for (let step = 1; step <= steps; step++) {
    const point = { x: from.x + ((to.x - from.x) * step) / steps, y: from.y + ((to.y - from.y) * step) / steps };
    await cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', ...point, ...pen, buttons: 1 });
  }
  await cdp.send('Input.dispatchMouseEvent', { type: 'mouseReleased', ...to, ...pen, buttons: 0, clickCount: 1 });
  await cdp.detach();
}

/**
 * A run of `models` model calls each declaring one tool that completes, written as one queue (the
 * client batches them); `startAt` (epoch ms) and `stepMs` have the runtime observe its entries
 * from then, that far apart.
 */
async function writeRun(owner: AuditClient, worker: AuditClient, threadId: string, models: number, timing: { startAt?: number; stepMs?: number } = {}) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const writes: Promise<{ id: string }>[] = [];
  let sequence = 1;
  const observedAt = () => (timing.startAt === undefined ? {} : { observedAt: new Date(timing.startAt + (timing.stepMs ?? 100) * (sequence - 1)).toISOString() });
  for (let i = 1; i <= models; i++) {
    writes.push(worker.recordModelStarted({ lease, operationId: `m${i}`, model: 'gpt-x', ...observedAt(), sequence: sequence++ }));
    writes.push(worker.recordModelFinished({
      lease, operationId: `m${i}`, status: 'COMPLETED', ...observedAt(), sequence: sequence++, toolCalls: [{ id: `c${i}`, name: 'pay_invoice', args: { n: i } }],
    }));
    writes.push(worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'pay_invoice', effectiveInput: { n: i }, ...observedAt(), sequence: sequence++ }));
    writes.push(worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: { content: 'paid', status: 'success' }, ...observedAt(), sequence: sequence++ }));
  }
  const written = await Promise.all(writes);
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { runId: run.id, lastTool: written[written.length - 1]!.id };
}

/** A run whose model called each of `tools`, each of which failed. */
async function writeFailingRun(owner: AuditClient, worker: AuditClient, threadId: string, tools: string[]) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  let sequence = 1;
  await worker.recordModelStarted({ lease, operationId: 'm1', model: 'gpt-x', sequence: sequence++ });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: sequence++, toolCalls: tools.map((name, i) => ({ id: `c${i}`, name, args: {} })) });
  for (const [i, name] of tools.entries()) {
    await worker.recordToolStarted({ lease, toolCallId: `c${i}`, name, effectiveInput: {}, sequence: sequence++ });
    await worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: { content: 'declined', status: 'error' }, sequence: sequence++ });
  }
  await worker.finishRun({ lease, status: 'COMPLETED' });
}

const superadminThread = (title: string) => superadminThreadAt(server.url, title);

describe.skipIf(!haveChromium && !browserRequired)(`the page as a reviewer read it (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
  });

  it('is usable on a phone, 390 px wide: no view scrolls sideways, its controls are in sight, the details stack below the rows', async () => {
    const { who, owner, worker, threadId } = await superadminThread('read on a phone');
    // (10 + 245) model calls and their tools, 510 entries: the newest 500 leave the first run's
    // 10 oldest out, so both load buttons show.
    const first = await writeRun(owner, worker, threadId, 10);
    await writeRun(owner, worker, threadId, 245);

    const page = await newPage(PHONE);
    await signIn(page, who.owner);
    const search = {
      'search box': page.locator('input[type=search]'),
      'status filter': page.locator('select[aria-label=Status]'),
      'search button': page.locator('form.search button[type=submit]'),
      'sign out': page.locator('header button:text("Sign out")'),
    };
    await page.locator('section.threads li').first().waitFor();
    expect(await unusable(page, { ...search, 'thread filter': page.locator('.thread-filter'), 'first thread': page.locator('section.threads li a').first() }), 'thread list').toEqual([]);

    await page.click('button:text("Tool calls across threads")');
    await page.locator('[data-testid=ledger] tbody tr').first().waitFor();
    expect(await unusable(page, {
      ...search,
      'tool filter': page.locator('select[aria-label="Tool name"]'),
      'case filter': page.locator('select[aria-label=Case]'),
      'first entry': page.locator('[data-testid=ledger] tbody tr a').first(),
    }), 'ledger across threads').toEqual([]);

    await openThread(page, threadId);
    await expect.poll(() => page.locator('[data-testid=loaded-count]').textContent()).toBe('500 entries loaded; older ones exist');
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    await row(page, first.runId).locator('[data-testid=load-run]').waitFor();
    const timeline = {
      ...search,
      'search scope': page.locator('select[aria-label=Where]'),
      'load older entries': page.locator('[data-testid=load-older]'),
      "a run's load button": row(page, first.runId).locator('[data-testid=load-run]'),
      'errors only': page.locator('[data-testid=errors-only]'),
      'tool calls view': page.locator('.views button:text("Tool calls")'),
      ruler: page.locator('[data-testid=ruler]'),
    };
    expect(await unusable(page, timeline), 'timeline').toEqual([]);
    // A row opened: the details go below the rows, which keep the window's width.
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    await page.locator('#app').evaluate((element) => (element.scrollTop = 0));
    await row(page, first.runId).locator('.name').click();
    await page.locator('.details[data-key] [data-testid=facts]').waitFor();
    const [rows, details] = await Promise.all([page.locator('[data-testid=rows]').boundingBox(), page.locator('.details').boundingBox()]);
    expect(rows!.width).toBeGreaterThan(PHONE.width * 0.8);
    expect(details!.y).toBeGreaterThanOrEqual(rows!.y + rows!.height - 1);
    // The tap brings them into sight.
    await expect.poll(() => page.locator('.details h2').evaluate((element) => element.getBoundingClientRect().bottom)).toBeLessThan(PHONE.height);
    expect(await unusable(page, { ...timeline, 'copy as JSON': page.locator('[data-testid=copy-json]') }), 'timeline with a row open').toEqual([]);
    expect(await seriousViolations(page, 'timeline at 390 px')).toEqual([]);

    await page.click('.views button:text("Tool calls")');
    await page.locator('[data-testid=ledger] tbody tr').first().waitFor();
    expect(await unusable(page, {
      ...search,
      'tool filter': page.locator('select[aria-label="Tool name"]'),
      'status filter of the ledger': page.locator('select[aria-label="Tool-call status"]'),
      'first entry': page.locator('[data-testid=ledger] tbody tr a').first(),
    }), "the thread's ledger").toEqual([]);

    await page.goto(`${origin}/#activity`);
    await page.locator('[data-testid=activity-tools]').waitFor();
    expect(await unusable(page, {
      ...search,
      'window selector': page.locator('.activity-controls select').first(),
      'tool filter': page.locator('.activity-controls input[type=search]'),
      'sort by failure rate': page.locator('[data-testid=activity-tools] th button:text("Failure rate")'),
    }), 'activity').toEqual([]);
    await page.selectOption('.activity-controls select >> nth=0', '900');
    await expect.poll(() => page.url()).toContain('window=900');
    await page.close();
  }, 300_000);

  it('zooms the axis by a drag across the ruler with a finger or a pen, as with a mouse', async () => {
    const { who, owner, worker, threadId } = await superadminThread('zoomed on a touch screen');
    // Two runs five minutes apart, each a large share of the axis (the idle gap is compressed).
    const base = Date.now() - 5 * 60_000;
    const first = await writeRun(owner, worker, threadId, 2, { startAt: base, stepMs: 1000 });
    const second = await writeRun(owner, worker, threadId, 2, { startAt: base + 5 * 60_000, stepMs: 1000 });

    const page = await newPage(PHONE, { hasTouch: true, isMobile: true });
    await signIn(page, who.owner);
    await openThread(page, threadId);
    await row(page, second.runId).locator('.bar').waitFor();
    expect(await row(page, first.runId).locator('.bar').count()).toBe(1);
    /** Drags along the ruler over the second run's bar only, with `drag`. */
    const dragOverSecondRun = async (drag: typeof touchDrag) => {
      const ruler = (await page.locator('[data-testid=ruler]').boundingBox())!;
      const bar = (await row(page, second.runId).locator('.bar').boundingBox())!;
      expect(bar.width).toBeGreaterThan(20);
      const y = ruler.y + ruler.height / 2;
      await drag(page, { x: bar.x + 2, y }, { x: bar.x + bar.width - 2, y });
    };
    await dragOverSecondRun(touchDrag);
    // Zoomed into the second run: the first is out of view, and the way back is offered.
    await expect.poll(() => row(page, first.runId).locator('.bar').count()).toBe(0);
    expect(await row(page, second.runId).locator('.bar').count()).toBe(1);
    await page.locator('.ruler-row button:text("Whole thread")').click();
    await expect.poll(() => row(page, first.runId).locator('.bar').count()).toBe(1);

    await dragOverSecondRun(penDrag);
    await expect.poll(() => row(page, first.runId).locator('.bar').count()).toBe(0);
    await page.close();
  }, 120_000);

  it('gives a finger room on a phone: every button, select and input, the header\'s links, the way back to the threads, the links to a thread, a row, a search hit, a ledger entry and a resumed run, and the recent failures are at least 24 by 24 px', async () => {
    const { who, owner, worker, threadId } = await superadminThread('tapped on a phone');
    const first = await writeRun(owner, worker, threadId, 2);
    // A tool with a short name that failed: listed among the Activity view's recent failures.
    await writeFailingRun(owner, worker, threadId, ['pay']);
    // A run cut short and its resume, which links back to it.
    const cut = await owner.createRun({ threadId });
    await worker.finishRun({ lease: await worker.claimRun(cut.id, 600), status: 'INTERRUPTED' });
    await owner.createRun({ threadId, resumeFromRunId: cut.id });
    const page = await newPage(PHONE, { hasTouch: true, isMobile: true });
    await signIn(page, who.owner);
    await page.locator('section.threads li').first().waitFor();
    await page.fill('input[type=search]', 'pay');
    await page.press('input[type=search]', 'Enter');
    await page.locator('[data-testid=search-results] li a').first().waitFor();
    const found = await smallControls(page, 'thread list');
    await page.click('button:text("Tool calls across threads")');
    await page.locator('[data-testid=ledger] tbody tr').first().waitFor();
    found.push(...(await smallControls(page, 'ledger across threads')));
    await openThread(page, threadId);
    // A run zoomed into and open: its zoom button, Whole thread, the details' buttons.
    await row(page, first.runId).locator('.zoom-run').click();
    await page.locator('.ruler-row button:text("Whole thread")').waitFor();
    await row(page, first.runId).locator('.name').click();
    await page.locator('.details[data-key] [data-testid=facts]').waitFor();
    await page.locator('a.resumed-from').waitFor();
    found.push(...(await smallControls(page, 'timeline', { 'the way back to the threads': page.locator('section.timeline a:text("← threads")') })));
    await page.goto(`${origin}/#activity`);
    await page.locator('[data-testid=activity-failures] a').first().waitFor();
    found.push(...(await smallControls(page, 'activity')));
    expect(found).toEqual([]);
    await page.close();
  }, 120_000);

  it('gives a touch screen, which has no keys, buttons to the next and previous failure in place of the keys\' help', async () => {
    const { who, owner, worker, threadId } = await superadminThread('failures stepped through by touch');
    await writeFailingRun(owner, worker, threadId, ['pay', 'refund']);
    const failed = (await owner.threadAudits(threadId)).items.filter((audit) => audit.status === 'FAILED').map((audit) => audit.id);
    expect(failed).toHaveLength(2);
    const selected = (page: Page) => page.locator('.details[data-key]').getAttribute('data-key');

    const phone = await newPage(PHONE, { hasTouch: true, isMobile: true });
    await signIn(phone, who.owner);
    await openThread(phone, threadId);
    await phone.locator('[data-testid=thread-failures]:text("In this thread")').waitFor();
    expect(await phone.locator('.keys-help').isVisible()).toBe(false);
    // Nor does the details' hint, before a row is selected.
    expect(await phone.locator('aside.details').innerText()).toMatch(/^Select a row to see its details\.\s*$/);
    await phone.locator('button:text("Next failure")').tap();
    await expect.poll(() => selected(phone)).toBe(failed[0]);
    await phone.locator('button:text("Next failure")').tap();
    await expect.poll(() => selected(phone)).toBe(failed[1]);
    await phone.locator('button:text("Previous failure")').tap();
    await expect.poll(() => selected(phone)).toBe(failed[0]);
    await phone.close();

    // With a mouse and keys: the keys' help, and no extra buttons.
    const desktop = await newPage();
    await signIn(desktop, who.owner);
    await openThread(desktop, threadId);
    await desktop.locator('[data-testid=thread-failures]:text("In this thread")').waitFor();
    expect(await desktop.locator('.keys-help').isVisible()).toBe(true);
    expect(await desktop.locator('button:text("Next failure")').isVisible()).toBe(false);
    await desktop.close();
  }, 120_000);

  it("draws the ruler's idle labels apart when gaps are close together: the longer gap's label shows, none overlaps another or a clock time", async () => {
    const { who, owner, worker, threadId } = await superadminThread('three runs, two gaps close together');
    // The runtime's observations: 11 s, then 5 min idle, a run of 90 ms, 5 min idle again, then 11 s.
    const base = Date.now() - 11 * 60_000;
    await writeRun(owner, worker, threadId, 3, { startAt: base, stepMs: 1000 });
    await writeRun(owner, worker, threadId, 1, { startAt: base + 5 * 60_000, stepMs: 30 });
    await writeRun(owner, worker, threadId, 3, { startAt: base + 10 * 60_000 + 5000, stepMs: 1000 });

    const page = await newPage();
    await signIn(page, who.owner);
    await openThread(page, threadId);
    await expect.poll(() => page.locator('[data-testid=ruler] .gap').count()).toBe(2);
    for (const viewport of [{ width: 1400, height: 900 }, { width: 1100, height: 800 }, PHONE]) {
      await page.setViewportSize(viewport);
      await expect.poll(() => rulerLabels(page), { message: `at ${viewport.width} px` }).toEqual({ found: [], idleLabels: 1, gaps: 2 });
      // The one shown is the longer gap's (5 min 5 s; on a narrow ruler without "idle"); the
      // other's length is on its hover.
      expect(await page.locator('[data-testid=ruler] .gap-label').textContent()).toMatch(/^5 min [5-9] s( idle)?$/);
      expect(await page.locator('[data-testid=ruler] .gap').evaluateAll((gaps) => gaps.map((gap) => gap.getAttribute('title')))).toEqual([
        expect.stringMatching(/^4 min 4\d s idle/),
        expect.stringMatching(/^5 min [5-9] s idle/),
      ]);
    }
    await page.close();
  }, 120_000);

  it("gives an unlabelled idle gap's length on a tap, as on a mouse's hover", async () => {
    const { who, owner, worker, threadId } = await superadminThread('two gaps, tapped');
    // As above: two idle stretches close together, only the longer one labelled.
    const base = Date.now() - 11 * 60_000;
    await writeRun(owner, worker, threadId, 3, { startAt: base, stepMs: 1000 });
    await writeRun(owner, worker, threadId, 1, { startAt: base + 5 * 60_000, stepMs: 30 });
    await writeRun(owner, worker, threadId, 3, { startAt: base + 10 * 60_000 + 5000, stepMs: 1000 });

    const page = await newPage(PHONE, { hasTouch: true, isMobile: true });
    await signIn(page, who.owner);
    await openThread(page, threadId);
    const gaps = page.locator('[data-testid=ruler] .gap');
    await expect.poll(() => gaps.count()).toBe(2);
    expect(await page.locator('[data-testid=ruler] .gap-label').textContent()).toMatch(/^5 min [5-9] s( idle)?$/);
    const shown = page.locator('.ruler-row [data-testid=gap-length]');
    // A tap on the shorter, unlabelled gap: on a phone the two are a few px wide each, side by
    // side, so both lengths show, left to right.
    const first = (await gaps.first().boundingBox())!;
    await tap(page, { x: first.x + first.width / 2, y: first.y + first.height / 2 });
    await expect.poll(() => shown.allTextContents()).toEqual([expect.stringMatching(/^4 min 4\d s · 5 min [5-9] s idle$/)]);
    // Whole, not cut: its text fits its box, and the box the window.
    expect(await shown.evaluate((element) => element.scrollWidth <= element.clientWidth && element.getBoundingClientRect().right <= innerWidth)).toBe(true);
    expect(await unusable(page, { 'the gaps\' lengths': shown })).toEqual([]);
    expect(await seriousViolations(page, 'the gaps\' lengths shown')).toEqual([]);
    // A tap away from both: nothing.
    const ruler = (await page.locator('[data-testid=ruler]').boundingBox())!;
    await tap(page, { x: ruler.x + ruler.width - 3, y: ruler.y + ruler.height / 2 });
    await expect.poll(() => shown.count()).toBe(0);
    // Not zoomed by any of it.
    expect(await page.locator('.ruler-row button:text("Whole thread")').count()).toBe(0);
    await page.close();
  }, 120_000);

  it('keeps the search box saying what its results are: a search from the thread list is across all threads, also once a hit opens another thread', async () => {
    const { who, owner, worker, threadId: invoices } = await superadminThread('invoices');
    const { id: refunds } = await owner.createThread({ title: 'refunds' });
    /** A run of `threadId` whose model declared `calls`, the first ones run; its lease and next sequence, the ids of the tools run. */
    const write = async (threadId: string, calls: { id: string; payee: string }[], run: number) => {
      const { id } = await owner.createRun({ threadId });
      const lease = await worker.claimRun(id, 120);
      await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'planner-7' });
      await worker.recordModelFinished({
        lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: calls.map((call) => ({ id: call.id, name: 'pay_invoice', args: { payee: call.payee } })),
      });
      const ids: string[] = [];
      for (const [index, call] of calls.slice(0, run).entries()) {
        ids.push((await worker.recordToolStarted({ lease, toolCallId: call.id, name: 'pay_invoice', effectiveInput: { payee: call.payee }, sequence: 3 + 2 * index })).id);
        await worker.recordToolFinished({ lease, toolCallId: call.id, output: { content: 'paid' }, sequence: 4 + 2 * index });
      }
      return { lease, ids, sequence: 3 + 2 * run };
    };
    const invoiced = await write(invoices, [{ id: 'pay', payee: 'Kettle Co.' }], 1);
    const refunded = await write(refunds, [{ id: 'refund', payee: 'Kettle Co.' }, { id: 'refund-again', payee: 'Kettle Co.' }], 1);

    const page = await newPage();
    await signIn(page, who.owner);
    const where = page.locator('select[aria-label=Where]');
    // From the thread list: across all threads (no thread to narrow to).
    await page.fill('input[type=search]', 'kettle co');
    await page.press('input[type=search]', 'Enter');
    await expect.poll(() => hitIds(page)).toEqual([refunded.ids[0], invoiced.ids[0]]);
    // A hit opens its thread: the box says "all my threads", as the results are.
    await page.locator(`[data-testid=search-results] li[data-audit-id="${refunded.ids[0]}"] a`).click();
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(refunded.ids[0]);
    expect(await where.inputValue()).toBe('all');
    expect(await hitIds(page)).toEqual([refunded.ids[0], invoiced.ids[0]]);
    // Following the open thread live, they stay across threads.
    const again = await worker.recordToolStarted({ lease: refunded.lease, toolCallId: 'refund-again', name: 'pay_invoice', effectiveInput: { payee: 'Kettle Co.' }, sequence: refunded.sequence });
    await expect.poll(() => hitIds(page)).toEqual([again.id, refunded.ids[0], invoiced.ids[0]]);
    expect(await where.inputValue()).toBe('all');
    // Narrowed to this thread, then another thread opened from the list: its own hits.
    await page.selectOption('select[aria-label=Where]', 'thread');
    await expect.poll(() => hitIds(page)).toEqual([again.id, refunded.ids[0]]);
    await page.click('text=← threads');
    await page.locator(`section.threads a[data-thread-id="${invoices}"]`).click();
    await page.waitForSelector('[data-testid=connection]:text("live")');
    expect(await where.inputValue()).toBe('thread');
    await expect.poll(() => hitIds(page)).toEqual([invoiced.ids[0]]);
    await page.close();
  }, 120_000);

  it('marks what a search matched, in any case: in the results, and in the opened row\'s details', async () => {
    const { who, owner, worker, threadId } = await superadminThread('marked');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 120);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'planner-7', input: { messages: [{ role: 'user', content: 'Pay the KETTLE invoice' }] } });
    await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'pay', name: 'pay_invoice', args: { payee: 'Kettle Co.' } }] });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'pay', name: 'pay_invoice', effectiveInput: { payee: 'Kettle Co.' }, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'pay', output: { content: 'Paid kettle co. in full' }, sequence: 4 });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await newPage();
    await signIn(page, who.owner);
    await openThread(page, threadId);
    await page.fill('input[type=search]', 'kettle');
    await page.press('input[type=search]', 'Enter');
    const hit = page.locator(`[data-testid=search-results] li[data-audit-id="${tool.id}"]`);
    await hit.waitFor();
    const marks = (where: Locator) => where.locator('mark').allTextContents();
    // Its snippet holds the input's match and the output's.
    expect(await marks(hit)).toEqual(['Kettle', 'kettle']);
    expect((await marks(page.locator('[data-testid=search-results]'))).every((text) => text.toLowerCase() === 'kettle')).toBe(true);
    // The hit opened: its details mark the text wherever it shows (declared, effective, output).
    await hit.locator('a').click();
    await page.locator(`.details[data-key="${tool.id}"] .json-view`).first().waitFor();
    expect(await marks(page.locator('.details .json-view'))).toEqual(['Kettle', 'Kettle', 'kettle']);
    // A model call's conversation too.
    await row(page, (await page.locator('.row.model').getAttribute('data-key'))!).click();
    await page.locator('[data-testid=conversation]').waitFor();
    expect(await marks(page.locator('[data-testid=conversation]'))).toEqual(['KETTLE']);
    // Cleared: nothing marked.
    await page.click('form.search button:text("Clear")');
    await expect.poll(() => page.locator('mark').count()).toBe(0);
    await page.close();
  }, 120_000);

  it("shows a tool's text content as its lines, and text holding JSON indented, 320 kB of it too", async () => {
    const { who, owner, worker, threadId } = await superadminThread('text outputs');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 120);
    const log = ['00001 GET /a 200', '00002 GET /b 200', '00003 GET /c 500'];
    const items = Array.from({ length: 4000 }, (_, i) => ({ id: i, sku: `SKU-${String(i).padStart(5, '0')}`, note: 'x'.repeat(50) }));
    // Tool message envelopes whose content is a log, and JSON as text.
    const outputs = {
      log: { content: log.join('\n'), status: 'success' },
      json: { content: JSON.stringify({ items }), status: 'success' },
    };
    expect(outputs.json.content.length).toBeGreaterThan(320_000);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'planner-7' });
    await worker.recordModelFinished({
      lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: Object.keys(outputs).map((name) => ({ id: name, name, args: {} })),
    });
    const ids: Record<string, string> = {};
    let sequence = 3;
    for (const [name, output] of Object.entries(outputs)) {
      ids[name] = (await worker.recordToolStarted({ lease, toolCallId: name, name, effectiveInput: {}, sequence: sequence++ })).id;
      await worker.recordToolFinished({ lease, toolCallId: name, output, sequence: sequence++ });
    }
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await newPage();
    await signIn(page, who.owner);
    await openThread(page, threadId);
    const output = page.locator('.details .json-view[data-label=output]');
    const shownText = () => output.locator('pre').evaluate((element) => (element as HTMLElement).innerText);
    const open = async (name: string) => {
      await row(page, ids[name]!).click();
      await page.locator(`.details[data-key="${ids[name]}"] .json-view[data-label=output] pre`).waitFor();
      return shownText();
    };
    // The log: its lines, not one string with \n in it.
    const shown = await open('log');
    expect(shown).toContain(`"content": "${log.join('\n')}"`);
    expect(shown).not.toContain('\\n');
    // JSON as text: that JSON indented, collapsed until asked for, then all of it.
    const json = await open('json');
    expect(json).toContain('"content": {\n    "items": [\n      {\n        "id": 0,\n        "sku": "SKU-00000",');
    expect(json).not.toContain('\\"');
    await output.locator('text=Expand all').click();
    const all = await shownText();
    expect(all).toContain('"sku": "SKU-03999"');
    expect(all.split('\n').length).toBeGreaterThan(4000 * 5);
    await page.close();
  }, 120_000);

  it('says the thread list is loading until its first answer, not that there are no threads', async () => {
    const { who } = await superadminThread('listed after a slow first read');
    const page = await newPage();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first read of the thread list is held back, as a slow network would.
    await page.route(`${origin}/graphql`, async (route) => {
      if (/threads\(/.test(route.request().postData() ?? '')) await held;
      await route.continue();
    });
    await page.goto(`${origin}/`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector('section.threads');
    expect(await page.locator('section.threads').innerText()).toContain('Loading threads…');
    expect(await page.locator('section.threads').innerText()).not.toContain('No threads you may read yet.');
    release();
    await page.waitForSelector('section.threads :text("listed after a slow first read")');
    expect(await page.locator('section.threads').innerText()).not.toContain('Loading threads…');
    await page.close();
  }, 120_000);
});
