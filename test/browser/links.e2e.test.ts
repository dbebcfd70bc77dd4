// Links a support engineer shares by copying the address bar, and follows: a link that is no
// thread address, a link to a row the thread does not hold, a link opened in a new tab with
// Ctrl or the middle button.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;
let context: BrowserContext;

async function newPage(): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  return page;
}

const banner = (page: Page) => page.locator('[role=alert]').allInnerTexts();

describe.skipIf(!haveChromium && !browserRequired)(`links to threads and rows (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  beforeAll(async () => {
    context = await browser.newContext();
  });

  it('says a link is no thread address instead of showing the thread list as if it were one, and Back leaves it', async () => {
    const { who, threadId } = await superadminThread(server.url, 'linked');
    const page = await newPage();
    await signIn(page, origin, who.owner);
    // A link cut short in a chat, and one with the sentence's full stop after it.
    for (const link of [`#thread=${threadId.slice(0, 20)}`, `#thread=${threadId}.`]) {
      await page.goto(`${origin}/${link}`);
      await expect.poll(() => banner(page)).toEqual([expect.stringMatching(/not the address of a thread/)]);
      expect(await page.title()).toMatch(/^Link not understood · /);
      // The address stays as followed, so the reader sees what was wrong with it.
      expect(page.url()).toBe(`${origin}/${link}`);
    }
    // Back steps to the link before: the page does not push an entry that Back returns through.
    await page.goBack();
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId.slice(0, 20)}`);
    await page.goBack();
    await expect.poll(() => page.url()).toBe(`${origin}/`);
    await page.waitForSelector('section.threads');
    expect(await banner(page)).toEqual([]);
    await page.close();
  }, 120_000);
});
