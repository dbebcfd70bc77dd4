// Reads over MAX_ANSWER_PAYLOAD_BYTES, in Chromium (docs/semantics.md "Reads", docs/debug-ui.md):
// the server refuses such an answer whole, and the page asks for fewer items, then pages on, so a
// thread, the tool-call ledger and search with large payloads show every row. Small limits keep
// the data small: MAX_JSON_BYTES 16384, so an answer carries at most 6 × 16384 bytes of payloads.
import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { e2eActors } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { pageSuite, signIn } from './support/page.js';

const MAX_JSON_BYTES = 16384;
/** A payload near MAX_JSON_BYTES: seven of them are over the answer budget. */
const LARGE = 15_000;

let origin: string;
let browser: Browser;
let who: Awaited<ReturnType<typeof e2eActors>>;
let heavyErrors: { threadId: string; ids: string[] };
let heavyInputs: { threadId: string };

/** A run of `calls` model calls, each declaring one tool call with `args`, whose tool then ends with `error` or completes. */
async function writeRun(url: string, threadId: string, calls: number, args: (i: number) => Record<string, unknown>, error?: (i: number) => unknown) {
  const owner = new AuditClient({ url, token: who.owner });
  const worker = new AuditClient({ url, token: who.worker });
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const ids: string[] = [];
  let sequence = 1;
  for (let i = 1; i <= calls; i++) {
    ids.push((await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: sequence++, model: 'gpt-x' })).id);
    await worker.recordModelFinished({ lease, operationId: `m${i}`, status: 'COMPLETED', sequence: sequence++, toolCalls: [{ id: `c${i}`, name: 'write_file', args: args(i) }] });
    ids.push((await worker.recordToolStarted({ lease, toolCallId: `c${i}`, name: 'write_file', effectiveInput: args(i), sequence: sequence++ })).id);
    if (error) await worker.recordToolError({ lease, toolCallId: `c${i}`, error: error(i), sequence: sequence++ });
    else await worker.recordToolFinished({ lease, toolCallId: `c${i}`, output: { content: 'written', status: 'success' }, sequence: sequence++ });
  }
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return ids;
}

describe.skipIf(!haveChromium && !browserRequired)(`reads over the answer budget, in the page (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite), {
    MAX_JSON_BYTES: String(MAX_JSON_BYTES),
    MAX_ANSWER_PAYLOAD_BYTES: String(6 * MAX_JSON_BYTES),
  });
  beforeAll(async () => {
    who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const errors = await owner.createThread({ title: 'ten large tool errors' });
    const ids = await writeRun(server.url, errors.id, 10, (i) => ({ path: `f${i}` }), (i) => `stderr follows ${i}\n${'x'.repeat(LARGE)}`);
    heavyErrors = { threadId: errors.id, ids };
    const inputs = await owner.createThread({ title: 'eight large inputs' });
    await writeRun(server.url, inputs.id, 8, (i) => ({ path: `f${i}`, content: 'y'.repeat(LARGE) }));
    heavyInputs = { threadId: inputs.id };
  }, 120_000);

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1600, height: 1400 });
    return page;
  }

  it('opens a thread whose errors are over the budget from its link, then shows every row as older entries are asked for', async () => {
    const page = await newPage();
    // The link first, then the sign-in: the thread list's read finishes alongside the thread's.
    await page.goto(`${origin}/#thread=${heavyErrors.threadId}`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('h1.view-title').textContent(), { timeout: 20_000 }).toBe('ten large tool errors');
    const loaded = page.locator('[data-testid=loaded-count]');
    await expect.poll(() => loaded.textContent(), { timeout: 20_000 }).toMatch(/^\d+ entries loaded; older ones exist/);
    expect(await page.locator('.banner.error').count()).toBe(0);
    // The user asks for more until the thread holds no older entries.
    for (let pages = 0; (await page.locator('[data-testid=load-older]').count()) > 0; pages++) {
      expect(pages).toBeLessThan(20);
      const before = await loaded.textContent();
      await page.click('[data-testid=load-older]');
      await expect.poll(() => loaded.textContent(), { timeout: 20_000 }).not.toBe(before);
    }
    expect(await loaded.textContent()).toBe('20 entries loaded');
    for (const id of heavyErrors.ids) expect(await page.locator(`.row[data-key="${id}"]`).count(), id).toBe(1);
    expect(await page.locator('.banner.error').count()).toBe(0);
    await page.close();
  });

  it("says why a thread's first read failed, where its rows would be, though the thread list's read ends after it", async () => {
    const page = await newPage();
    let shown!: () => void;
    const failureShown = new Promise<void>((resolve) => (shown = resolve));
    // A refusal the page cannot ask around (its own wording); the list's read answers once it shows.
    await page.route(`${origin}/graphql`, async (route) => {
      const body = route.request().postData() ?? '';
      if (/threadAudits\(/.test(body)) {
        return route.fulfill({ contentType: 'application/json', body: JSON.stringify({ errors: [{ message: 'Refused for this test.', extensions: { code: 'BAD_USER_INPUT' } }] }) });
      }
      if (/threads\(/.test(body)) await failureShown;
      await route.continue();
    });
    await page.goto(`${origin}/#thread=${heavyErrors.threadId}`);
    await page.fill('textarea[name=token]', who.owner);
    const listAnswered = page.waitForResponse((response) => /threads\(/.test(response.request().postData() ?? ''));
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('[data-testid=rows-empty]').textContent(), { timeout: 20_000 }).toBe('The thread could not be read: Refused for this test.');
    shown();
    await (await listAnswered).finished();
    // Two frames: the page has handled the list's answer.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    expect(await page.locator('.banner.error').allTextContents()).toEqual(['Refused for this test.']);
    expect(await page.locator('[data-testid=rows-empty]').textContent()).toBe('The thread could not be read: Refused for this test.');
    await page.close();
  });

  it('shows every entry of the ledger across threads, and every search hit, when a page of them is over the budget', async () => {
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await page.click('button:text("Tool calls across threads")');
    const entries = page.locator('[data-testid=ledger] tbody tr');
    await expect.poll(() => entries.count(), { timeout: 20_000 }).toBe(18);
    expect(await page.locator(`[data-testid=ledger] tr[data-thread-id="${heavyInputs.threadId}"]`).count()).toBe(8);
    expect(await page.locator('[data-testid=ledger-count]').textContent()).toBe('18 tool calls, newest first');

    // Search across threads: hits carry their errors; the next results are asked for until there are no more.
    const hits = page.locator('[data-testid=search-results] li');
    await page.fill('input[name=q]', 'stderr follows');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => hits.count(), { timeout: 20_000 }).toBeGreaterThan(0);
    for (let pages = 0; (await page.locator('[data-testid=search-more]').count()) > 0; pages++) {
      expect(pages).toBeLessThan(20);
      const before = await hits.count();
      await page.click('[data-testid=search-more]');
      await expect.poll(() => hits.count(), { timeout: 20_000 }).toBeGreaterThan(before);
    }
    expect(await hits.count()).toBe(10);
    await expect.poll(() => page.locator('[data-testid=search-results]').textContent()).toContain('10 matching audits');
    expect(await page.locator('.banner.error').count()).toBe(0);
    await page.close();
  });
});
