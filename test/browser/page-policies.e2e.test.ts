// Issue 42, item 7: GraphiQL's page has a Content-Security-Policy (its inline scripts allowed by
// hash, nothing else inline) under which it still works, and no page may be framed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.js';
import { browserRequired, haveChromium, launchChromium } from './support/chromium.js';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp();
  url = await t.app.start(0);
});
afterAll(() => t.close());

describe('page policies', () => {
  it('GraphiQL and the timeline page set a CSP with frame-ancestors none', async () => {
    const graphiql = await fetch(url, { headers: { accept: 'text/html' } });
    const policy = graphiql.headers.get('content-security-policy') ?? '';
    expect(policy).toMatch(/frame-ancestors 'none'/);
    expect(policy).toMatch(/script-src 'self' 'sha256-/);
    expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/);
    const page = await fetch(new URL('/', url));
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
  });

  describe.skipIf(!haveChromium && !browserRequired)('in Chromium', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(() => browser?.close());

    it('GraphiQL runs under its policy: no violation, and the editor renders', async () => {
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
      });
      await page.goto(url);
      await page.locator('.graphiql-container').first().waitFor({ timeout: 20_000 });
      // The editor (Monaco, its workers from blob: URLs) has started: its first lines are drawn.
      await page.locator('.view-lines').first().waitFor({ timeout: 20_000 });
      expect(violations).toEqual([]);
      await page.close();
    });
  });
});
