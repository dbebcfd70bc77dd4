// The timeline page and GraphiQL in headless Chromium, against the server process (PGlite, or
// PostgreSQL in the services pass), with every host but the loopback unresolvable.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { Relay } from './relay.js';
import { e2eActors, runScript, serverForFile, tokenFor } from '../e2e/support/server.js';
import { noteOutsideRequests, openThread as openThreadAt, signIn as signInAt } from './support/page.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO_ROOT = join(import.meta.dirname, '../..');
/**
 * Where the page's screenshot goes: a temporary folder, removed after; `npm run screenshots`
 * (scripts/screenshots.mjs) sets SCREENSHOT_DIR and copies the pictures into docs/ on purpose.
 */
const screenshotDir = process.env.SCREENSHOT_DIR ? resolve(REPO_ROOT, process.env.SCREENSHOT_DIR) : null;
const browserRequired = process.env.REQUIRE_BROWSER === '1' || process.env.REQUIRE_SERVICES === '1';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && !browserRequired) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

let screenshotFolder: string | undefined;
let server: ReturnType<typeof serverForFile>;
let relay: Relay;
let origin: string;
let browser: Browser;
/** Every request a page tried to send anywhere but this server. */
const outsideRequests: string[] = [];

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  noteOutsideRequests(page, origin, outsideRequests);
  return page;
}

const signIn = (page: Page, token: string) => signInAt(page, origin, token);

const openThread = (page: Page, threadId: string) => openThreadAt(page, origin, `#thread=${threadId}`);

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);

