// From a spike in the Activity view to the calls that failed then (docs/debug-ui.md, "An incident
// window"): a bucket's failed count links to a search across threads for FAILED audits whose start
// the server recorded from that bucket's start to the next one's, kept in the address (Back returns
// to the view); the results say the window in local time with its offset, a hit opens its row, and
// 'Any time' lists every failure. Offline, axe-core clean.
import type { Browser } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { noteOutsideRequests, pageSuite, runWithOneTool, seriousViolations, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;
const outsideRequests: string[] = [];

/** The millisecond the server recorded a row at: the time part of its id (a UUIDv7). */
const recordedMs = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe.skipIf(!haveChromium && !browserRequired)(`an Activity bucket's failures in Chromium (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
  });

  it("lists the failures of the bucket whose count was clicked, says the window, and lists every failure once it is cleared", async () => {
    const first = await superadminThread(server.url, 'billing agent');
    // A failed model call in the same bucket: the chart counts tool calls, and so does its link.
    const lease = await first.worker.claimRun((await first.owner.createRun({ threadId: first.threadId })).id, 600);
    await first.worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await first.worker.recordModelFinished({ lease, operationId: 'm1', status: 'FAILED', sequence: 2, error: { message: 'rate limited' } });
    const early = await runWithOneTool(first, { name: 'lookup', output: { content: 'quota exceeded', status: 'error' } });
    // The 15 min view's buckets are 7.5 s wide: the second failure starts and ends more than one bucket after the first ended.
    const earlyEnded = Date.now();
    while (Date.now() < earlyEnded + 8_000) await new Promise((resolve) => setTimeout(resolve, 250));
    const { id: secondThread } = await first.owner.createThread({ title: 'support agent' });
    const late = await runWithOneTool({ ...first, threadId: secondThread }, { name: 'fetch', output: { content: 'upstream timeout', status: 'error' } });

    const context = await browser.newContext({ timezoneId: 'Europe/Paris', viewport: { width: 1400, height: 900 } });
    const page = noteOutsideRequests(await context.newPage(), origin, outsideRequests);
    await signIn(page, origin, first.who.owner);
    await page.goto(`${origin}/#activity&window=900`);
    await page.getByText("The chart's numbers").click();
    const failedLinks = page.locator('[data-testid=activity-buckets] tbody td a');
    await expect.poll(() => failedLinks.count()).toBe(2);
    expect(await failedLinks.allTextContents()).toEqual(['1', '1']);

    // The older bucket's count: only the failure recorded in it, across threads. A bucket counts the
    // failures that ended in it, a window the starts recorded: the link's window starts earlier, by
    // the view's longest call and a bucket, so that it holds the failure whichever bucket its start fell in.
    const link = new URLSearchParams((await failedLinks.first().getAttribute('href'))!.slice(1));
    expect(Date.parse(link.get('since')!)).toBeLessThanOrEqual(recordedMs(early.id));
    expect(recordedMs(early.id)).toBeLessThan(Date.parse(link.get('until')!));
    await failedLinks.first().click();
    const hits = page.locator('[data-testid=search-results] li');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([early.id]);
    const address = new URLSearchParams(new URL(page.url()).hash.slice(1));
    expect([address.get('status'), address.get('kind')]).toEqual(['FAILED', 'TOOL']);
    expect(recordedMs(early.id)).toBeGreaterThanOrEqual(Date.parse(address.get('since')!));
    expect(recordedMs(early.id)).toBeLessThan(Date.parse(address.get('until')!));
    const shown = page.locator('[data-testid=search-window]');
    expect(await shown.textContent()).toMatch(/^Started \(as the server recorded it\) from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\+01:00 to \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\+01:00 Any time$/);
    expect(await seriousViolations(page)).toEqual([]);

    // Shared, the address shows the same window and hits.
    const shared = noteOutsideRequests(await context.newPage(), origin, outsideRequests);
    await signIn(shared, origin, first.who.owner);
    await shared.goto(page.url());
    await expect.poll(() => shared.locator('[data-testid=search-results] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([early.id]);
    expect(await shared.locator('[data-testid=search-window]').textContent()).toBe(await shown.textContent());

    // A hit opens its row.
    await hits.locator('a').click();
    await page.waitForSelector(`.row.selected[data-key="${early.id}"]`);

    // Cleared, the window goes and every failure shows.
    await page.getByRole('button', { name: 'Any time' }).click();
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')).sort())).toEqual([early.id, late.id].sort());
    expect(await shown.count()).toBe(0);
    expect(new URL(page.url()).hash).not.toMatch(/since|until/);

    // Back returns to the Activity view the link was followed from.
    await page.goBack();
    await page.goBack();
    await page.waitForSelector('[data-testid=activity-buckets]', { state: 'attached' });
    expect(new URL(page.url()).hash).toBe('#activity&window=900');
    await context.close();
  }, 120_000);

  it("says how many of the window's failures the list shows (20 of 23), and lists every one of them in a search", async () => {
    const fleet = await superadminThread(server.url, 'fleet agent');
    const failures = [];
    for (let i = 0; i < 23; i++) failures.push((await runWithOneTool(fleet, { name: 'lookup', output: { content: `failure ${i}`, status: 'error' } })).id);
    const page = noteOutsideRequests(await browser.newPage({ viewport: { width: 1400, height: 900 } }), origin, outsideRequests);
    await signIn(page, origin, fleet.who.owner);
    await page.goto(`${origin}/#activity&window=900`);
    const section = page.locator('section[aria-label="Recent failures"]');
    await expect.poll(() => section.locator('h2').textContent()).toBe('Recent failures (23)');
    expect(await page.locator('[data-testid=activity-failures] li').count()).toBe(20);
    const count = page.getByTestId('activity-failures-count');
    expect(await count.textContent()).toBe("showing 20 of 23, the newest · search the window's failed tool calls");
    expect(await seriousViolations(page)).toEqual([]);

    // By the keyboard: every failure of the window, tool calls only, in a search across threads.
    await count.getByRole('link').focus();
    await page.keyboard.press('Enter');
    const hits = page.locator('[data-testid=search-results] li');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')).sort())).toEqual([...failures].sort());
    const address = new URLSearchParams(new URL(page.url()).hash.slice(1));
    expect([address.get('status'), address.get('kind')]).toEqual(['FAILED', 'TOOL']);
    expect(address.get('since')).not.toBeNull();
    await page.close();
  }, 120_000);
});
