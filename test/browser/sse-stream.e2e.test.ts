// A browser's own EventSource on the authenticated SSE stream (examples/browser/live-thread.js, as
// docs/subscriptions.md shows it): signed in by a cookie no script can read, a URL without a
// token, the automatic reconnect resuming with Last-Event-ID, following on through a deploy, and a
// foreign origin refused.
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile, startServer } from '../e2e/support/server.js';
import { createTestStorage } from '../support/storage.js';
import { Relay } from './relay.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const EXAMPLE = join(import.meta.dirname, '../../examples/browser/live-thread.js');
const browserRequired = process.env.REQUIRE_BROWSER === '1' || process.env.REQUIRE_SERVICES === '1';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && !browserRequired) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

let server: ReturnType<typeof serverForFile>;
let relay: Relay;
let origin: string;
let foreign: Server;
let foreignOrigin: string;
let browser: Browser;

interface Received {
  cursor: string;
  runId: string;
}

/** A page of the server's origin (a plain-text path: no CSP) with the example loaded. */
async function pageWithExample(at = origin): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${at}/healthz`);
  await page.addScriptTag({ path: EXAMPLE });
  return page;
}

/** The thread's latest cursor, as the recipe reads it before subscribing with `after`. */
async function changeCursor(url: string, token: string, threadId: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'query($id: ID!) { thread(id: $id) { changeCursor } }', variables: { id: threadId } }),
  });
  return (await response.json()).data.thread.changeCursor;
}

/** watchThread in the page, collecting what it receives (window.received) and its ends (window.ended). */
async function watch(page: Page, threadId: string, after: string): Promise<void> {
  await page.evaluate(
    ({ threadId, after }) => {
      const w = window as any;
      w.received = [];
      w.ended = [];
      w.watching = w.watchThread({
        threadId,
        after,
        onChange: (change: any) => w.received.push({ cursor: change.cursor, runId: change.run?.id }),
        onEnd: (error: unknown) => w.ended.push(error),
      });
    },
    { threadId, after },
  );
}

describe.skipIf(!haveChromium && !browserRequired)(`SSE in Chromium with its own EventSource (${backendName})`, () => {
  server = serverForFile();
  beforeAll(async () => {
    relay = new Relay(Number(new URL(server.url).port));
    origin = await relay.listen();
    // Another site: evil.example resolves to this machine, to a server of its own.
    foreign = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'));
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    foreignOrigin = `http://evil.example:${(foreign.address() as { port: number }).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--host-resolver-rules=MAP evil.example 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      ],
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    relay?.close();
    foreign?.close();
  });

  it('signs in by cookie, streams without a token in the URL, and resumes after a cut with Last-Event-ID', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'watched by EventSource' });
    const page = await pageWithExample();
    const streamRequests: Promise<{ url: string; lastEventId?: string }>[] = [];
    page.on('request', (request) => {
      if (!request.url().includes('/graphql/stream?')) return;
      streamRequests.push(request.allHeaders().then((headers) => ({ url: request.url(), lastEventId: headers['last-event-id'] })));
    });

    const expiresAt = await page.evaluate((token) => (window as any).signInToStreams(`Bearer ${token}`), who.owner);
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'audit_stream', httpOnly: true, sameSite: 'Strict', path: '/graphql/stream' });
    expect(await page.evaluate(() => document.cookie)).toBe('');

    await watch(page, threadId, await changeCursor(server.url, who.owner, threadId));
    const received = () => page.evaluate(() => (window as any).received as Received[]);

    const before = [];
    for (let i = 0; i < 3; i++) before.push((await owner.createRun({ threadId })).id);
    await expect.poll(async () => (await received()).map((change) => change.runId)).toEqual(before);
    const lastBeforeCut = (await received()).at(-1)!.cursor;

    // Cut every connection and refuse new ones while three more runs are created.
    relay.disconnect();
    const during = [];
    for (let i = 0; i < 3; i++) during.push((await owner.createRun({ threadId })).id);
    relay.reconnect();
    await expect.poll(async () => (await received()).map((change) => change.runId), { timeout: 20_000 }).toEqual([...before, ...during]);
    const after = (await owner.createRun({ threadId })).id;
    await expect.poll(async () => (await received()).map((change) => change.runId)).toEqual([...before, ...during, after]);

    // The browser reconnected by itself, sending the last cursor it had; nothing was sent twice.
    const cursors = (await received()).map((change) => change.cursor);
    expect(new Set(cursors).size).toBe(cursors.length);
    const requests = await Promise.all(streamRequests);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(requests[0]!.lastEventId).toBeUndefined();
    expect(requests.at(-1)!.lastEventId).toBe(lastBeforeCut);
    for (const request of requests) {
      expect(request.url).not.toContain(who.owner);
      expect(request.url).not.toMatch(/eyJ/); // no JWT of any kind
    }
    expect(await page.evaluate(() => (window as any).ended)).toEqual([]);
    await page.evaluate(() => (window as any).watching.close());
    await page.close();
  }, 120_000);

  it('keeps following through a deploy: its instance stops (SERVER_STOPPING) and the next one answers 503 while it starts', async () => {
    const storage = await createTestStorage();
    let instance = await startServer(storage);
    const deploy = new Relay(Number(new URL(instance.url).port));
    const deployOrigin = await deploy.listen();
    try {
      const who = await e2eActors();
      const owner = () => new AuditClient({ url: instance.url, token: who.owner });
      const { id: threadId } = await owner().createThread({ title: 'watched through a deploy' });
      const page = await pageWithExample(deployOrigin);
      const streamAnswers: number[] = [];
      page.on('response', (response) => void (response.url().includes('/graphql/stream?') && streamAnswers.push(response.status())));
      await page.evaluate((token) => (window as any).signInToStreams(token), who.owner);
      await watch(page, threadId, await changeCursor(instance.url, who.owner, threadId));
      const runsReceived = () => page.evaluate(() => ((window as any).received as Received[]).map((change) => change.runId));

      const before = [(await owner().createRun({ threadId })).id];
      await expect.poll(runsReceived).toEqual(before);

      // New connections reach the next instance, which is starting; the old one stops.
      deploy.starting();
      expect(await instance.stop('SIGTERM')).toBe(0);
      await expect.poll(() => streamAnswers.filter((status) => status === 503).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
      instance = await startServer(storage);
      const during = [(await owner().createRun({ threadId })).id];
      deploy.reconnect(Number(new URL(instance.url).port));
      await expect.poll(runsReceived, { timeout: 60_000 }).toEqual([...before, ...during]);
      const after = (await owner().createRun({ threadId })).id;
      await expect.poll(runsReceived).toEqual([...before, ...during, after]);
      expect(await page.evaluate(() => (window as any).ended)).toEqual([]);
      await page.evaluate(() => (window as any).watching.close());
      await page.close();
    } finally {
      deploy.close();
      await instance.stop('SIGKILL');
      await storage.remove();
    }
  }, 180_000);

  it('a foreign origin can neither open the stream with the cookie nor run a mutation', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'not for evil.example' });
    // Signed in on the server's origin, in the same browser profile.
    const context = await browser.newContext();
    const home = await context.newPage();
    await home.goto(`${origin}/healthz`);
    await home.addScriptTag({ path: EXAMPLE });
    await home.evaluate((token) => (window as any).signInToStreams(token), who.owner);

    const page = await context.newPage();

    await page.goto(`${foreignOrigin}/`);
    const outcome = await page.evaluate(
      async ({ origin, threadId }) => {
        const query = 'subscription($t: ID!) { threadChanges(threadId: $t) { cursor } }';
        const source = new EventSource(`${origin}/graphql/stream?${new URLSearchParams({ query, variables: JSON.stringify({ t: threadId }) })}`, { withCredentials: true });
        const stream = await new Promise<string>((resolve) => {
          source.onopen = () => resolve('opened');
          source.onerror = () => resolve(source.readyState === EventSource.CLOSED ? 'closed' : 'error');
        });
        source.close();
        const mutation = await fetch(`${origin}/graphql`, {
          method: 'POST',
          credentials: 'include',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'mutation { createThread(input: { title: "forged" }) { id } }' }),
        }).then(
          (response) => `answered ${response.status}`,
          () => 'blocked',
        );
        return { stream, mutation };
      },
      { origin, threadId },
    );
    expect(outcome).toEqual({ stream: 'closed', mutation: 'blocked' });
    // (The server refuses a foreign Origin on the stream path with 403 too: test/api/cross-origin.int.test.ts.)
    await context.close();
  }, 60_000);
});
