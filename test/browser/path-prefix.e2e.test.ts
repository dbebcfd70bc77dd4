// The page behind a reverse proxy that serves the server under a path prefix
// (https://example.com/audit/, docs/operations.md "Behind a reverse proxy"): its files, its
// GraphQL requests, its live connection and its links all stay under the prefix.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startReverseProxy } from '../support/reverse-proxy.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { pageSuite, superadminThread } from './support/page.js';

let browser: Browser;

describe.skipIf(!haveChromium && !browserRequired)(`the page under a path prefix (${backendName})`, () => {
  const server = pageSuite((suite) => ({ browser } = suite));
  let proxy: Awaited<ReturnType<typeof startReverseProxy>>;
  beforeAll(async () => {
    proxy = await startReverseProxy(server.url, { prefix: '/audit' });
  });
  afterAll(() => proxy?.close());

  it('loads, signs in, reads and follows a thread live through /audit/, asking for nothing outside it', async () => {
    const { who, threadId } = await superadminThread(server.url, 'behind a prefix');
    const base = `${proxy.origin}/audit/`;
    const page = await browser.newPage();
    const outside: string[] = [];
    const failed: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(base) && !url.startsWith(base.replace(/^http/, 'ws')) && !/^(data|blob):/.test(url)) outside.push(url);
    });
    page.on('response', (response) => void (response.status() >= 400 && failed.push(`${response.status()} ${response.url()}`)));
    await page.goto(base);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector(`section.threads a[data-thread-id="${threadId}"]`);
    // GraphiQL's link is the prefix's GraphQL endpoint.
    expect(await page.locator('a:text("GraphiQL")').evaluate((a) => (a as HTMLAnchorElement).href)).toBe(`${base}graphql`);
    await page.click(`section.threads a[data-thread-id="${threadId}"]`);
    await page.waitForSelector('section.timeline');
    await page.waitForSelector('[data-testid=connection]:text("live")');
    // The way back to the thread list (also opened in a new tab) is the page under the prefix.
    expect(await page.locator('a.back').first().evaluate((a) => (a as HTMLAnchorElement).href)).toBe(base);
    expect(page.url()).toBe(`${base}#thread=${threadId}`);
    expect({ outside, failed }).toEqual({ outside: [], failed: [] });
    await page.close();
  }, 120_000);

  it("opens GraphiQL at the prefix's endpoint, which asks that endpoint for the schema", async () => {
    const base = `${proxy.origin}/audit/`;
    const page = await browser.newPage();
    const posted: string[] = [];
    page.on('request', (request) => void (request.method() === 'POST' && posted.push(request.url())));
    const introspected = page.waitForResponse((response) => response.request().method() === 'POST' && response.status() === 200);
    await page.goto(`${base}graphql`);
    await introspected;
    expect(new Set(posted)).toEqual(new Set([`${base}graphql`]));
    await page.close();
  }, 120_000);
});
