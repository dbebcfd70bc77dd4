// Issue 42, item 7: GraphiQL's page has a Content-Security-Policy (its inline scripts allowed by
// hash, nothing else inline) under which it still works, and no page may be framed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.js';
import { E2E_JWT_SECRET } from '../e2e/support/server.js';
import { browserRequired, haveChromium, launchChromium } from './support/chromium.js';
import { openThread, signIn, superadminThread } from './support/page.js';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp({ AUTH_JWT_SECRET: E2E_JWT_SECRET });
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
    // The page talks to this server only: 'self' covers its WebSocket (CSP 3), no other host.
    expect(page.headers.get('content-security-policy')).toMatch(/connect-src 'self';/);
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

    it('the timeline page goes live over its WebSocket under its policy, with no violation', async () => {
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
      });
      const { who, threadId } = await superadminThread(url, 'policy');
      await signIn(page, new URL(url).origin, who.owner);
      await openThread(page, new URL(url).origin, `#thread=${threadId}`);
      expect(violations).toEqual([]);
      await page.close();
    });
  });
});