describe.skipIf(!haveChromium && !browserRequired)(`the timeline page in Chromium (${backendName})`, () => {
  // The page is built before the server starts and serves it.
  beforeAll(() => void execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT }));
  server = serverForFile();
  beforeAll(async () => {
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
    if (!screenshotDir && screenshotFolder) rmSync(screenshotFolder, { recursive: true, force: true });
    expect(outsideRequests).toEqual([]);
  });

  it('renders GraphiQL with no outside network, and runs a subscription from it', async () => {
    const who = await e2eActors();
    const client = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await client.createThread({ title: 'watched from GraphiQL' });
    const page = await newPage();
    await page.addInitScript((headers) => localStorage.setItem('graphiql:headers', headers), JSON.stringify({ Authorization: `Bearer ${who.owner}` }));
    const subscription = `subscription { runChanged(threadId: "${threadId}") { id status } }`;
    await page.goto(`${origin}/graphql?query=${encodeURIComponent(subscription)}`);
    await page.waitForSelector('.graphiql-container');
    expect(await page.title()).toBe('Agent audit server');
    await page.click('.graphiql-execute-button');
    // graphql-ws never confirms a subscription is listening: create a run a second until one shows
    // (any of them: on a loaded machine one may show after the next was created).
    const created: string[] = [];
    const shown = async () => {
      const response = (await page.locator('.graphiql-response').textContent()) ?? '';
      return created.some((id) => response.includes(id));
    };
    for (let attempt = 0; attempt < 30 && !(await shown()); attempt++) {
      created.push((await client.createRun({ threadId })).id);
      await page.waitForTimeout(1000);
    }
    expect(await shown(), (await page.locator('.graphiql-response').textContent()) ?? '').toBe(true);
    await page.close();
  }, 120_000);

  it('signs in with a pasted token kept in sessionStorage, and pages through the threads', async () => {
    // A plain user: a superadmin's list would hold every other test's threads too.
    const who = { owner: await tokenFor(`pager-${process.pid}`, 'user') };
    // One request each (the client's retries could create a thread twice).
    const titles: string[] = [];
    for (let i = 0; i < 23; i++) {
      await gqlAs(who.owner, `mutation($title: String) { createThread(input: { title: $title }) { id } }`, { title: `paged thread ${i}` });
      titles.push(`paged thread ${i}`);
    }
    const page = await newPage();
    // As `npm start` prints it.
    await signIn(page, `Bearer ${who.owner}`);
    expect(page.url()).not.toContain(who.owner.slice(-20));
    expect(await page.evaluate(() => sessionStorage.getItem('audit-token'))).toBe(who.owner);
    const links = page.locator('section.threads li a');
    // How fast the list shows is the bench's question (bench/page.ts), not this test's.
    const showing = { timeout: 10_000 };
    await expect.poll(() => links.count(), showing).toBe(20);
    expect(await links.first().textContent()).toBe('paged thread 22');
    await page.click('text=More threads');
    await expect.poll(() => links.allTextContents(), showing).toEqual([...titles].reverse());
    // A reload keeps the tab signed in.
    await page.reload();
    await page.waitForSelector('section.threads');
    await page.close();
  });

  it("shows each simulator scenario's states, nested under the model calls that declared them", async () => {
    const who = await e2eActors();
    const { code, output } = await runScript('src/cli/simulate.ts', [
      '--url', server.url, '--step-ms', '0', '--owner-token', who.owner, '--worker-token', who.worker,
    ]);
    expect(code, output).toBe(0);
    const byTitle = await threadsByTitle(who.owner);
    const page = await newPage();
    await signIn(page, who.owner);

    // normal: run, model, its tool one level deeper, model; the tool's input differs from its declaration.
    await openThread(page, byTitle.normal!);
    await expect.poll(() => rowSummaries(page)).toEqual([
      'run:COMPLETED:0', 'model:COMPLETED:1', 'tool:COMPLETED:2', 'model:COMPLETED:1',
    ]);
    await page.locator('.row.tool').click();
    await page.waitForSelector('.details .differs');
    expect(await page.locator('.details .diff .jsondiffpatch-added').textContent()).toContain('units');

    // tool-error: the bare error took the run's FAILED verdict, with the reasons shown.
    await openThread(page, byTitle['tool-error']!);
    await expect.poll(() => rowSummaries(page)).toEqual([
      'run:FAILED:0', 'model:COMPLETED:1', 'tool:FAILED:2', 'tool:FAILED:2',
    ]);
    expect(await page.locator('.row.run .reason').textContent()).toContain('send_email failed');
    expect(await page.locator('.row.tool').nth(1).locator('.reason').textContent()).toContain('SMTP server timed out');

    // cancel mid-tool: the tool is closed CANCELLED with its reason.
    await openThread(page, byTitle.cancel!);
    await expect.poll(() => rowSummaries(page)).toEqual(['run:CANCELLED:0', 'model:COMPLETED:1', 'tool:CANCELLED:2']);
    expect(await page.locator('.row.tool .reason').textContent()).not.toBe('');

    // interrupt then resume: the resumed run links back, and its tool sits under the first run's model.
    await openThread(page, byTitle['interrupt-resume']!);
    await expect.poll(() => rowSummaries(page)).toEqual([
      'run:INTERRUPTED:0', 'model:COMPLETED:1', 'tool:INTERRUPTED:2', 'tool:COMPLETED:2', 'run:COMPLETED:0', 'model:COMPLETED:1',
    ]);
    await expect.poll(() => page.locator('.row.run').nth(1).locator('.resumed-from').count()).toBe(1);
    const resumedTool = page.locator('.row.tool').nth(1);
    expect(await resumedTool.textContent()).toContain('ran in resumed run');
    await resumedTool.click();
    await page.waitForSelector('.details .differs');
    expect(await page.locator('.details .diff .jsondiffpatch-added').textContent()).toContain('approved');
    screenshotFolder ??= screenshotDir ?? mkdtempSync(join(tmpdir(), 'timeline-screenshot-'));
    const screenshot = await page.screenshot({ path: join(screenshotFolder, 'timeline.png') });
    expect(screenshot.subarray(1, 4).toString()).toBe('PNG');

    // parallel calls: three tools under one model.
    await openThread(page, byTitle.parallel!);
    await expect.poll(() => rowSummaries(page)).toEqual([
      'run:COMPLETED:0', 'model:COMPLETED:1', 'tool:COMPLETED:2', 'tool:COMPLETED:2', 'tool:COMPLETED:2', 'model:COMPLETED:1',
    ]);

    // large output: collapsed until asked for.
    await openThread(page, byTitle['large-output']!);
    await page.locator('.row.tool').click();
    const outputView = page.locator('.details .json-view[data-label=output]');
    await outputView.locator('text=Expand all').waitFor();
    expect(await outputView.locator('pre').textContent()).not.toContain('02999 GET');
    await outputView.locator('text=Expand all').click();
    expect(await outputView.locator('pre').textContent()).toContain('02999 GET');
    await page.close();
  }, 180_000);

  it("reads an AI SDK agent's conversation: its tool calls and their results, its token usage, its model by name and call number", async () => {
    const who = await e2eActors();
    const { code, output } = await runScript('src/cli/simulate.ts', [
      '--url', server.url, '--step-ms', '0', '--owner-token', who.owner, '--worker-token', who.worker, '--ai-sdk', '--scenario', 'ai-sdk-parallel',
    ]);
    expect(code, output).toBe(0);
    const byTitle = await threadsByTitle(who.owner);
    const page = await newPage();
    await signIn(page, who.owner);
    await openThread(page, byTitle['ai-sdk: parallel tools']!);
    const models = page.locator('.row.model');
    await expect.poll(() => models.count()).toBeGreaterThanOrEqual(2);
    // Labelled by the model's name and call number, never by a generated id; each with its tokens.
    for (const name of await models.locator('.name').allTextContents()) {
      expect(name).toMatch(/ · call \d+$/);
      expect(name).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/);
    }
    expect(await models.first().locator('.tokens').textContent()).toMatch(/^[\d,]+ → [\d,]+ tokens$/);
    // The second call's input carries the first call's tool calls and their results (AI SDK content parts).
    await models.nth(1).click();
    const messages = page.locator('[data-testid=conversation] li');
    await expect.poll(() => messages.count()).toBeGreaterThanOrEqual(3);
    const texts = await messages.allTextContents();
    expect(texts.some((text) => text.includes('→ '))).toBe(true);
    expect(await page.locator('[data-testid=conversation] li.tool').count()).toBeGreaterThanOrEqual(1);
    expect(texts.filter((text) => text.startsWith('tool')).every((text) => text.trim().length > 'tool'.length)).toBe(true);
    screenshotFolder ??= screenshotDir ?? mkdtempSync(join(tmpdir(), 'timeline-screenshot-'));
    await page.screenshot({ path: join(screenshotFolder, 'timeline-ai-sdk.png') });
    await page.close();
  }, 180_000);

  it('shows a tool started by the test, then its completion, on the open page, without a reload', async () => {
    const { owner, worker, threadId } = await liveThread('live tools');
    const page = await newPage();
    await signIn(page, owner.token);
    await openThread(page, threadId);
    await page.evaluate(() => ((window as any).notReloaded = true));

    const run = await owner.client.createRun({ threadId });
    // The first change may precede the subscription; the page's re-check still shows it. How soon
    // each change shows is bench/page.ts's question: a loaded machine takes seconds.
    await expect.poll(() => row(page, run.id).getAttribute('data-status')).toBe('QUEUED');
    const lease = await worker.claimRun(run.id, 60);
    await expect.poll(() => row(page, run.id).getAttribute('data-status')).toBe('RUNNING');
    await expect.poll(() => row(page, run.id).textContent()).toContain('left');

    const calls = [
      { id: 'call-search', name: 'search', args: { q: 'kettles' } },
      { id: 'call-mail', name: 'send_mail', args: { to: 'a@example.com' } },
      { id: 'call-dump', name: 'dump', args: {} },
    ];
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x', input: { prompt: 'go' } });
    const model = await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', toolCalls: calls, sequence: 2 });
    await expect.poll(() => row(page, model.id).getAttribute('data-status')).toBe('COMPLETED');

    const started = await worker.recordToolStarted({ lease, toolCallId: 'call-search', name: 'search', effectiveInput: { q: 'kettles', limit: 5 }, sequence: 3 });
    await expect.poll(() => row(page, started.id).getAttribute('data-status')).toBe('RUNNING');
    // The running bar advances on the page's clock.
    const firstDuration = await row(page, started.id).locator('.duration').textContent();
    await expect.poll(() => row(page, started.id).locator('.duration').textContent()).not.toBe(firstDuration);
    await worker.recordToolFinished({ lease, toolCallId: 'call-search', output: { content: 'three kettles' }, sequence: 4 });
    await expect.poll(() => row(page, started.id).getAttribute('data-status')).toBe('COMPLETED');

    const mail = await worker.recordToolStarted({ lease, toolCallId: 'call-mail', name: 'send_mail', effectiveInput: { to: 'a@example.com' }, sequence: 5 });
    await worker.recordToolError({ lease, toolCallId: 'call-mail', error: { type: 'SMTPError', message: 'timed out' }, sequence: 6 });
    await expect.poll(() => row(page, mail.id).locator('.awaiting').count()).toBe(1);

    // A 1 MiB output stays collapsed until asked for.
    const dump = await worker.recordToolStarted({ lease, toolCallId: 'call-dump', name: 'dump', effectiveInput: {}, sequence: 7 });
    await worker.recordToolFinished({ lease, toolCallId: 'call-dump', output: { content: 'x'.repeat(1_040_000) }, sequence: 8 });
    await expect.poll(() => row(page, dump.id).getAttribute('data-status')).toBe('COMPLETED');
    await row(page, dump.id).click();
    const output = page.locator('.details .json-view[data-label=output]');
    expect((await output.locator('pre').textContent())!.length).toBeLessThan(5000);
    await output.locator('text=Expand all').click();
    expect((await output.locator('pre').textContent())!.length).toBeGreaterThan(1_040_000);

    await worker.finishRun({ lease, status: 'FAILED', error: { message: 'mail failed' } });
    await expect.poll(() => row(page, run.id).getAttribute('data-status')).toBe('FAILED');
    await expect.poll(() => row(page, mail.id).getAttribute('data-status')).toBe('FAILED');
    expect(await row(page, mail.id).locator('.awaiting').count()).toBe(0);
    expect(await page.evaluate(() => (window as any).notReloaded)).toBe(true);
    await page.close();
  }, 120_000);

  it('catches up with nothing missing after its connection is cut and restored', async () => {
    const { owner, worker, threadId } = await liveThread('cut and restored');
    const run = await owner.client.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 60);
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({
      lease, operationId: 'm1', status: 'COMPLETED', sequence: 2,
      toolCalls: [{ id: 'c1', name: 'one', args: {} }, { id: 'c2', name: 'two', args: {} }],
    });
    const page = await newPage();
    await signIn(page, owner.token);
    await openThread(page, threadId);
    // The run, its model call, and the two calls it declared, not started yet.
    await expect.poll(() => page.locator('.row').count()).toBe(4);
    expect(await page.locator('.row[data-key^="declared:"][data-status=PENDING]').count()).toBe(2);

    relay.disconnect();
    await page.waitForSelector('[data-testid=connection]:text("reconnecting")');
    // Everything below commits while the page cannot hear about it.
    await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'one', effectiveInput: {}, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 1 }, sequence: 4 });
    await worker.recordToolStarted({ lease, toolCallId: 'c2', name: 'two', effectiveInput: { extra: true }, sequence: 5 });
    await worker.recordModelStarted({ lease, operationId: 'm2', sequence: 6, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'm2', status: 'COMPLETED', sequence: 7 });
    await worker.finishRun({ lease, status: 'COMPLETED' });
    const second = await owner.client.createRun({ threadId });
    relay.reconnect();

    await page.waitForSelector('[data-testid=connection]:text("live")');
    const { items } = await owner.client.threadAudits(threadId);
    const expected = [
      `${run.id}:COMPLETED`,
      `${second.id}:QUEUED`,
      ...items.map((item) => `${item.id}:${item.status}`),
    ].sort();
    expect(items).toHaveLength(4);
    await expect.poll(() => page.$$eval('.row', (rows) => rows.map((r) => `${(r as HTMLElement).dataset.key}:${(r as HTMLElement).dataset.status}`).sort())).toEqual(expected);
    await page.close();
  }, 120_000);

  it('keeps the thread list current without a reload: a new thread, a run that starts and ends', async () => {
    const { owner, worker, threadId } = await liveThread('listed first');
    const page = await newPage();
    await signIn(page, owner.token);
    const item = (id: string) => page.locator(`.threads li[data-thread-id="${id}"]`);
    await item(threadId).waitFor();
    const { id: newer } = await owner.client.createThread({ title: 'created while the list shows' });
    await expect.poll(() => item(newer).count(), { timeout: 15_000 }).toBe(1);
    const run = await owner.client.createRun({ threadId: newer });
    const lease = await worker.claimRun(run.id, 60);
    await expect.poll(() => item(newer).locator('.status').textContent(), { timeout: 15_000 }).toBe('RUNNING');
    await worker.finishRun({ lease, status: 'FAILED', error: { message: 'boom' } });
    await expect.poll(() => item(newer).locator('[data-testid=thread-stats]').textContent(), { timeout: 15_000 }).toBe(' 1 run · 1 failed');
    await page.close();
  }, 120_000);

  it('says what a role may not see instead of showing an empty timeline', async () => {
    const { owner, worker, threadId } = await liveThread('not for everyone');
    const run = await owner.client.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 60);
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    for (const token of [await tokenFor('ada', 'admin'), await tokenFor('another-superadmin', 'superadmin')]) {
      const page = await newPage();
      await signIn(page, token);
      await openThread(page, threadId);
      await page.waitForSelector('[data-testid=audits-hidden]');
      expect(await page.locator('[data-testid=audits-hidden]').textContent()).toContain('superadmins on their own threads only');
      await expect.poll(() => row(page, run.id).getAttribute('data-status')).toBe('RUNNING');
      expect(await page.locator('.row.model, .row.tool').count()).toBe(0);
      // Nothing offered that could only fail: no run's entries to load, no failure to jump to.
      expect(await page.locator('[data-testid=load-run]').count()).toBe(0);
      expect(await page.locator('.keys-help').textContent()).not.toContain('failure');
      await page.keyboard.press('n');
      await page.keyboard.press('p');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await page.locator('.banner.error').count()).toBe(0);
      await page.close();
    }
  }, 120_000);
});

/** A thread of a fresh superadmin owner, with a worker client to drive its runs. */
async function liveThread(title: string) {
  const who = await e2eActors();
  const client = new AuditClient({ url: server.url, token: who.owner });
  const { id: threadId } = await client.createThread({ title });
  return { owner: { token: who.owner, client }, worker: new AuditClient({ url: server.url, token: who.worker }), threadId };
}

const gqlAs = async (token: string, query: string, variables: Record<string, unknown> = {}) => {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data: any; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
};

async function threadsByTitle(token: string): Promise<Record<string, string>> {
  const { threads } = await gqlAs(token, `{ threads(first: 100) { edges { node { id title } } } }`);
  return Object.fromEntries(threads.edges.map((edge: any) => [String(edge.node.title).replace(/^simulator: /, ''), edge.node.id]));
}

/** "kind:status:depth" of every row, top to bottom. */
const rowSummaries = (page: Page) =>
  page.$$eval('.row', (rows) =>
    rows.map((row) => {
      const element = row as HTMLElement;
      const depth = Math.round(parseFloat((element.querySelector('.label') as HTMLElement).style.paddingLeft) / 1.2 || 0);
      return `${element.dataset.kind}:${element.dataset.status}:${depth}`;
    }),
  );
