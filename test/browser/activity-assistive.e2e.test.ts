// The Activity view (`#activity`) as an on-call engineer with a screen reader, the keyboard or
// forced colours uses it during an incident: the chart's numbers readable as a table, a new
// failure said once (politely) and nothing else said while views arrive, focus kept when the row
// it was on leaves the view, and the chart's series told apart by more than a colour (in forced
// colours too); axe-core clean in each state.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { pageSuite, seriousViolations, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** A new superadmin's thread with one run holding `names.length` tool calls (`c0`…), all started; the Activity view open on it. */
async function activityWithRunningCalls(names: string[]) {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'incident');
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const calls = names.map((name, i) => ({ id: `c${i}`, name, args: {} }));
  await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: calls });
  let sequence = 3;
  for (const call of calls) await worker.recordToolStarted({ lease, toolCallId: call.id, name: call.name, effectiveInput: {}, sequence: sequence++ });
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await signIn(page, origin, who.owner);
  await page.click('header a[href="#activity"]');
  await page.waitForSelector('[data-testid=activity-running]');
  await page.waitForSelector('.activity-chart canvas');
  const end = (i: number, error?: string) =>
    worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: error ? { content: error, status: 'error' } : { content: 'ok' }, sequence: sequence++ });
  return { page, end };
}

