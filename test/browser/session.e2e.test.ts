// The page's session and connection as a user meets them, in headless Chromium against the server
// process (PGlite, or PostgreSQL in the services pass): a token that expires while a thread is
// open, a token the server refuses at load, the server going away and coming back.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { mintToken } from '../../src/auth/jwt.js';
import { backendName } from '../support/database.js';
import { E2E_JWT_SECRET, e2eActors, serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium, launchChromium } from './support/chromium.js';
import { Relay } from './relay.js';

const REPO_ROOT = join(import.meta.dirname, '../..');

let server: ReturnType<typeof serverForFile>;
let relay: Relay;
let origin: string;
let browser: Browser;

async function newPage(): Promise<Page> {
  return browser.newPage({ viewport: { width: 1400, height: 900 } });
}

async function signIn(page: Page, token: string) {
  await page.fill('textarea[name=token]', token);
  await page.click('button[type=submit]');
}

/** A thread of a fresh superadmin with one finished run, and a token of that owner valid for `seconds`. */
async function threadWithShortToken(title: string, seconds: number) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title });
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 60);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2 });
  await worker.finishRun({ lease, status: 'COMPLETED' });
  const short = await mintToken(E2E_JWT_SECRET, { sub: who.ownerSub, role: 'superadmin' }, `${seconds}s`);
  return { who, threadId, runId: run.id, short };
}

describe.skipIf(!haveChromium && !browserRequired)(`the page's session and connection (${backendName})`, () => {
  beforeAll(() => void execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT }));
  server = serverForFile();
  beforeAll(async () => {
    relay = new Relay(Number(new URL(server.url).port));
    origin = await relay.listen();
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    relay?.close();
  });

  it('says so when the token expires while a thread is open, and asks to sign in again, back at that thread', async () => {
    const { who, threadId, runId, short } = await threadWithShortToken('expires while open', 8);
    const page = await newPage();
    await page.goto(`${origin}/#thread=${threadId}`);
    await signIn(page, short);
    await page.waitForSelector(`.row[data-key="${runId}"]`);
    await page.waitForSelector('[data-testid=connection]:text("live")');

    // The token expires: the server ends the page's streams, and the page asks for a new token.
    await page.waitForSelector('form.sign-in', { timeout: 20_000 });
    const alert = page.locator('form.sign-in [role=alert]');
    await expect.poll(() => alert.textContent()).toContain('expired');
    expect(await alert.textContent()).not.toContain('[object Object]');
    expect(await alert.textContent()).not.toContain('Subscribe again');
    expect(await page.locator('[data-testid=connection]').count()).toBe(0);

    // A fresh token opens the same thread again, live.
    await signIn(page, who.owner);
    await page.waitForSelector(`.row[data-key="${runId}"]`);
    await page.waitForSelector('[data-testid=connection]:text("live")');
    expect(new URL(page.url()).hash).toBe(`#thread=${threadId}`);
    expect(await page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }, 120_000);

  it('refuses a token the server does not accept at sign-in, on the thread list, a thread link and the Activity view, with the sign-in form', async () => {
    const { who, threadId } = await threadWithShortToken('for a bad token', 600);
    const expired = await mintToken(E2E_JWT_SECRET, { sub: who.ownerSub, role: 'superadmin' }, Math.floor(Date.now() / 1000) - 60);
    const page = await newPage();
    const refusal = page.locator('form.sign-in [role=alert]');
    for (const [hash, token, reason] of [
      ['', 'not-a-token', 'not a well-formed JWT'],
      [`#thread=${threadId}`, expired, 'The token expired at'],
      ['#activity', expired, 'The token expired at'],
    ] as const) {
      await page.goto(`${origin}/${hash}`);
      await signIn(page, token);
      await expect.poll(() => refusal.textContent()).toContain(reason);
      expect(await page.locator('textarea[name=token]').isVisible()).toBe(true);
      // Nothing pretends to be there: no thread, no list, no view waiting for ever.
      expect(await page.locator('section.timeline, section.threads, section.activity').count()).toBe(0);
      await page.reload();
      expect(await page.locator('textarea[name=token]').isVisible()).toBe(true);
    }
    await page.close();
  }, 120_000);

  it('says the server is unreachable while it is, and clears that once the page is live again, the row opened meanwhile read', async () => {
    const { who, threadId, runId } = await threadWithShortToken('through an outage', 600);
    const page = await newPage();
    await page.goto(`${origin}/#thread=${threadId}`);
    await signIn(page, who.owner);
    await page.waitForSelector(`.row[data-key="${runId}"]`);
    await page.waitForSelector('[data-testid=connection]:text("live")');

    relay.disconnect();
    await page.waitForSelector('[data-testid=connection]:text("reconnecting")');
    // A row opened while the server cannot be reached.
    await page.locator('.row.model').click();
    const banner = page.locator('.banner.error');
    await expect.poll(() => banner.textContent()).toBe('The server is unreachable; retrying…');

    relay.reconnect();
    await page.waitForSelector('[data-testid=connection]:text("live")');
    await expect.poll(() => banner.count()).toBe(0);
    await expect.poll(() => page.locator('.details .json-view').count()).toBeGreaterThan(0);
    await page.close();
  }, 120_000);

  it('says on the Activity view whether it is live, reconnecting while the server is away', async () => {
    const { who } = await threadWithShortToken('watched from Activity', 600);
    const page = await newPage();
    await page.goto(`${origin}/#activity`);
    await signIn(page, who.owner);
    await page.waitForSelector('[data-testid=activity-tools]');
    const pill = page.locator('[data-testid=connection]');
    await expect.poll(() => pill.textContent()).toBe('live');
    relay.disconnect();
    await expect.poll(() => pill.textContent()).toBe('reconnecting…');
    relay.reconnect();
    await expect.poll(() => pill.textContent()).toBe('live');
    await page.close();
  }, 120_000);
});
