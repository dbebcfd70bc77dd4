// The page left open all day, as a laptop's tab lives: the server restarted under it (a deploy),
// the network gone without a word; the page expected to say so, follow on live, and catch up.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { createTestStorage, type TestStorage } from '../support/storage.js';
import { e2eActors, startServer, type ServerProcess } from '../e2e/support/server.js';
import { browserRequired, haveChromium, launchChromium } from './support/chromium.js';
import { Relay } from './relay.js';

const REPO_ROOT = join(import.meta.dirname, '../..');

let browser: Browser;
let storage: TestStorage;
let instance: ServerProcess;
let relay: Relay;
let origin: string;

/** The server stopped as a deploy stops it (SIGTERM: its streams end with SERVER_STOPPING), and the next one started on the same data. */
async function deploy(during: () => Promise<void> = async () => {}) {
  // New connections meet the next instance while it starts; open ones hear the old one stop.
  relay.starting();
  expect(await instance.stop('SIGTERM')).toBe(0);
  instance = await startServer(storage);
  await during();
  relay.reconnect(Number(new URL(instance.url).port));
}

const rowsShown = (page: Page) =>
  page.$$eval('.row', (rows) => rows.map((row) => `${(row as HTMLElement).dataset.key}:${(row as HTMLElement).dataset.status}`).sort());

describe.skipIf(!haveChromium && !browserRequired)(`the page left open through a deploy and a network gone silent (${backendName})`, () => {
  beforeAll(() => void execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT }));
  beforeAll(async () => {
    storage = await createTestStorage();
    instance = await startServer(storage);
    relay = new Relay(Number(new URL(instance.url).port));
    origin = await relay.listen();
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    relay?.close();
    await instance?.stop('SIGKILL');
    await storage?.remove();
  });

  it('follows an open thread on through a restart of the server: live again, with what was written meanwhile and after', async () => {
    const who = await e2eActors();
    const owner = () => new AuditClient({ url: instance.url, token: who.owner });
    const { id: threadId } = await owner().createThread({ title: 'open through a deploy' });
    const first = await owner().createRun({ threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${origin}/#thread=${threadId}`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector(`.row[data-key="${first.id}"]`);
    await page.waitForSelector('[data-testid=connection]:text("live")');

    let during = '';
    await deploy(async () => void (during = (await owner().createRun({ threadId })).id));
    await page.locator(`.row[data-key="${during}"]`).waitFor({ timeout: 30_000 });
    const after = await owner().createRun({ threadId });
    await page.locator(`.row[data-key="${after.id}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator('[data-testid=connection]').textContent()).toBe('live');
    expect(await rowsShown(page)).toEqual([`${first.id}:QUEUED`, `${during}:QUEUED`, `${after.id}:QUEUED`].sort());
    // Nothing left on the banner from the old instance's goodbye.
    await expect.poll(() => page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }, 180_000);

  it('says it is reconnecting when its connection dies without a word, and catches up once the network is back', async () => {
    const who = await e2eActors();
    const owner = () => new AuditClient({ url: instance.url, token: who.owner });
    const { id: threadId } = await owner().createThread({ title: 'a network that went away silently' });
    const first = await owner().createRun({ threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${origin}/#thread=${threadId}`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector(`.row[data-key="${first.id}"]`);
    const pill = page.locator('[data-testid=connection]');
    await expect.poll(() => pill.textContent()).toBe('live');

    // The laptop joins another network: the open connection carries nothing more, and nobody closes it.
    relay.stall();
    const during = await owner().createRun({ threadId });
    await expect.poll(() => pill.textContent(), { timeout: 30_000 }).toBe('reconnecting…');
    relay.reconnect();
    await page.locator(`.row[data-key="${during.id}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => pill.textContent()).toBe('live');
    const after = await owner().createRun({ threadId });
    await page.locator(`.row[data-key="${after.id}"]`).waitFor({ timeout: 30_000 });
    expect(await rowsShown(page)).toEqual([`${first.id}:QUEUED`, `${during.id}:QUEUED`, `${after.id}:QUEUED`].sort());
    await page.close();
  }, 180_000);

  it('keeps the Activity view live through a restart of the server', async () => {
    const who = await e2eActors();
    const owner = () => new AuditClient({ url: instance.url, token: who.owner });
    const worker = () => new AuditClient({ url: instance.url, token: who.worker });
    const { id: threadId } = await owner().createThread({ title: 'watched from Activity through a deploy' });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${origin}/#activity`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=activity-at]');
    const pill = page.locator('[data-testid=connection]');
    await expect.poll(() => pill.textContent()).toBe('live');

    await deploy();
    // A tool that starts after the deploy shows as running.
    const run = await owner().createRun({ threadId });
    const lease = await worker().claimRun(run.id, 60);
    await worker().recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker().recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'after_deploy', args: {} }] });
    await worker().recordToolStarted({ lease, toolCallId: 'c1', name: 'after_deploy', effectiveInput: {}, sequence: 3 });
    await expect.poll(() => page.locator('[data-testid=activity-running]').textContent(), { timeout: 30_000 }).toContain('after_deploy');
    await expect.poll(() => pill.textContent()).toBe('live');
    await expect.poll(() => page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }, 180_000);
});
