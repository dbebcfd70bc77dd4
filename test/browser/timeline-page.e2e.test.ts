// The timeline page and GraphiQL in headless Chromium, against the server process (PGlite, or
// PostgreSQL in the services pass), with every host but the loopback unresolvable.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '../../src/client/index.js';
import { backendName } from '../support/database.js';
import { createE2EStorage, e2eActors, killServers, runScript, startServer, tokenFor, type E2EStorage, type ServerProcess } from '../e2e/support/server.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO_ROOT = join(import.meta.dirname, '../..');
const browserRequired = process.env.REQUIRE_BROWSER === '1' || process.env.REQUIRE_SERVICES === '1';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && !browserRequired) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

/** A TCP relay in front of the server, so a test can cut the page's connections and restore them. */
class Relay {
  private readonly sockets = new Set<Socket>();
  private cut = false;
  private readonly server: Server;
  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => {
      if (this.cut) return void client.destroy();
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  disconnect() {
    this.cut = true;
    this.sockets.forEach((socket) => socket.destroy());
  }
  reconnect() {
    this.cut = false;
  }
  close() {
    this.disconnect();
    this.server.close();
  }
}

let storage: E2EStorage;
let server: ServerProcess;
let relay: Relay;
let origin: string;
let browser: Browser;
/** Every request a page tried to send anywhere but this server. */
const outsideRequests: string[] = [];

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('request', (request) => {
    if (!request.url().startsWith(origin) && !/^(data|blob):/.test(request.url())) outsideRequests.push(request.url());
  });
  return page;
}

async function signIn(page: Page, token: string) {
  await page.goto(`${origin}/`);
  await page.fill('textarea[name=token]', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('section.threads');
}

async function openThread(page: Page, threadId: string) {
  await page.goto(`${origin}/#thread=${threadId}`);
  await page.waitForSelector('section.timeline');
  await page.waitForSelector('[data-testid=connection]:text("live")');
}

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);

describe.skipIf(!haveChromium && !browserRequired)(`the timeline page in Chromium (${backendName})`, () => {
  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT });
    storage = await createE2EStorage();
    server = await startServer(storage);
    relay = new Relay(Number(new URL(server.url).port));
    origin = await relay.listen();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        // As on a machine without internet: every name but the loopback fails to resolve.
        '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      ],
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    relay?.close();
    await killServers();
    await storage?.remove();
    expect(outsideRequests).toEqual([]);
  });

  it('renders GraphiQL with no outside network, and runs a subscription from it', async () => {
    const { owner } = await e2eActors();
    const page = await newPage();
    await page.addInitScript((headers) => localStorage.setItem('graphiql:headers', headers), JSON.stringify({ Authorization: `Bearer ${owner}` }));
    await page.goto(`${origin}/graphql`);
    await page.waitForSelector('.graphiql-container');
    expect(await page.title()).toBe('Agent audit server');
    await page.close();
  });

  it('signs in with a pasted token kept in sessionStorage, and pages through the threads', async () => {
    const who = await e2eActors();
    const client = new AuditClient({ url: server.url, token: who.owner });
    const titles: string[] = [];
    for (let i = 0; i < 23; i++) titles.push((await client.createThread({ title: `paged thread ${i}` })).title!);
    const page = await newPage();
    await signIn(page, who.owner);
    expect(page.url()).not.toContain(who.owner.slice(-20));
    expect(await page.evaluate(() => sessionStorage.getItem('audit-token'))).toBe(who.owner);
    const links = page.locator('section.threads li a');
    await expect.poll(() => links.count()).toBe(20);
    expect(await links.first().textContent()).toBe('paged thread 22');
    await page.click('text=More threads');
    await expect.poll(() => links.allTextContents()).toEqual([...titles].reverse());
    // A reload keeps the tab signed in.
    await page.reload();
    await page.waitForSelector('section.threads');
    await page.close();
  });
});
