// The page as a low-vision engineer reads it: Windows High Contrast (forced colours, light and
// dark palettes), 400 % zoom (320 CSS px wide) and WCAG 1.4.12's text spacing. A call's status
// stays told by more than a colour, and in the user's own colours; axe-core clean in each state.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, seriousViolations, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** A running run whose tool calls completed (`c1`, fetch), failed (`c2`, lookup) and still run (`c3`, search_documents). */
async function threadWithEachStatus() {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'each status');
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  const calls = [{ id: 'c1', name: 'fetch', args: {} }, { id: 'c2', name: 'lookup', args: {} }, { id: 'c3', name: 'search_documents', args: {} }];
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: calls });
  const completed = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'fetch', effectiveInput: {}, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'ok' }, sequence: 4 });
  const failed = await worker.recordToolStarted({ lease, toolCallId: 'c2', name: 'lookup', effectiveInput: {}, sequence: 5 });
  await worker.recordToolFinished({ lease, toolCallId: 'c2', output: { content: 'permission denied', status: 'error' }, sequence: 6 });
  const running = await worker.recordToolStarted({ lease, toolCallId: 'c3', name: 'search_documents', effectiveInput: {}, sequence: 7 });
  return { who, threadId, ids: { completed: completed.id, failed: failed.id, running: running.id } };
}

/** Runs that end CANCELLED, INTERRUPTED and COMPLETED while a tool still runs in each (its audit then CANCELLED, INTERRUPTED, ABANDONED), and one that completes. */
async function threadWithEndedRuns() {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'every ending');
  for (const [i, ending] of (['COMPLETED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'] as const).entries()) {
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: `m${i}`, status: 'COMPLETED', sequence: 2, toolCalls: [{ id: `c${i}`, name: 'fetch', args: {} }] });
    await worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'fetch', effectiveInput: {}, sequence: 3 });
    if (ending === 'COMPLETED') await worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: { content: 'ok' }, sequence: 4 });
    if (ending === 'CANCELLED') await owner.cancelRun(run.id);
    else await worker.finishRun({ lease, status: ending === 'INTERRUPTED' ? 'INTERRUPTED' : 'COMPLETED' });
  }
  return { who, owner, worker, threadId };
}

/** Each drawn bar's status and its fill's contrast ratio against its track (WCAG's relative luminance). */
const barContrasts = (page: Page) =>
  page.locator('.row .bar').evaluateAll((bars) => {
    const luminance = (colour: string) => {
      const [r, g, b] = colour.match(/[\d.]+/g)!.slice(0, 3).map((part) => Number(part) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    return bars.map((bar) => {
      const [fill, track] = [luminance(getComputedStyle(bar).backgroundColor), luminance(getComputedStyle(bar.parentElement!).backgroundColor)];
      return { status: [...bar.classList].find((name) => /^[A-Z_]+$/.test(name)), ratio: Math.round(((Math.max(fill, track) + 0.05) / (Math.min(fill, track) + 0.05)) * 100) / 100 };
    });
  });

/** How a row's bar is painted: its fill, its pattern (the stripes' first colour), and the forced palette's CanvasText and Canvas. */
const barLook = (page: Page, auditId: string) =>
  page.locator(`#row-${auditId} .bar`).evaluate((bar) => {
    const probe = document.createElement('span');
    document.body.append(probe);
    probe.style.color = 'CanvasText';
    probe.style.backgroundColor = 'Canvas';
    const { color: canvasText, backgroundColor: canvas } = getComputedStyle(probe);
    probe.remove();
    const style = getComputedStyle(bar);
    return { fill: style.backgroundColor, stripes: /rgba?\([^)]*\)/.exec(style.backgroundImage)?.[0] ?? null, canvasText, canvas };
  });

/** WCAG 1.4.12's text spacing (line height 1.5, paragraphs 2 em apart, letters 0.12 em, words 0.16 em), as the reader's own sheet. */
const spaceText = (page: Page) =>
  page.evaluate(() => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync('* { line-height: 1.5 !important; letter-spacing: 0.12em !important; word-spacing: 0.16em !important; } p { margin-bottom: 2em !important; }');
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  });

