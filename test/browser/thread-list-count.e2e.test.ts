// An on-call engineer's thread list at fleet scale, in Chromium against the server process (PGlite,
// or PostgreSQL in the services pass): 3,000 threads. The list says how many show of how many
// (threads.totalCount), and of how many its title filter keeps, said to a screen reader after each
// read the reader asked for; a thread id pasted into the filter goes to that thread, by the keyboard
// too, however far down the list it is. Offline, axe-core clean.
import type { Browser } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { noteOutsideRequests, pageSuite, seriousViolations, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;
const outsideRequests: string[] = [];
const listing = { timeout: 20_000 };

describe.skipIf(!haveChromium && !browserRequired)(`the thread list of 3,000 threads in Chromium (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
  });

  /** One owner of 3,000 threads, made once for the file's tests: the oldest titled 'the oldest thread'. */
  let fleet: Promise<{ token: string; oldest: string }> | undefined;
  const fleetOf3000 = () =>
    (fleet ??= (async () => {
      const { who, threadId: oldest } = await superadminThread(server.url, 'the oldest thread');
      // 2,999 more, 15 to a request (the most aliases a document may use): one of them, and only one, a payments reconciler.
      const titles = Array.from({ length: 2999 }, (_, i) => (i === 1234 ? 'payments reconciler' : `fleet thread ${i}`));
      for (let from = 0; from < titles.length; from += 15) await createThreads(who.owner, titles.slice(from, from + 15));
      return { token: who.owner, oldest };
    })());

  it('says how many of how many threads show, with and without a filter', async () => {
    const { token } = await fleetOf3000();
    const page = noteOutsideRequests(await browser.newPage({ viewport: { width: 1400, height: 900 } }), origin, outsideRequests);
    await signIn(page, origin, token);
    const count = page.getByTestId('threads-count');
    const news = page.getByTestId('threads-news');
    const links = page.locator('section.threads li a');
    await expect.poll(() => count.textContent(), listing).toBe('20 of 3,000 threads');
    await page.click('text=More threads');
    await expect.poll(() => links.count(), listing).toBe(40);
    await expect.poll(() => count.textContent(), listing).toBe('40 of 3,000 threads');
    expect(await news.textContent()).toBe('40 of 3,000 threads');

    // A filter: how many of its matches show, said once read.
    await page.fill('input.thread-filter', 'RECONCILER');
    await expect.poll(() => links.allTextContents(), listing).toEqual(['payments reconciler']);
    await expect.poll(() => count.textContent(), listing).toBe('1 of 1 thread with “RECONCILER” in the title');
    expect(await news.textContent()).toBe('1 of 1 thread with “RECONCILER” in the title');
    await page.fill('input.thread-filter', 'fleet thread 12');
    await expect.poll(() => count.textContent(), listing).toBe('20 of 110 threads with “fleet thread 12” in the title');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  }, 300_000);

  it('goes to a thread by its pasted id, 150 presses of More threads down, by the keyboard', async () => {
    const { token, oldest } = await fleetOf3000();
    const page = noteOutsideRequests(await browser.newPage({ viewport: { width: 1400, height: 900 } }), origin, outsideRequests);
    await signIn(page, origin, token);
    // The link follows the filter box, reached by Tab.
    await page.fill('input.thread-filter', ` ${oldest.toUpperCase()} `);
    const byId = page.getByTestId('thread-by-id');
    await expect.poll(() => byId.textContent(), listing).toBe(`Open thread ${oldest}`);
    await page.focus('input.thread-filter');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('thread-by-id');
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Enter');
    await page.waitForSelector('section.timeline');
    expect(new URL(page.url()).hash).toBe(`#thread=${oldest}`);
    await expect.poll(() => page.locator('h1.view-title').textContent(), listing).toContain('the oldest thread');
    await page.close();
  }, 300_000);

  async function createThreads(token: string, titles: string[]) {
    const fields = titles.map((_, i) => `t${i}: createThread(input: { title: $t${i} }) { id }`).join(' ');
    const document = `mutation(${titles.map((_, i) => `$t${i}: String`).join(', ')}) { ${fields} }`;
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: document, variables: Object.fromEntries(titles.map((title, i) => [`t${i}`, title])) }),
    });
    const body = (await response.json()) as { errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
  }
});
