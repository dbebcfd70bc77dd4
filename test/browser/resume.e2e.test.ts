// The page left open all day, as a laptop's tab lives: the server restarted under it (a deploy),
// the network gone without a word; the page expected to say so, follow on live, and catch up.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { openDatabase } from '../../src/db/database.js';
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

/**
 * The server stopped as a deploy stops it (SIGTERM: its streams end with SERVER_STOPPING), and the
 * next one started on the same data (`stopped`: done to the data in between).
 */
async function deploy(during: () => Promise<void> = async () => {}, stopped: () => Promise<void> = async () => {}) {
  // New connections meet the next instance while it starts; open ones hear the old one stop.
  relay.starting();
  expect(await instance.stop('SIGTERM')).toBe(0);
  await stopped();
  instance = await startServer(storage);
  await during();
  relay.reconnect(Number(new URL(instance.url).port));
}

/** A fresh superadmin's thread with one run, open in a new page signed in with a token of theirs, live. */
async function threadOpen(title: string) {
  const who = await e2eActors();
  const owner = () => new AuditClient({ url: instance.url, token: who.owner });
  const { id: threadId } = await owner().createThread({ title });
  const first = await owner().createRun({ threadId });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${origin}/#thread=${threadId}`);
  await page.fill('textarea[name=token]', who.owner);
  await page.click('button[type=submit]');
  await page.waitForSelector(`.row[data-key="${first.id}"]`);
  await page.waitForSelector('[data-testid=connection]:text("live")');
  return { who, owner, threadId, first, page };
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

  /** An open thread through a deploy (`stopped`: done to the data in between): live again, with what was written meanwhile and after. */
  async function followedThroughDeploy(title: string, stopped?: () => Promise<void>) {
    const { owner, threadId, first, page } = await threadOpen(title);

    let during = '';
    await deploy(async () => void (during = (await owner().createRun({ threadId })).id), stopped);
    await page.locator(`.row[data-key="${during}"]`).waitFor({ timeout: 30_000 });
    const after = await owner().createRun({ threadId });
    await page.locator(`.row[data-key="${after.id}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator('[data-testid=connection]').textContent()).toBe('live');
    expect(await rowsShown(page)).toEqual([`${first.id}:QUEUED`, `${during}:QUEUED`, `${after.id}:QUEUED`].sort());
    // Nothing left on the banner from the old instance's goodbye, or from a refused cursor.
    await expect.poll(() => page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }

  it('follows an open thread on through a restart of the server: live again, with what was written meanwhile and after', async () => {
    await followedThroughDeploy('open through a deploy');
  }, 180_000);

  // Its cursor refused (BAD_USER_INPUT): after a restore gave the database a new id (docs/operations.md,
  // "Backup and restore"), or from an older instance during a rolling upgrade ("Upgrades").
  it('follows an open thread on when the server refuses its cursor (a restore): it reads the thread again, live, with what was written since', async () => {
    // The operator's step after a physical restore: every cursor issued before is refused from then on.
    await followedThroughDeploy('open through a restore', async () => {
      const db = await openDatabase({ url: storage.env.DATABASE_URL || undefined, dataDir: storage.env.DATA_DIR || undefined });
      await db.sql.query('DELETE FROM database_identity');
      await db.close();
    });
  }, 180_000);

  it("watching a quiet thread pings the server every 10 s, not every 2 s: a phone's radio sleeps between them", async () => {
    const { page } = await threadOpen('watched on a phone, quiet');
    let pings = 0;
    const session = await page.context().newCDPSession(page);
    await session.send('Network.enable');
    session.on('Network.webSocketFrameSent', ({ response }) => void (JSON.parse(response.payloadData).type === 'ping' && pings++));
    await page.waitForTimeout(20_000);
    expect(pings).toBeLessThanOrEqual(2);
    await expect.poll(() => page.locator('[data-testid=connection]').textContent()).toBe('live');
    await page.close();
  }, 60_000);

  it('says it is reconnecting when its connection dies without a word, and catches up once the network is back', async () => {
    const { owner, threadId, first, page } = await threadOpen('a network that went away silently');
    const pill = page.locator('[data-testid=connection]');

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

  it('reads the tool-call ledger across threads less often while the server is away, not more and more', async () => {
    const who = await e2eActors();
    await new AuditClient({ url: instance.url, token: who.owner }).createThread({ title: 'its ledger watched' });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    // The page's clock is the test's: ten minutes of an outage pass in a few seconds.
    await page.clock.install();
    await page.goto(`${origin}/#calls`);
    await page.fill('textarea[name=token]', who.owner);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=ledger-count]');
    // The thread list's first read answered too: the outage below is the ledger's alone.
    await page.waitForLoadState('networkidle');
    const reads: number[] = [];
    page.on('request', (request) => void (request.url().endsWith('/graphql') && request.method() === 'POST' && reads.push(Date.now())));
    const readsIn = async (ms: number) => {
      const before = reads.length;
      // A second at a time, each failed read's answer (at once: nothing listens) taken before the next.
      for (let passed = 0; passed < ms; passed += 1000) {
        await page.clock.runFor(1000);
        await page.waitForLoadState('networkidle');
      }
      return reads.length - before;
    };

    relay.disconnect();
    await readsIn(9 * 60_000);
    const lastMinute = await readsIn(60_000);
    await expect.poll(() => page.locator('.banner.error').allTextContents()).toContain('The server is unreachable; retrying…');
    // Tried again, a little later each time, up to every 15 s: not every 2 s, nor once more for each failure so far.
    expect(lastMinute).toBeLessThanOrEqual(5);
    expect(lastMinute).toBeGreaterThanOrEqual(1);

    relay.reconnect();
    await readsIn(20_000);
    await page.waitForSelector('[data-testid=ledger-count]');
    expect(await page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }, 180_000);

  it('takes "unreachable" off the banner once the server answers again, on the views without a thread open too', async () => {
    const who = await e2eActors();
    await new AuditClient({ url: instance.url, token: who.owner }).createThread({ title: 'signed in during an outage' });
    for (const [hash, shows] of [
      ['#calls', '[data-testid=ledger-count]'],
      ['#activity', '[data-testid=connection]:text("live")'],
    ] as const) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${origin}/${hash}`);
      // Signed in while the server cannot be reached (Wi-Fi not back yet): the first reads fail.
      relay.disconnect();
      await page.fill('textarea[name=token]', who.owner);
      await page.click('button[type=submit]');
      await expect.poll(() => page.locator('main > .banner.error').textContent()).toBe('The server is unreachable; retrying…');
      relay.reconnect();
      await page.waitForSelector(shows, { timeout: 30_000 });
      await expect.poll(() => page.locator('.banner.error').count(), { timeout: 20_000 }).toBe(0);
      await page.close();
    }
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
