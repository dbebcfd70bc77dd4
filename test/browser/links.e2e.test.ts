// Links a support engineer shares by copying the address bar, and follows: a link that is no
// thread address, a link to a row the thread does not hold, a link opened in a new tab with
// Ctrl or the middle button.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;
let context: BrowserContext;

/** One run: a model call declaring tool `c1`, which fails. */
async function writeRun(owner: AuditClient, worker: AuditClient, threadId: string) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  const model = await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'pay', args: { n: 1 } }] });
  const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'pay', effectiveInput: { n: 1 }, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'permission denied', status: 'error' }, sequence: 4 });
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { runId: run.id, modelId: model.id, toolId: tool.id };
}

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

  it('opens a thread, a search hit and a ledger entry in a new tab on Ctrl+click, at its row, this tab staying where it was', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'opened in tabs');
    const { toolId } = await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    /** Ctrl+clicks `selector`: the address of the tab it opened, this tab's address unchanged. */
    const ctrlClick = async (selector: string) => {
      const before = page.url();
      const opened = context.waitForEvent('page');
      await page.click(selector, { modifiers: ['Control'] });
      const tab = await opened;
      await tab.waitForLoadState();
      const address = tab.url();
      await tab.close();
      expect(page.url()).toBe(before);
      return address;
    };
    expect(await ctrlClick(`section.threads a[data-thread-id="${threadId}"]`)).toBe(`${origin}/#thread=${threadId}`);
    await page.fill('input[name=q]', 'permission denied');
    await page.press('input[name=q]', 'Enter');
    await page.waitForSelector(`[data-testid=search-results] li[data-audit-id="${toolId}"]`);
    expect(await ctrlClick(`[data-testid=search-results] li[data-audit-id="${toolId}"] a`)).toBe(`${origin}/#thread=${threadId}&audit=${toolId}`);
    await page.click('button:text("Clear")');
    await page.click('button:text("Tool calls across threads")');
    await page.waitForSelector(`[data-testid=ledger] tr[data-thread-id="${threadId}"]`);
    expect(await ctrlClick(`[data-testid=ledger] tr[data-thread-id="${threadId}"] a`)).toBe(`${origin}/#thread=${threadId}&audit=${toolId}`);
    // A plain click still opens it here.
    await page.click(`[data-testid=ledger] tr[data-thread-id="${threadId}"] a`);
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&audit=${toolId}`);
    await page.close();
  }, 120_000);

  it('follows a link whose address a mail scanner percent-encoded (#thread%3D…%26audit%3D…) to its row', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'scanned');
    const { toolId } = await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#${encodeURIComponent(`thread=${threadId}&audit=${toolId}`)}`);
    await page.waitForSelector(`.row.selected[data-key="${toolId}"]`);
    expect(await banner(page)).toEqual([]);
    await page.close();
  }, 120_000);

  it('says a linked row is not in the thread, to its owner and to a colleague who may not read its audits, instead of dropping it silently', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'row gone');
    const { runId, toolId } = await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    const missing = '01000000-0000-7000-8000-000000000000';
    await openThread(page, origin, `#thread=${threadId}&audit=${missing}`);
    await page.waitForSelector(`.row[data-key="${runId}"]`);
    await expect.poll(() => page.locator('[data-testid=row-not-found]').innerText()).toMatch(new RegExp(`no row.*${missing}`));
    // Once the reader selects a row, the notice is over.
    await page.click(`.row[data-key="${toolId}"]`);
    await expect.poll(() => page.locator('[data-testid=row-not-found]').count()).toBe(0);
    await page.close();
    // A superadmin who does not own the thread sees its runs; the tool's row is an audit.
    const colleague = await (await superadminThread(server.url, 'colleague')).who.owner;
    const other = await (await browser.newContext()).newPage();
    await signIn(other, origin, colleague);
    await openThread(other, origin, `#thread=${threadId}&audit=${toolId}`);
    await other.waitForSelector(`.row[data-key="${runId}"]`);
    await other.waitForSelector('[data-testid=audits-hidden]');
    await expect.poll(() => other.locator('[data-testid=row-not-found]').innerText()).toMatch(/owner/);
    await other.context().close();
  }, 120_000);

  it("keeps 'Errors only' in the address: a reload, a shared link and Back show the thread filtered as it was", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'failures only');
    const { modelId, toolId } = await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.waitForSelector(`.row[data-key="${modelId}"]`);
    await page.click('[data-testid=errors-only]');
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&errors`);
    await page.click(`.row[data-key="${toolId}"]`);
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&audit=${toolId}&errors`);
    const shown = async (target: Page) => {
      await target.waitForSelector(`.row.selected[data-key="${toolId}"]`);
      return { pressed: await target.getAttribute('[data-testid=errors-only]', 'aria-pressed'), model: await target.locator(`.row[data-key="${modelId}"]`).count() };
    };
    await page.reload();
    expect(await shown(page)).toEqual({ pressed: 'true', model: 0 });
    const colleague = await (await browser.newContext()).newPage();
    await signIn(colleague, origin, who.owner);
    await colleague.goto(page.url());
    expect(await shown(colleague)).toEqual({ pressed: 'true', model: 0 });
    await colleague.context().close();
    // Unpressed, the address says so; a thread opened from the list keeps the filter as it is.
    await page.click('[data-testid=errors-only]');
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&audit=${toolId}`);
    await page.close();
  }, 120_000);

  it("names the Activity view's tool and window in the tab's title, so ten tabs of it tell apart", async () => {
    const { who } = await superadminThread(server.url, 'activity tabs');
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await page.goto(`${origin}/#activity&window=900&tool=pay`);
    await expect.poll(() => page.title()).toBe('Activity: pay, 15 min · Agent audit timeline');
    await page.goto(`${origin}/#activity`);
    await expect.poll(() => page.title()).toBe('Activity: all tools, 1 h · Agent audit timeline');
    await page.close();
  }, 120_000);

  it('keeps a search in the address: a reload, a shared link and a hit opened show the same results', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'searched');
    const { toolId } = await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await page.fill('input[name=q]', 'permission denied');
    await page.selectOption('select[aria-label=Status]', 'FAILED');
    const hit = `[data-testid=search-results] li[data-audit-id="${toolId}"]`;
    await page.waitForSelector(hit);
    await expect.poll(() => page.url()).toBe(`${origin}/#q=permission+denied&status=FAILED`);
    await page.reload();
    await page.waitForSelector(hit);
    expect(await page.inputValue('input[name=q]')).toBe('permission denied');
    // A hit opened: its row, and the search across threads it came from.
    await page.click(`${hit} a`);
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&audit=${toolId}&q=permission+denied&status=FAILED&in=all`);
    const colleague = await (await browser.newContext()).newPage();
    await signIn(colleague, origin, who.owner);
    await colleague.goto(page.url());
    await colleague.waitForSelector(hit);
    await colleague.waitForSelector(`.row.selected[data-key="${toolId}"]`);
    expect(await colleague.inputValue('select[aria-label=Where]')).toBe('all');
    await colleague.context().close();
    // Cleared, the address holds no search.
    await page.click('button:text("Clear")');
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&audit=${toolId}`);
    await page.close();
  }, 120_000);

  it("keeps the tool-call ledger in the address, a thread's and the one across threads: a reload or a shared link shows it", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'ledger linked');
    await writeRun(owner, worker, threadId);
    const page = await newPage();
    await signIn(page, origin, who.owner);
    await page.click('button:text("Tool calls across threads")');
    await expect.poll(() => page.url()).toBe(`${origin}/#calls`);
    await page.reload();
    await page.waitForSelector(`[data-testid=ledger] tr[data-thread-id="${threadId}"]`);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.click('.views button:text("Tool calls")');
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}&calls`);
    await page.reload();
    await page.waitForSelector('[data-testid=ledger] tbody tr');
    expect(await page.getAttribute('.views button:text("Tool calls")', 'aria-pressed')).toBe('true');
    await page.click('.views button:text("Timeline")');
    await expect.poll(() => page.url()).toBe(`${origin}/#thread=${threadId}`);
    await page.close();
  }, 120_000);
});
