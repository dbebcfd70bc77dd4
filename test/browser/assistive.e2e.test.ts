// The page as a keyboard, screen-reader, dark-room, high-contrast and slow-network user meets it,
// in headless Chromium against the server process: names and roles, where focus goes, what is
// announced, colours in each scheme, and what a slow or failing network leaves on screen.
import type { Browser, Page, Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, seriousViolations, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** Run 1 completes; run 2's tool `fetch` ran with another input than the model declared, and failed. */
async function threadWithFailedTool(owner: AuditClient, worker: AuditClient, threadId: string) {
  const first = await owner.createRun({ threadId });
  let lease = await worker.claimRun(first.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2 });
  await worker.finishRun({ lease, status: 'COMPLETED' });
  const second = await owner.createRun({ threadId });
  lease = await worker.claimRun(second.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm2', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({
    lease, operationId: 'm2', status: 'COMPLETED', sequence: 2,
    toolCalls: [{ id: 'c1', name: 'fetch', args: { url: 'https://a.example', keep: 'same', retries: 1 } }],
  });
  const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'fetch', effectiveInput: { url: 'https://b.example', keep: 'same', timeout: 5 }, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'permission denied', status: 'error' }, sequence: 4 });
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { toolId: tool.id, runIds: [first.id, second.id] };
}

const focused = (page: Page) => page.evaluate(() => {
  const element = document.activeElement;
  return element ? `${element.tagName.toLowerCase()}:${element.textContent?.trim().slice(0, 60)}` : null;
});

/** Holds each GraphQL request whose query matches `pattern` until `release` is called. */
function holdRequests(page: Page, pattern: RegExp) {
  const held: Route[] = [];
  let holding = true;
  const ready = page.route('**/graphql', (route) => {
    if (holding && pattern.test(route.request().postData() ?? '')) held.push(route);
    else void route.continue();
  });
  return { ready, release: () => ((holding = false), held.splice(0).forEach((route) => void route.continue())) };
}

/** Answers the first `count` GraphQL requests whose query matches `pattern` with a proxy's HTML 502. */
async function proxyErrorPages(page: Page, pattern: RegExp, count: number) {
  const proxy = { left: count };
  await page.route('**/graphql', (route) => {
    if (proxy.left > 0 && pattern.test(route.request().postData() ?? '')) {
      proxy.left--;
      return void route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body>502 Bad Gateway</body></html>' });
    }
    void route.continue();
  });
  return proxy;
}

