// A thread watched across a network outage, in headless Chromium: the page's way to the server is
// cut and restored by the test (HTTP requests fail, the live connection closes as a restarting
// server closes it), and the page's clock is the test's, so "at once" and "after the back-off"
// are told apart without measuring time.
import type { Browser, Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFor } from '../e2e/support/server.js';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, runWithOneTool, signIn, superadminThread } from './support/page.js';
import { Relay } from './relay.js';

let origin: string;
let browser: Browser;

/**
 * The page's network, down while `down`: requests fail as to an unreachable host, and live
 * connections close as a stopping server closes them (1001), new ones at once. `readsOverHttp`:
 * queries named so are refused over the live connection (as at the principal's subscription cap),
 * so the page reads them over HTTP.
 */
async function flakyNetwork(page: Page, readsOverHttp: string[] = []) {
  const sockets = new Set<WebSocketRoute>();
  const network = {
    httpDown: false,
    wsDown: false,
    /** Closes the live connections open, and refuses new ones until `restore()`. */
    cutLive() {
      network.wsDown = true;
      for (const socket of sockets) void socket.close({ code: 1001, reason: 'Going away' });
      sockets.clear();
    },
    restore() {
      network.httpDown = network.wsDown = false;
    },
  };
  await page.route('**/graphql', (route) => (network.httpDown ? route.abort('connectionrefused') : route.fallback()));
  await page.routeWebSocket(/\/graphql/, (socket) => {
    if (network.wsDown) return void socket.close({ code: 1001, reason: 'Going away' });
    const server = socket.connectToServer();
    sockets.add(socket);
    socket.onMessage((message) => {
      const sent = JSON.parse(String(message)) as { id?: string; type: string; payload?: { query?: string } };
      if (sent.type === 'subscribe' && readsOverHttp.some((name) => sent.payload?.query?.includes(`query ${name}`))) {
        return socket.send(JSON.stringify({ id: sent.id, type: 'error', payload: [{ message: 'at most 8 subscriptions' }] }));
      }
      server.send(message);
    });
  });
  return network;
}

/** Runs the page's clock `ms` on, a second at a time, letting what each second's timers sent be answered. */
async function runClock(page: Page, ms: number, step = 1000) {
  for (let passed = 0; passed < ms; passed += step) {
    await page.clock.runFor(step);
    await page.waitForLoadState('networkidle');
  }
}

