// What the open thread's live following must not miss, in headless Chromium: the page's live
// connection goes through the test, which holds a message back or ends a stream as the server would.
import type { Browser, Page, WebSocketRoute } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { tokenFor } from '../e2e/support/server.js';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;

interface Sent {
  id?: string;
  type: string;
  payload?: { query?: string; variables?: Record<string, unknown> };
}

/**
 * The page's live connections through the test: each message the page sends goes to the server
 * unless `hold` keeps it (returns true); `toPage` and `toServer` send on the last connection made.
 */
async function liveThroughTest(page: Page, hold: (sent: Sent, raw: string) => boolean = () => false) {
  const live: { socket?: WebSocketRoute; server?: WebSocketRoute; sent: Sent[] } = { sent: [] };
  await page.routeWebSocket(/\/graphql/, (socket) => {
    const server = socket.connectToServer();
    Object.assign(live, { socket, server });
    socket.onMessage((message) => {
      const sent = JSON.parse(String(message)) as Sent;
      live.sent.push(sent);
      if (!hold(sent, String(message))) server.send(message);
    });
  });
  return live;
}

const subscribed = (sent: Sent, operation: string) => sent.type === 'subscribe' && Boolean(sent.payload?.query?.includes(operation));

describe.skipIf(!haveChromium && !browserRequired)(`the open thread's live following (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));

  it("shows a run that ended between the runs' read and runChanged's start, on a connection already open, to a reader who may not read the audits", async () => {
    const first = await superadminThread(server.url, 'opened first');
    const second = await superadminThread(server.url, 'opened second');
    const run = await second.owner.createRun({ threadId: second.threadId });
    const lease = await second.worker.claimRun(run.id, 600);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.clock.install();
    let held: string | undefined;
    const live = await liveThroughTest(page, (sent, raw) => {
      // The first thread's totals read is never answered: the connection stays open while the reader opens the second thread.
      if (subscribed(sent, 'query ThreadInfo')) return true;
      // runChanged of the second thread starts only when the test lets it.
      if (subscribed(sent, 'subscription RunChanged') && sent.payload?.variables?.threadId === second.threadId) return Boolean((held = raw));
      return false;
    });
    // An admin reads any thread's runs, not its audits: the page follows runChanged.
    await signIn(page, origin, await tokenFor(`gap-reader-${process.pid}`, 'admin'));
    await openThread(page, origin, `#thread=${first.threadId}`);
    await page.waitForSelector('[data-testid=audits-hidden]');
    await first.owner.createRun({ threadId: first.threadId });
    await expect.poll(() => live.sent.some((sent) => subscribed(sent, 'query ThreadInfo')), { timeout: 30_000 }).toBe(true);

    // The connection the second thread's runChanged goes on is this one, already open (the page may
    // have made one before it: graphql-ws closes one with no operation left, as after the sign-in's reads).
    const connections = () => live.sent.filter((sent) => sent.type === 'connection_init').length;
    const opened = connections();
    // From here the page's clock stands still: a read that comes, came when the test ran it.
    await page.clock.pauseAt(await page.evaluate(() => Date.now() + 100));
    await page.evaluate((id) => (location.hash = `#thread=${id}`), second.threadId);
    const row = page.locator(`.row[data-key="${run.id}"]`);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe('RUNNING');
    await expect.poll(() => held !== undefined, { timeout: 30_000 }).toBe(true);
    expect(connections(), 'no connection made for the second thread').toBe(opened);

    // The run ends before the server has started the subscription: no runChanged will tell of it.
    await second.worker.finishRun({ lease, status: 'COMPLETED' });
    live.server!.send(held!);
    await page.clock.runFor(2000);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe('COMPLETED');
    await page.close();
  }, 180_000);

  it.each([
    { reader: 'its owner (threadChanges)', stream: 'subscription ThreadChanges' },
    { reader: 'a reader who may not read its audits (runChanged)', stream: 'subscription RunChanged' },
  ])('follows the thread again when the server ends its stream (it is stopping), for $reader', async ({ stream: operation }) => {
    const thread = await superadminThread(server.url, `stream ended by the server: ${operation}`);
    const before = await thread.owner.createRun({ threadId: thread.threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const live = await liveThroughTest(page);
    const runsOnly = operation === 'subscription RunChanged';
    await signIn(page, origin, runsOnly ? await tokenFor(`ended-reader-${process.pid}`, 'admin') : thread.who.owner);
    await openThread(page, origin, `#thread=${thread.threadId}`);
    await page.locator(`.row[data-key="${before.id}"]`).waitFor();

    // The server ends the stream as a stopping one does: an interruption, then complete. (The rows
    // may come over HTTP before the live connection is open and the stream subscribed.)
    await expect.poll(() => live.sent.some((sent) => subscribed(sent, operation)), { timeout: 30_000 }).toBe(true);
    const stream = live.sent.find((sent) => subscribed(sent, operation))!;
    live.server!.send(JSON.stringify({ id: stream.id, type: 'complete' }));
    const interrupted = { message: 'The server is stopping. Subscribe again to continue.', extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SERVER_STOPPING' } };
    live.socket!.send(JSON.stringify({ id: stream.id, type: 'next', payload: { errors: [interrupted] } }));
    live.socket!.send(JSON.stringify({ id: stream.id, type: 'complete' }));
    await expect.poll(() => page.locator('main > .banner.error').allTextContents(), { timeout: 30_000 }).toContain('The live stream of changes ended; following again…');

    // What is written from here shows: the page follows the thread again.
    const during = await thread.owner.createRun({ threadId: thread.threadId });
    await page.locator(`.row[data-key="${during.id}"]`).waitFor({ timeout: 60_000 });
    // The row may come from a re-read of the runs before the stream is subscribed again.
    const streams = () => live.sent.filter((sent) => subscribed(sent, operation));
    await expect.poll(() => streams().length, { timeout: 30_000 }).toBeGreaterThan(1);
    if (!runsOnly) expect(streams().at(-1)!.payload!.variables!.after, 'resumed after the last change shown, not read again').toEqual(expect.any(String));
    await expect.poll(() => page.locator('main > .banner.error').count(), { timeout: 30_000 }).toBe(0);
    await page.close();
  }, 180_000);
});
