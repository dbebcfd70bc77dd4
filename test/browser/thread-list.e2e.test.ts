// The thread list in Chromium past the most threads one read returns (100), against the server
// process (PGlite, or PostgreSQL in the services pass): the newest keep refreshing, and the page
// says which rows do not, with a way to read them again.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;

const listing = { timeout: 20_000 };

describe.skipIf(!haveChromium && !browserRequired)(`the thread list past 100 threads in Chromium (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));

  it('keeps refreshing the newest 100 and says the rows beyond are as read, with a way to read them again', async () => {
    const { who, owner, worker, threadId: oldest } = await superadminThread(server.url, 'listed thread 0');
    const ids = [oldest];
    // One request each (the client's retries could create a thread twice).
    for (let i = 1; i < 105; i++) ids.push(await createThread(who.owner, `listed thread ${i}`));
    const page: Page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    const links = page.locator('section.threads li a');
    const item = (id: string) => page.locator(`section.threads li[data-thread-id="${id}"]`);
    await expect.poll(() => links.count(), listing).toBe(20);
    for (let shown = 40; shown <= 120; shown += 20) {
      await page.click('text=More threads');
      await expect.poll(() => links.count(), listing).toBe(Math.min(shown, ids.length));
    }
    expect(await page.locator('text=More threads').count()).toBe(0);

    // A new thread shows at the top, and a run's status on a thread among the newest 100.
    const newer = await createThread(who.owner, 'created past 100 shown');
    await expect.poll(() => links.first().textContent(), listing).toBe('created past 100 shown');
    const run = await owner.createRun({ threadId: ids.at(-1)! });
    await worker.claimRun(run.id, 60);
    await expect.poll(() => item(ids.at(-1)!).locator('.status').textContent(), listing).toBe('RUNNING');
    // The rows beyond stay, each once, the oldest last; the one pushed past the 100 newest with them.
    expect(await links.count()).toBe(ids.length + 1);
    expect(await links.last().textContent()).toBe('listed thread 0');
    expect(new Set(await page.locator('section.threads li').evaluateAll((items) => items.map((li) => li.getAttribute('data-thread-id')))).size).toBe(ids.length + 1);
    expect(await item(newer).count()).toBe(1);
    // Said where the rows beyond begin, politely to a screen reader.
    const notice = page.locator('section.threads ul:has(> li:nth-child(100)) + [role=status]');
    await expect.poll(() => notice.textContent(), listing).toMatch(/^The 100 newest threads refresh every 5 seconds; those below them are as read at .+\.$/);

    // A run on the oldest thread shows once those rows are read again.
    const oldRun = await owner.createRun({ threadId: oldest });
    await worker.claimRun(oldRun.id, 60);
    // A refresh after that run started (the newest thread's run shows) leaves the oldest row as read.
    const newerRun = await owner.createRun({ threadId: newer });
    await worker.claimRun(newerRun.id, 60);
    await expect.poll(() => item(newer).locator('.status').textContent(), listing).toBe('RUNNING');
    expect(await item(oldest).locator('.status').count()).toBe(0);
    await page.click('section.threads button:text("Read them again")');
    await expect.poll(() => item(oldest).locator('.status').textContent(), listing).toBe('RUNNING');
    expect(await links.count()).toBe(ids.length + 1);
    await page.close();
  }, 240_000);

  async function createThread(token: string, title: string): Promise<string> {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'mutation($title: String) { createThread(input: { title: $title }) { id } }', variables: { title } }),
    });
    const body = (await response.json()) as { data: { createThread: { id: string } }; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data.createThread.id;
  }
});