describe.skipIf(!haveChromium && !browserRequired)(`the page for assistive technology and a rough network (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it('names the sign-in token field, passes axe there, and refuses a token with spaces inside only if it still is no token', async () => {
    const { who } = await superadminThread(server.url, 'wrapped token');
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${origin}/`);
    expect(await page.getByRole('textbox', { name: /token/i }).count()).toBe(1);
    expect(await seriousViolations(page, 'sign-in')).toEqual([]);
    expect(await page.title()).toMatch(/Sign in/);

    // A token copied from a wrapped terminal: line breaks and spaces inside it.
    const wrapped = `Bearer ${who.owner.slice(0, 40)}\n  ${who.owner.slice(40, 90)}\r\n${who.owner.slice(90)}\n`;
    await page.fill('textarea[name=token]', wrapped);
    await page.click('button[type=submit]');
    await page.waitForSelector('section.threads li');
    expect(await page.locator('.banner.error').count()).toBe(0);
    // The thread list's heading takes the focus; signing out gives it to the sign-in form's.
    await expect.poll(() => focused(page)).toMatch(/^h[12]:Threads/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => focused(page)).toBe('h1:Agent audit timeline');

    await page.fill('textarea[name=token]', 'this is not a token, it is a sentence');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('form.sign-in [role=alert]').textContent()).toContain('not a token');
    expect(await page.locator('textarea[name=token]').isVisible()).toBe(true);
    await page.close();
  }, 120_000);

  it('lets a screen reader read the rows, hear the selection move by n and p, and find the details; focus and title follow the view', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'a thread read aloud');
    const { toolId, runIds } = await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await page.locator(`a[data-thread-id="${threadId}"]`).click();
    await page.waitForSelector('[data-testid=connection]:text("live")');
    await expect.poll(() => focused(page)).toBe('h1:a thread read aloud');
    expect(await page.title()).toContain('a thread read aloud');
    expect(await page.locator('main').count()).toBe(1);

    const grid = page.getByRole('grid', { name: /timeline/i });
    await grid.waitFor();
    await expect.poll(() => page.getByRole('row', { name: /run 2/ }).count()).toBeGreaterThan(0);
    await grid.focus();
    await page.keyboard.press('n');
    await expect.poll(() => page.locator('[data-testid=selection-announcement]').textContent()).toMatch(/^Failed tool fetch \(c1\), run 2/);
    // Focus stays on the rows, which point at the selected one.
    const active = await grid.getAttribute('aria-activedescendant');
    expect(active).toBe(`row-${toolId}`);
    expect(await page.locator(`#row-${toolId}`).getAttribute('aria-selected')).toBe('true');
    expect(await page.locator(`[data-key="${runIds[0]}"]`).getAttribute('aria-selected')).toBe('false');
    await page.keyboard.press('ArrowUp');
    expect(await grid.getAttribute('aria-activedescendant')).not.toBe(active);
    await page.keyboard.press('ArrowDown');
    expect(await page.getByRole('complementary', { name: /details/i }).count()).toBe(1);

    // The declared-vs-effective diff, in both schemes.
    await page.locator('.details .diff').waitFor();
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await seriousViolations(page, `${colorScheme}, diff open`)).toEqual([]);
    }

    await page.getByRole('link', { name: '← threads' }).click();
    await expect.poll(() => focused(page)).toMatch(/^h[12]:Threads/);
    expect(await page.title()).toMatch(/Threads/);
    await page.getByRole('link', { name: 'Activity', exact: true }).click();
    await expect.poll(() => focused(page)).toBe('h1:Tool activity');
    await page.close();
  }, 120_000);

  it('keeps bars, pressed buttons and diff marks visible in forced colours', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'high contrast');
    const { toolId } = await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.emulateMedia({ forcedColors: 'active' });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${toolId}`);
    await page.locator('.details .diff').waitFor();
    const look = (selector: string) => page.locator(selector).first().evaluate((element) => {
      const style = getComputedStyle(element);
      return { background: style.backgroundColor, color: style.color, decoration: style.textDecorationLine, border: style.borderLeftStyle };
    });
    expect((await look('.row .bar')).background).not.toBe((await look('.row .track')).background);
    await page.getByRole('button', { name: 'Errors only' }).click();
    expect((await look('[data-testid=errors-only]')).background).not.toBe((await look('.views button[aria-pressed=false], .failure-bar button:not([aria-pressed])')).background);
    await page.getByRole('button', { name: 'Errors only' }).click();
    const added = await look('.details .diff .jsondiffpatch-added .jsondiffpatch-property-name');
    const deleted = await look('.details .diff .jsondiffpatch-deleted .jsondiffpatch-property-name');
    expect(added.decoration === 'underline' || added.border !== 'none').toBe(true);
    expect(deleted.decoration).toBe('line-through');
    await page.close();
  }, 120_000);

  it("reflows at 320 px (400 % zoom): a call whose input holds a long unbroken value scrolls nothing sideways but its payloads' boxes, which the keyboard reaches and scrolls", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'reflowed');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'fetch', args: {} }] });
    // A signed URL, a token, base64: no space to break at.
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'fetch', effectiveInput: { url: `https://b.example/?sig=${'a1'.repeat(150)}` }, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: `denied ${'z'.repeat(300)}`, status: 'error', trace: Array.from({ length: 60 }, (_, i) => `frame ${i}`) }, sequence: 4 });
    const page = await browser.newPage({ viewport: { width: 320, height: 640 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
    await page.locator('.details .diff').waitFor();
    const widths = await page.evaluate(() => ({ document: document.documentElement.scrollWidth, app: document.getElementById('app')!.scrollWidth }));
    expect(widths).toEqual({ document: 320, app: 320 });
    expect(await seriousViolations(page)).toEqual([]);
    // On a payload's box, the arrow keys scroll it; they do not move the timeline's selection away from it.
    const output = page.locator('.details .json-view[data-label=output] pre');
    await output.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => output.evaluate((pre) => pre.scrollTop)).toBeGreaterThan(0);
    expect(await page.locator('[role=grid]').getAttribute('aria-activedescendant')).toBe(`row-${tool.id}`);
    await page.close();
  }, 120_000);

  it('shows a loading thread as loading, not as an empty one', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'slow to read');
    await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    const hold = holdRequests(page, /query Thread(Audits|Runs)\b/);
    await hold.ready;
    await page.goto(`${origin}/#thread=${threadId}`);
    await page.waitForSelector('section.timeline');
    const text = await page.locator('section.timeline').innerText();
    expect(text).toContain('Loading the thread…');
    for (const claim of ['untitled thread', 'owned by ·', '0 entries loaded', 'Nothing failed in this thread', 'No runs in this thread yet']) expect(text).not.toContain(claim);
    hold.release();
    await page.waitForSelector('h1:has-text("slow to read")');
    await page.waitForSelector('.row.tool');
    await page.close();
  }, 120_000);

  it('says a proxy answered with HTML instead of GraphQL, retries the read, and clears the banner once a request succeeds', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'behind a proxy');
    const { toolId } = await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await proxyErrorPages(page, /query Audit\b/, 2);
    await page.locator(`#row-${toolId}`).click();
    const banner = page.locator('.banner.error[role=alert]');
    await expect.poll(() => banner.textContent()).toContain('HTTP 502');
    expect(await banner.textContent()).not.toContain('Unexpected token');
    // Retried by itself: the details load and the banner goes.
    await page.locator('.details .diff').waitFor({ timeout: 20_000 });
    await expect.poll(() => banner.count(), { timeout: 10_000 }).toBe(0);
    await page.close();
  }, 120_000);

  it("reads the thread's tool-call ledger again by itself after a proxy's error page", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'ledger behind a proxy');
    await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const proxy = await proxyErrorPages(page, /query ToolCallLedger\b/, 1);
    await page.click('button:text("Tool calls")');
    await expect.poll(() => proxy.left).toBe(0);
    await page.locator('[data-testid=ledger] tr[data-tool-call-id="c1"]').waitFor({ timeout: 20_000 });
    await page.close();
  }, 120_000);

  it('says "Copy needs https" where the clipboard is not available, instead of failing silently', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'no clipboard');
    const { toolId } = await threadWithFailedTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.addInitScript(() => Object.defineProperty(navigator, 'clipboard', { value: undefined }));
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${toolId}`);
    await page.locator('[data-testid=copy-json]').click();
    await expect.poll(() => page.locator('.details').textContent()).toContain('Copy needs https or localhost; select the text instead');
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