/** Each timeline row's status, failures, duration and error that are cut (past their cell's right edge, or ellipsed), by the row's status (the payload sizes and tokens after them may be cut: the details pane has them). */
const cutInfo = (page: Page) =>
  page.locator('.row .info').evaluateAll((cells) =>
    cells.flatMap((cell) => {
      const edge = cell.getBoundingClientRect().right + 0.5;
      const cut = [...cell.querySelectorAll('.status, .failures, .duration, .reason, .awaiting')].filter((part) => part.getBoundingClientRect().right > edge || part.scrollWidth > part.clientWidth + 1);
      return cut.map((part) => `${cell.parentElement!.dataset.status}: ${part.className} "${part.textContent}"`);
    }),
  );

describe.skipIf(!haveChromium && !browserRequired)(`the page for a low-vision reader (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it("tells a failed call's bar from a running one's in forced colours, every bar in the palette's colours, the running one striped", async () => {
    const { who, threadId, ids } = await threadWithEachStatus();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${ids.running}`).waitFor();
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ forcedColors: 'active', colorScheme });
      const [completed, failed, running] = await Promise.all([barLook(page, ids.completed), barLook(page, ids.failed), barLook(page, ids.running)]);
      // A finished call's bar is the palette's text colour, not the authored green left on the user's background.
      expect(completed.fill, colorScheme).toBe(completed.canvasText);
      expect(completed.stripes, colorScheme).toBeNull();
      // A failure and a call still running look different, and not by a colour alone: only the running one is striped.
      expect(failed.stripes, colorScheme).toBeNull();
      expect(failed.fill, colorScheme).not.toBe(completed.fill);
      expect(running.stripes, colorScheme).toBe(running.canvas);
      expect(running.fill, colorScheme).not.toBe(running.canvas);
    }
    await page.close();
  }, 120_000);

  it("draws each status's bar at 3:1 or more against its track (WCAG 1.4.11), and each row's text at 4.5:1 (axe-core), in the light and dark schemes", async () => {
    const ended = await threadWithEndedRuns();
    const live = await threadWithEachStatus();
    const seen = new Set<string>();
    for (const { who, threadId } of [ended, live]) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await signIn(page, origin, who.owner);
      await openThread(page, origin, `#thread=${threadId}`);
      await page.locator('.row.tool .bar').nth(2).waitFor();
      for (const colorScheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme });
        const contrasts = await barContrasts(page);
        contrasts.forEach(({ status }) => seen.add(status!));
        expect(contrasts.filter(({ ratio }) => ratio < 3), colorScheme).toEqual([]);
        expect(await seriousViolations(page, colorScheme)).toEqual([]);
      }
      await page.close();
    }
    expect([...seen].sort()).toEqual(['ABANDONED', 'CANCELLED', 'COMPLETED', 'FAILED', 'INTERRUPTED', 'RUNNING']);
  }, 120_000);

  it("shows the timeline's focus where its first row is a run's, in the default colours and forced ones", async () => {
    const { who, threadId } = await threadWithEndedRuns();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator('.row.tool .bar').nth(2).waitFor();
    const firstRun = page.locator('.row.run').first();
    const box = (await firstRun.boundingBox())!;
    // The first row's height, and a few px either side of it: where the grid's frame is (the row below shows the old ring).
    const around = () => page.screenshot({ clip: { x: box.x - 6, y: box.y + 1, width: box.width + 12, height: box.height - 2 } });
    for (const forcedColors of ['none', 'active'] as const) {
      await page.emulateMedia({ forcedColors });
      await page.getByRole('button', { name: 'Errors only' }).focus();
      const unfocused = await around();
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('grid');
      expect(await page.locator('[role=grid]').getAttribute('aria-activedescendant'), 'nothing selected').toBeNull();
      expect((await around()).equals(unfocused), `forced colours ${forcedColors}`).toBe(false);
    }
    await page.close();
  }, 120_000);

  it("frames the cue for new rows below in forced colours, where its fill is gone and it read as a row's text", async () => {
    const { who, owner, worker, threadId } = await threadWithEndedRuns();
    const page = await browser.newPage({ viewport: { width: 1280, height: 560 } });
    await page.emulateMedia({ forcedColors: 'active' });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator('.row.tool .bar').nth(2).waitFor();
    // Ten rows more than the box holds, then the reader scrolls up and one more arrives.
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    for (let i = 1; i <= 10; i++) await worker.recordModelStarted({ lease, operationId: `more${i}`, sequence: i, model: 'gpt-x' });
    await page.locator('.row', { hasText: 'call 10' }).waitFor();
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    await worker.recordModelStarted({ lease, operationId: 'late', sequence: 11, model: 'gpt-x' });
    const cue = page.locator('[data-testid=new-activity]');
    await cue.waitFor();
    const frame = await cue.evaluate((button) => {
      const style = getComputedStyle(button);
      return { style: style.borderTopStyle, width: style.borderTopWidth, colour: style.borderTopColor, text: style.color };
    });
    expect(frame.style).toBe('solid');
    expect(frame.width).not.toBe('0px');
    expect(frame.colour).toBe(frame.text);
    await page.close();
  }, 120_000);
  it("keeps each row's status, duration and error whole at 400 % zoom (320 CSS px) with WCAG 1.4.12's text spacing, the page not scrolling sideways", async () => {
    const { who, threadId, ids } = await threadWithEachStatus();
    const page = await browser.newPage({ viewport: { width: 320, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${ids.running}`).waitFor();
    await spaceText(page);
    expect(await page.locator(`#row-${ids.failed} .reason`).textContent()).toBe('permission denied');
    expect(await cutInfo(page)).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(320);
    await page.close();
  }, 120_000);
  it("tells the selected row from the keyboard's focus ring by the line's style, not its colour alone, in the default colours and forced ones", async () => {
    const { who, threadId, ids } = await threadWithEachStatus();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${ids.failed} .name`).click();
    for (const forcedColors of ['none', 'active'] as const) {
      await page.emulateMedia({ forcedColors });
      await page.getByRole('button', { name: 'Errors only' }).focus();
      await page.keyboard.press('Tab');
      // Where the Tab went, named, so a failure says what took the focus instead.
      const focused = () => page.evaluate(() => { const element = document.activeElement; return element ? `${element.tagName.toLowerCase()}.${element.className} ${element.getAttribute('role') ?? ''}` : 'nothing'; });
      await expect.poll(focused, { message: forcedColors }).toBe('div.row-space grid');
      expect(await page.locator('[role=grid]').getAttribute('aria-activedescendant')).toBe(`row-${ids.failed}`);
      const line = (element: Element) => {
        const style = getComputedStyle(element);
        return { style: style.outlineStyle, width: style.outlineWidth, colour: style.outlineColor };
      };
      const [ring, selected] = [await page.locator('[data-testid=rows]').evaluate(line), await page.locator(`#row-${ids.failed}`).evaluate(line)];
      expect(ring.style, forcedColors).toBe('solid');
      expect(selected.style, forcedColors).not.toBe(ring.style);
    }
    await page.close();
  }, 120_000);
  it("draws a call of a few ms as a bar 2 px wide or more, starting where the call started", async () => {
    const { who, threadId, ids } = await threadWithEachStatus();
    const page = await browser.newPage({ viewport: { width: 320, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const bar = page.locator(`#row-${ids.completed} .bar`);
    await bar.waitFor();
    const drawn = () =>
      bar.evaluate((element) => {
        const [box, track] = [element.getBoundingClientRect(), element.parentElement!.getBoundingClientRect()];
        return { width: box.width, share: (parseFloat(element.style.width) / 100) * track.width, start: box.left - track.left, at: (parseFloat(element.style.left) / 100) * track.width };
      });
    // The running call stretches the axis until the finished one's share of the track is under 2 px.
    await expect.poll(async () => (await drawn()).share, { timeout: 90_000, interval: 500 }).toBeLessThan(2);
    const { width, start, at } = await drawn();
    expect(width).toBeGreaterThanOrEqual(2);
    expect(Math.abs(start - at)).toBeLessThan(0.5);
    await page.close();
  }, 150_000);
});
