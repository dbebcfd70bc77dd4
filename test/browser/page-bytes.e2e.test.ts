// What the page downloads, in headless Chromium against the server process: each view only the
// script it draws with (the thread view neither the Activity view's chart library nor, until a
// row's declared and effective inputs differ, the diff library); the Activity view's live frames
// compressed on the wire (permessage-deflate, which Chromium offers); a live thread's totals read
// again over its WebSocket, not an HTTP request (its headers and token) per burst of changes; no
// request leaving the machine.
import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { noteOutsideRequests, openThread, pageSuite, runWithOneTool, signIn, superadminThread } from './support/page.js';
import { tcpProxy } from '../subscriptions/support.js';
import { wsClient } from '../support/streams.js';

let origin: string;
let browser: Browser;
const outsideRequests: string[] = [];

/** A literal of each library's that minifying keeps: uPlot's plot area class, jsondiffpatch's HTML formatter's. */
const CHART_LIBRARY = 'u-over';
const DIFF_LIBRARY = 'jsondiffpatch-delta';

/** The bodies of every script `page` has downloaded so far, kept current. */
function scriptsOf(page: Page): string[] {
  const scripts: string[] = [];
  page.on('response', async (response) => {
    if (response.request().resourceType() === 'script') scripts.push((await response.body()).toString());
  });
  return scripts;
}
const holding = (scripts: string[], literal: string) => scripts.some((script) => script.includes(literal));

describe.skipIf(!haveChromium && !browserRequired)(`what the page downloads, in Chromium (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
  });

  it("downloads the chart library only for the Activity view, and the diff library only for a row whose inputs differ", async () => {
    const thread = await superadminThread(server.url, 'bytes on the wire');
    const { threadId, who } = thread;
    const tool = await runWithOneTool(thread, { name: 'fetch', args: { url: 'https://a.example' }, input: { url: 'https://b.example' }, output: { content: 'ok' } });

    const page = noteOutsideRequests(await browser.newPage(), origin, outsideRequests);
    const scripts = scriptsOf(page);
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${tool.id}`).waitFor();
    expect(holding(scripts, CHART_LIBRARY)).toBe(false);
    expect(holding(scripts, DIFF_LIBRARY)).toBe(false);

    // The row whose effective input is not the declared one: its diff, with the library loaded for it.
    await page.locator(`#row-${tool.id}`).click();
    await page.locator('.details .diff .jsondiffpatch-delta').waitFor();
    await expect.poll(() => holding(scripts, DIFF_LIBRARY)).toBe(true);
    expect(holding(scripts, CHART_LIBRARY)).toBe(false);

    await page.click('header a[href="#activity"]');
    await page.locator('.activity-chart canvas').waitFor();
    await expect.poll(() => holding(scripts, CHART_LIBRARY)).toBe(true);
    await page.close();
  }, 120_000);

  it("sends the Activity view's frames compressed when the browser offers it: the bytes on its connection a fraction of the frames'", async () => {
    const { who } = await superadminThread(server.url, 'watched on a tethered phone');
    // The browser talks to the server through a proxy that counts what it passes back.
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
    const proxied = proxy.url('http');
    const page = noteOutsideRequests(await browser.newPage(), proxied, outsideRequests);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    let extensions = '';
    let frameBytes = 0;
    cdp.on('Network.webSocketHandshakeResponseReceived', ({ response }) => {
      extensions = Object.entries(response.headers).find(([name]) => name.toLowerCase() === 'sec-websocket-extensions')?.[1] ?? '';
    });
    // Each frame's message as the page received it (decompressed).
    cdp.on('Network.webSocketFrameReceived', ({ response }) => void (frameBytes += Buffer.byteLength(response.payloadData)));
    await signIn(page, proxied, who.owner);
    await page.click('header a[href="#activity"]');
    await page.locator('.activity-chart canvas').waitFor();
    const onTheWire = () => proxy.connections().filter(({ head }) => /^upgrade: websocket/im.test(head)).reduce((sum, { bytesToClient }) => sum + bytesToClient, 0);
    // The view's first frame: its 120 buckets, a dozen kB of JSON.
    await expect.poll(() => frameBytes).toBeGreaterThan(8_000);
    expect(extensions).toMatch(/permessage-deflate/);
    expect(onTheWire()).toBeLessThan(frameBytes / 4);
    await page.close();
    await proxy.close();
  }, 120_000);

  it("keeps a live thread's totals current over its WebSocket: no HTTP request while a run's changes stream in", async () => {
    const thread = await superadminThread(server.url, 'a long run, watched live');
    const { threadId, who } = thread;
    const page = noteOutsideRequests(await browser.newPage(), origin, outsideRequests);
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('Nothing failed in this thread');
    const requests: string[] = [];
    page.on('request', (request) => void requests.push(`${request.method()} ${request.url()}`));

    await runWithOneTool(thread, { name: 'fetch', output: { content: 'quota exceeded', status: 'error' } });
    // The totals, read again after the changes, say what failed.
    await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('In this thread: 1 tool failed');
    expect(requests).toEqual([]);
    await page.close();
  }, 120_000);
});

describe.skipIf(!haveChromium && !browserRequired)(`a live thread's totals at its principal's subscription cap, in Chromium (${backendName})`, () => {
  let cappedOrigin: string;
  let cappedBrowser: Browser;
  const server = pageSuite((suite) => ({ origin: cappedOrigin, browser: cappedBrowser } = suite), { WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '8' });

  it('are read over HTTP when the connection may not hold one more operation: another dashboard of the principal holds the rest', async () => {
    const thread = await superadminThread(server.url, 'watched at the cap');
    const page = await cappedBrowser.newPage();
    await signIn(page, cappedOrigin, thread.who.owner);
    await openThread(page, cappedOrigin, `#thread=${thread.threadId}`);
    await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('Nothing failed in this thread');
    const other = wsClient(server.url, thread.who.owner);
    const refused: string[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        other.subscribe(
          { query: 'subscription($threadId: ID!) { runChanged(threadId: $threadId) { id } }', variables: { threadId: thread.threadId } },
          { next: (result) => void (result.errors && refused.push(result.errors[0]!.message)), error: (error) => void refused.push(Array.isArray(error) ? error[0].message : String(error)), complete: () => {} },
        );
      }
      await expect.poll(() => refused.length).toBeGreaterThan(0);
      expect(refused[0]).toMatch(/at most 8 subscriptions/);

      await runWithOneTool(thread, { name: 'fetch', output: { content: 'quota exceeded', status: 'error' } });
      await expect.poll(() => page.locator('[data-testid=thread-failures]').textContent()).toBe('In this thread: 1 tool failed');
    } finally {
      await other.dispose();
      await page.close();
    }
  }, 120_000);
});