describe.skipIf(!haveChromium && !browserRequired)(`a thread watched across a network outage (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  /** The page through a relay: a test may have it answer as an instance that is starting (a deploy). */
  let relay: Relay;
  let relayed: string;
  beforeAll(async () => {
    relay = new Relay(Number(new URL(server.url).port));
    relayed = await relay.listen();
  });
  afterAll(() => relay?.close());

  /**
   * A superadmin's thread open, its totals read over HTTP (`overHttp` names ThreadInfo). HTTP
   * requests fail (a proxy in between lost its way to the server) while a tool fails: the change
   * comes over the live connection, the totals' read after it fails, again and again, until the
   * next try is 15 s off. The page's clock stands still, but for runClock.
   */
  async function totalsReadFailing(title: string, overHttp: string[]) {
    const thread = await superadminThread(server.url, title);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.clock.install();
    const network = await flakyNetwork(page, overHttp);
    await signIn(page, origin, thread.who.owner);
    await openThread(page, origin, `#thread=${thread.threadId}`);
    const failures = page.locator('[data-testid=thread-failures]');
    await expect.poll(() => failures.textContent()).toBe('Nothing failed in this thread');

    await page.clock.pauseAt(await page.evaluate(() => Date.now() + 100));
    network.httpDown = true;
    await runWithOneTool(thread, { name: 'fetch', output: { content: 'quota exceeded', status: 'error' } });
    for (let passed = 0; !(await page.locator('main > .banner.error').allTextContents()).includes('The server is unreachable; retrying…'); passed += 1000) {
      expect(passed, 'the change comes and its read fails').toBeLessThan(60_000);
      await runClock(page, 1000);
    }
    await runClock(page, 16_000);
    expect(await failures.textContent()).toBe('Nothing failed in this thread');
    return { page, network, failures };
  }

  it("reads the thread's totals again as soon as the live connection is back, when their read failed during the outage", async () => {
    const { page, network, failures } = await totalsReadFailing('totals across an outage', ['ThreadInfo']);

    // Then the live connection drops too, and everything comes back.
    network.cutLive();
    await expect.poll(() => page.locator('[data-testid=connection]').textContent()).toBe('reconnecting…');
    network.restore();
    for (let passed = 0; (await page.locator('[data-testid=connection]').textContent()) !== 'live'; passed += 250) {
      expect(passed, 'the live connection is made again within its retry wait').toBeLessThan(10_000);
      await runClock(page, 250, 250);
    }
    // The page's clock stands still from here: what shows now came with the connection's return, not a timer.
    await expect.poll(() => failures.textContent(), { timeout: 30_000 }).toBe('In this thread: 1 tool failed');
    await expect.poll(() => page.locator('.banner.error').count()).toBe(0);
    await page.close();
  }, 180_000);

  it("clears the outage's banner when a read over the live connection is answered, while requests still fail", async () => {
    const overHttp = ['ThreadInfo'];
    const { page, failures } = await totalsReadFailing('banner cleared by a live answer', overHttp);

    // The totals' read may go over the live connection again (below the subscriptions' cap): its next try is answered there, HTTP still failing.
    overHttp.length = 0;
    await runClock(page, 16_000);
    await expect.poll(() => failures.textContent(), { timeout: 30_000 }).toBe('In this thread: 1 tool failed');
    await expect.poll(() => page.locator('.banner.error').count(), { timeout: 10_000 }).toBe(0);
    await page.close();
  }, 180_000);

  it("shows the runs written during an outage to a reader who may not read the thread's audits, when the runs' read on reconnecting failed", async () => {
    const thread = await superadminThread(server.url, 'runs across an outage');
    const before = await thread.owner.createRun({ threadId: thread.threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const network = await flakyNetwork(page);
    // An admin reads any thread's runs, not its audits: the page follows runChanged.
    await signIn(page, origin, await tokenFor(`runs-reader-${process.pid}`, 'admin'));
    await openThread(page, origin, `#thread=${thread.threadId}`);
    await page.waitForSelector('[data-testid=audits-hidden]');
    await page.locator(`.row[data-key="${before.id}"]`).waitFor();

    network.httpDown = true;
    network.cutLive();
    await expect.poll(() => page.locator('[data-testid=connection]').textContent()).toBe('reconnecting…');
    const during = await thread.owner.createRun({ threadId: thread.threadId });
    // The live connection comes back before requests do: the runs' read on reconnecting fails.
    network.wsDown = false;
    await expect.poll(() => page.locator('[data-testid=connection]').textContent(), { timeout: 30_000 }).toBe('live');
    await expect.poll(() => page.locator('main > .banner.error').allTextContents(), { timeout: 30_000 }).toContain('The server is unreachable; retrying…');
    network.restore();
    await page.locator(`.row[data-key="${during.id}"]`).waitFor({ timeout: 60_000 });
    await expect.poll(() => page.locator('.banner.error').count(), { timeout: 30_000 }).toBe(0);
    await page.close();
  }, 180_000);

  it('opens a thread asked for while the server starts (a deploy: 503 UNAVAILABLE), once it has started', async () => {
    const thread = await superadminThread(server.url, 'opened during a deploy');
    const run = await thread.owner.createRun({ threadId: thread.threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${relayed}/#thread=${thread.threadId}`);
    // The reader signs in (or reloads) while the next instance starts: every request is answered 503 UNAVAILABLE, Retry-After.
    relay.disconnect();
    relay.starting();
    await page.fill('textarea[name=token]', thread.who.owner);
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('main > .banner.error').count(), { timeout: 30_000 }).toBe(1);
    // The next instance has started.
    relay.reconnect();
    await page.locator(`.row[data-key="${run.id}"]`).waitFor({ timeout: 60_000 });
    await expect.poll(() => page.locator('[data-testid=connection]').textContent(), { timeout: 30_000 }).toBe('live');
    await expect.poll(() => page.locator('.banner.error').count(), { timeout: 30_000 }).toBe(0);
    await page.close();
  }, 180_000);
});