describe.skipIf(!haveChromium && !browserRequired)(`the Activity view with assistive technology (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it("gives the chart's numbers as a table a screen reader reaches, and keeps the chart's hover legend out of its reading", async () => {
    const { page, end } = await activityWithRunningCalls(['lookup', 'fetch', 'fetch']);
    await end(0, 'quota exceeded');
    await end(1);
    await page.waitForSelector('[data-testid=activity-failures] li');
    // The chart's text alternative: reached by the keyboard, named, with a row per bucket that holds anything.
    const summary = page.getByText("The chart's numbers");
    await summary.focus();
    await page.keyboard.press('Enter');
    const table = page.getByRole('table', { name: /per bucket/ });
    expect(await table.locator('thead th').allTextContents()).toEqual(['From', 'Started', 'Completed', 'Failed', 'Other ends']);
    const totals = async () => {
      const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].slice(1).map((cell) => Number(cell.textContent))));
      return rows.reduce((sum, row) => sum.map((value, i) => value + row[i]!), [0, 0, 0, 0]);
    };
    await expect.poll(totals).toEqual([3, 1, 1, 0]);
    // uPlot's legend ("Time: --, started: --…", its values only under a mouse) is not read out.
    const snapshot = await page.locator('.activity-chart').ariaSnapshot();
    expect(snapshot).not.toContain('--');
    expect(await seriousViolations(page)).toEqual([]);
    // At 320 px (400 % zoom) the table scrolls sideways in its box, which the keyboard reaches.
    await page.setViewportSize({ width: 320, height: 640 });
    expect(await seriousViolations(page, '320 px')).toEqual([]);
    await page.close();
  }, 120_000);

  it('says a new failure once, politely, and says nothing while other views arrive', async () => {
    const { page, end } = await activityWithRunningCalls(['lookup', 'fetch', 'fetch', 'search']);
    const status = page.getByTestId('activity-news');
    expect(await status.getAttribute('role')).toBe('status');
    // Everything the view's live regions said, in order (the Tool filter's, with no tool chosen, nothing).
    await page.evaluate(() => {
      const said: string[] = ((window as unknown as { said: string[] }).said = []);
      new MutationObserver(() => {
        for (const region of document.querySelectorAll('.activity [role=status], .activity [aria-live]')) {
          const text = region.textContent ?? '';
          if (text && said.at(-1) !== text) said.push(text);
        }
      }).observe(document.querySelector('.activity')!, { subtree: true, childList: true, characterData: true });
    });
    const said = () => page.evaluate(() => (window as unknown as { said: string[] }).said);
    // A call that completes is a new view, not news.
    await end(1);
    await expect.poll(() => page.locator('[data-testid=activity-running] tbody tr').count()).toBe(3);
    await end(0, 'quota exceeded\nretry later');
    await expect.poll(() => page.locator('[data-testid=activity-failures] li').count()).toBe(1);
    await expect.poll(said).toEqual(['lookup failed (incident): quota exceeded. 1 failure within the window.']);
    await end(2);
    await end(3, 'timeout');
    await expect.poll(() => page.locator('[data-testid=activity-failures] li').count()).toBe(2);
    await expect.poll(said).toEqual([
      'lookup failed (incident): quota exceeded. 1 failure within the window.',
      'search failed (incident): timeout. 2 failures within the window.',
    ]);
    expect(await status.getAttribute('aria-atomic')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  }, 120_000);

  it('keeps focus when the running call it was on ends: on that call among the failures, else on the running calls', async () => {
    const { page, end } = await activityWithRunningCalls(['lookup', 'fetch', 'search', 'store']);
    const running = page.locator('[data-testid=activity-running] tbody tr');
    const focusedText = () => page.evaluate(() => document.activeElement?.textContent ?? '');
    // On a call that fails: focus follows it into the recent failures.
    const lookup = running.locator('a', { hasText: 'lookup' });
    const href = await lookup.getAttribute('href');
    await lookup.focus();
    await end(0, 'quota exceeded');
    await expect.poll(() => running.count()).toBe(3);
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('href'))).toBe(href);
    expect(await page.evaluate(() => !!document.activeElement?.closest('[data-testid=activity-failures]'))).toBe(true);
    // On a call that completes: focus goes to the running calls' heading, not the page's top.
    await running.locator('a', { hasText: 'fetch' }).focus();
    await end(1);
    await expect.poll(() => running.count()).toBe(2);
    await expect.poll(focusedText).toBe('Running now (2)');
    // A focused row that stays keeps its focus through the view's updates.
    await running.locator('a', { hasText: 'search' }).focus();
    await end(3);
    await expect.poll(() => running.count()).toBe(1);
    expect(await focusedText()).toBe('search');
    // Focus the reader moved off the view (a click on the page's blank) is left there when the row goes.
    await page.mouse.click(1100, 850);
    expect(await page.evaluate(() => document.activeElement === document.body)).toBe(true);
    await end(2);
    await expect.poll(() => page.locator('section[aria-label="Running now"] h2').textContent()).toBe('Running now (0)');
    expect(await page.evaluate(() => document.activeElement === document.body)).toBe(true);
    await page.close();
  }, 120_000);

  it("tells the chart's failed series apart by more than its colour, and keeps the legend's key in forced colours", async () => {
    const { page } = await activityWithRunningCalls(['lookup']);
    const markers = () =>
      page.locator('.activity-chart .u-legend .u-series').evaluateAll((rows) =>
        rows.slice(1).map((row) => {
          const style = getComputedStyle(row.querySelector('.u-marker')!);
          return { label: row.querySelector('.u-label')!.textContent, style: style.borderTopStyle, colour: style.borderTopColor };
        }),
      );
    const light = await markers();
    // Failed is dashed, the others solid: red against green is no difference to many eyes.
    expect(light.map(({ label, style }) => `${label} ${style}`)).toEqual(['started solid', 'completed solid', 'failed dashed', 'other ends dotted']);
    expect(await seriousViolations(page)).toEqual([]);
    // Forced colours leave the canvas's lines as drawn: the legend keeps the colours that match them.
    // axe-core is clean there too, in both palettes (it read the header links' authored #9cc3ff on the forced white).
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ forcedColors: 'active', colorScheme });
      expect(await markers()).toEqual(light);
      expect(await seriousViolations(page, `forced colours, ${colorScheme}`)).toEqual([]);
    }
    await page.close();
  }, 120_000);
});
