// What the page's browser tests do alike: start their server and Chromium, note every request a
// page sends anywhere but the server (the page works offline), sign in, open a thread, ask
// axe-core for serious violations, and make a superadmin's thread to look at.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { AuditClient } from '@agent-audit/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { e2eActors, serverForFile } from '../../e2e/support/server.js';
import { launchChromium } from './chromium.js';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const REPO_ROOT = join(import.meta.dirname, '../../..');

/**
 * A browser suite's set-up, called in its `describe`: the page built before this file's server
 * starts and serves it, then Chromium, handed to `started` with the server's origin, and closed
 * after the suite. Returns the server.
 */
export function pageSuite(started: (suite: { origin: string; browser: Browser }) => void, env: Record<string, string> = {}) {
  let browser: Browser | undefined;
  beforeAll(() => void execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT }));
  const server = serverForFile(env);
  beforeAll(async () => {
    browser = await launchChromium();
    started({ origin: new URL(server.url).origin, browser });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });
  return server;
}

/** Adds to `outside` each request `page` sends anywhere but `origin` (its WebSocket included), data: and blob: URLs aside. */
export function noteOutsideRequests(page: Page, origin: string, outside: string[]): Page {
  const own = [origin, origin.replace(/^http/, 'ws')];
  page.on('request', (request) => {
    const url = request.url();
    if (!own.some((prefix) => url.startsWith(prefix)) && !/^(data|blob):/.test(url)) outside.push(url);
  });
  return page;
}

/** The sign-in form, from the page's root, until the thread list shows. */
export async function signIn(page: Page, origin: string, token: string) {
  await page.goto(`${origin}/`);
  await page.fill('textarea[name=token]', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('section.threads');
}

/** Opens `hash` (`#thread=<id>`, with more after it if need be) until the timeline is live. */
export async function openThread(page: Page, origin: string, hash: string) {
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('section.timeline');
  await page.waitForSelector('[data-testid=connection]:text("live")');
}

/** axe-core's serious and critical violations on the page as it is, each prefixed with `where` when given. */
export async function seriousViolations(page: Page, where?: string): Promise<string[]> {
  // Through the DevTools protocol: the page's CSP (rightly) refuses an injected <script>.
  await page.evaluate(readFileSync(AXE, 'utf8'));
  const found = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
  });
  return where === undefined ? found : found.map((violation) => `${where}: ${violation}`);
}

/** A fresh superadmin's new thread, with clients for that owner and a worker. */
export async function superadminThread(url: string, title: string) {
  const who = await e2eActors();
  const owner = new AuditClient({ url, token: who.owner });
  const worker = new AuditClient({ url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title });
  return { who, owner, worker, threadId };
}

/** `count` ended runs of `threadId`, one finished model call in each (a running run's span ends at the page's clock). Returns the model audits. */
export async function endedRunsOfOneModelCall({ owner, worker, threadId }: { owner: AuditClient; worker: AuditClient; threadId: string }, count: number) {
  const calls = [];
  for (let i = 0; i < count; i++) {
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    calls.push(await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' }));
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2 });
    await worker.finishRun({ lease, status: 'COMPLETED' });
  }
  return calls;
}

/**
 * A run of `threadId` with one tool call, `c1` of `name`: declared with `args`, started with
 * `input`, ended with `output` (an error output fails it). Returns the tool audit.
 */
export async function runWithOneTool(
  { owner, worker, threadId }: { owner: AuditClient; worker: AuditClient; threadId: string },
  { name, args = {}, input = {}, output }: { name: string; args?: Record<string, unknown>; input?: Record<string, unknown>; output: Record<string, unknown> },
) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name, args }] });
  const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name, effectiveInput: input, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output, sequence: 4 });
  return tool;
}
