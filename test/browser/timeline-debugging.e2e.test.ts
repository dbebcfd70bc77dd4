// The timeline page as a debugger uses it, in headless Chromium against the server process
// (PGlite, or PostgreSQL in the services pass), offline: the time axis across runs minutes apart,
// paging back past the newest 500 entries, keyboard navigation, search within and across
// threads (a live tool among the results), the favicon.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { saveScreenshot } from './support/screenshots.js';
import { noteOutsideRequests, openThread as openThreadAt, pageSuite, signIn as signInAt, superadminThread as superadminThreadAt } from './support/page.js';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;
/** Every request a page sent anywhere but this server, and every answer of 400 or more. */
const outsideRequests: string[] = [];
const failedResponses: string[] = [];

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  noteOutsideRequests(page, origin, outsideRequests);
  page.on('response', (response) => response.status() >= 400 && failedResponses.push(`${response.status()} ${response.url()}`));
  return page;
}

const signIn = (page: Page, token: string) => signInAt(page, origin, token);

async function openThread(page: Page, token: string, threadId: string) {
  await signIn(page, token);
  await openThreadAt(page, origin, `#thread=${threadId}`);
}

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);
/** A bar's width as a share of its track. */
const barShare = (page: Page, key: string) =>
  row(page, key).evaluate((element) => element.querySelector('.bar')!.getBoundingClientRect().width / element.querySelector('.track')!.getBoundingClientRect().width);

const superadminThread = (title: string) => superadminThreadAt(server.url, title);

/** Ruler labels that overlap another label or run past the ruler, ticks drawn inside an idle gap (their drawn boxes). */
async function overlappingRulerLabels(page: Page): Promise<string[]> {
  return page.locator('[data-testid=ruler]').evaluate((ruler) => {
    const edge = ruler.getBoundingClientRect().right;
    const boxes = [...ruler.querySelectorAll('.tick')].map((tick) => ({ label: tick.textContent ?? '', box: tick.getBoundingClientRect() }));
    const gaps = [...ruler.querySelectorAll('.gap')].map((gap) => gap.getBoundingClientRect());
    const found: string[] = [];
    boxes.forEach(({ label, box }, index) => {
      const next = boxes[index + 1];
      if (next && box.right > next.box.left + 0.5) found.push(`${label} overlaps ${next.label}`);
      if (box.right > edge + 0.5) found.push(`${label} runs past the ruler`);
      if (gaps.some((gap) => box.left > gap.left + 0.5 && box.left < gap.right - 0.5)) found.push(`${label} is drawn inside an idle gap`);
    });
    return found;
  });
}

describe.skipIf(!haveChromium && !browserRequired)(`the timeline page for debugging (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));
  afterAll(() => {
    expect(outsideRequests).toEqual([]);
    expect(failedResponses).toEqual([]);
  });

  it('draws two runs minutes apart each on a readable scale, the idle gap marked, and zooms into a run or a span', async () => {
    const { who, owner, worker, threadId } = await superadminThread('two runs minutes apart');
    // The runtime's observations: the first run six minutes ago for four seconds, the second now.
    const base = Date.now() - 6 * 60_000;
    const at = (ms: number) => new Date(base + ms).toISOString();
    const first = await owner.createRun({ threadId });
    let lease = await worker.claimRun(first.id, 60);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x', observedAt: at(0) });
    await worker.recordModelFinished({
      lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, observedAt: at(1500),
      toolCalls: [{ id: 'call-1', name: 'lookup', args: { q: 'kettle' } }],
    });
    await worker.recordToolStarted({ lease, toolCallId: 'call-1', name: 'lookup', effectiveInput: { q: 'kettle' }, sequence: 3, observedAt: at(1600) });
    await worker.recordToolFinished({ lease, toolCallId: 'call-1', output: { content: 'found' }, sequence: 4, observedAt: at(4000) });
    await worker.finishRun({ lease, status: 'INTERRUPTED' });
    const second = await owner.createRun({ threadId, resumeFromRunId: first.id });
    lease = await worker.claimRun(second.id, 60);
    const late = Date.now();
    await worker.recordModelStarted({ lease, operationId: 'answer', sequence: 1, model: 'gpt-x', observedAt: new Date(late) });
    await worker.recordModelFinished({ lease, operationId: 'answer', status: 'COMPLETED', sequence: 2, observedAt: new Date(late + 2000) });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await newPage();
    await openThread(page, who.owner, threadId);
    await expect.poll(() => page.locator('.row-space .row').count()).toBe(5);

    // Run labels tell the run and its resume apart.
    const labels = await page.locator('.row.run .name').allTextContents();
    expect(labels).toEqual([`run 1 · ${first.id.replace(/-/g, '').slice(-6)}`, `run 2 · ${second.id.replace(/-/g, '').slice(-6)}`]);
    expect(await row(page, second.id).locator('.resumed-from').textContent()).toBe(labels[0]);

    // One idle gap of about six minutes, drawn narrow and labelled; each run a large share of the axis.
    const gaps = page.locator('[data-testid=ruler] .gap');
    await expect.poll(() => gaps.count()).toBe(1);
    expect(await page.locator('[data-testid=ruler] .gap-label').textContent()).toMatch(/^(5|6) min \d+ s idle$/);
    expect(await barShare(page, first.id)).toBeGreaterThan(0.3);
    expect(await barShare(page, second.id)).toBeGreaterThan(0.3);
    // The ruler: clock times, in order, in each run's part of the axis, as many as fit side by side.
    const ticks = await page.locator('[data-testid=ruler] .tick').allTextContents();
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(ticks.every((tick) => /^\d\d:\d\d:\d\d(\.\d{3})?$/.test(tick))).toBe(true);
    await saveScreenshot(page, 'timeline-axis.png');
    expect(await overlappingRulerLabels(page)).toEqual([]);

    // Zoom into the first run: it fills the axis, the second is out of view.
    await row(page, first.id).locator('.zoom-run').click();
    await expect.poll(() => row(page, second.id).locator('.bar').count()).toBe(0);
    expect(await barShare(page, first.id)).toBeGreaterThan(0.9);
    // Narrower windows: the labels thin out instead of overlapping, zoomed on a short span or not.
    for (const viewport of [{ width: 1280, height: 720 }, { width: 1100, height: 800 }]) {
      await page.setViewportSize(viewport);
      await expect.poll(() => overlappingRulerLabels(page)).toEqual([]);
      await page.click('text=Whole thread');
      await expect.poll(() => overlappingRulerLabels(page)).toEqual([]);
      expect(await page.locator('[data-testid=ruler] .tick').count()).toBeGreaterThanOrEqual(2);
      await row(page, first.id).locator('.zoom-run').click();
    }
    await page.setViewportSize({ width: 1600, height: 1000 });
    await page.click('text=Whole thread');
    await expect.poll(() => row(page, second.id).locator('.bar').count()).toBe(1);

    // Drag along the ruler over the second run's span only.
    const ruler = (await page.locator('[data-testid=ruler]').boundingBox())!;
    const bar = (await row(page, second.id).locator('.bar').boundingBox())!;
    await page.mouse.move(bar.x + 2, ruler.y + 5);
    await page.mouse.down();
    await page.mouse.move(bar.x + bar.width - 2, ruler.y + 5, { steps: 5 });
    await page.mouse.up();
    await expect.poll(() => row(page, first.id).locator('.bar').count()).toBe(0);
    expect(await row(page, second.id).locator('.bar').count()).toBe(1);
    await page.close();
  }, 180_000);

  it('pages back past the newest 500 entries, and moves through the rows with the keyboard', async () => {
    const { who, owner, worker, threadId } = await superadminThread('a long thread');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const ids: string[] = [];
    for (let i = 1; i <= 520; i++) {
      ids.push((await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: i, model: `model-${i}` })).id);
    }
    await worker.finishRun({ lease, status: 'COMPLETED' });

    let page = await newPage();
    await openThread(page, who.owner, threadId);
    const loaded = page.locator('[data-testid=loaded-count]');
    await expect.poll(() => loaded.textContent()).toBe('500 entries loaded; older ones exist');
    // Only the rows in sight are in the page.
    expect(await page.locator('.row-space .row').count()).toBeLessThan(80);
    await page.click('[data-testid=load-older]');
    await expect.poll(() => loaded.textContent()).toBe('520 entries loaded');
    expect(await page.locator('[data-testid=load-older]').count()).toBe(0);

    // Keyboard, with nothing selected: End goes to the last row, Home to the first.
    await page.focus('[data-testid=rows]');
    await page.keyboard.press('End');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(ids[519]);
    await page.close();
    page = await newPage();
    await openThread(page, who.owner, threadId);
    await page.focus('[data-testid=rows]');
    await page.keyboard.press('Home');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(run.id);
    await page.close();
    page = await newPage();
    await openThread(page, who.owner, threadId);
    await page.click('[data-testid=load-older]');
    await expect.poll(() => page.locator('[data-testid=loaded-count]').textContent()).toBe('520 entries loaded');
    // Then the first row (the run), then the oldest model call, then the newest at End.
    await page.focus('[data-testid=rows]');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(run.id);
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(ids[0]);
    await expect.poll(() => page.locator('.details h2').textContent()).toContain('model-1');
    await page.keyboard.press('End');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(ids[519]);
    // Scrolled into sight, with its details loaded.
    expect(await page.locator('.row.selected').isVisible()).toBe(true);
    await expect.poll(() => page.locator('.details h2').textContent()).toContain('model-520');
    await page.keyboard.press('PageUp');
    const selected = await page.locator('.row.selected').getAttribute('data-key');
    expect(ids.indexOf(selected!)).toBeGreaterThan(480);
    expect(ids.indexOf(selected!)).toBeLessThan(519);
    await saveScreenshot(page, 'timeline-long-thread.png');
    await page.close();
  }, 300_000);

  it('keeps the rows in sight where they were when older entries load, a row selected elsewhere', async () => {
    const { who, owner, worker, threadId } = await superadminThread('paged back while reading');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const ids: string[] = [];
    for (let i = 1; i <= 520; i++) ids.push((await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: i, model: `model-${i}` })).id);
    await worker.finishRun({ lease, status: 'COMPLETED' });
    const page = await newPage();
    await openThread(page, who.owner, threadId);
    await expect.poll(() => page.locator('[data-testid=loaded-count]').textContent()).toBe('500 entries loaded; older ones exist');
    // The newest row selected, then the reader scrolls up to model-101 (the run's row, then model-21 on).
    await page.keyboard.press('End');
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(ids[519]);
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 81 * 28));
    /** Where a row is drawn in the rows pane, or null when it is out of sight (not drawn). */
    const inPane = async (key: string) => {
      if ((await row(page, key).count()) === 0) return null;
      const [pane, box] = await Promise.all([page.locator('[data-testid=rows]').boundingBox(), row(page, key).boundingBox()]);
      return box && pane ? Math.round(box.y - pane.y) : null;
    };
    await expect.poll(() => inPane(ids[100]!)).not.toBeNull();
    const before = await inPane(ids[100]!);

    await page.click('[data-testid=load-older]');
    await expect.poll(() => page.locator('[data-testid=loaded-count]').textContent()).toBe('520 entries loaded');
    // Still reading model-101 where it was; the selection kept, not scrolled to.
    await expect.poll(() => inPane(ids[100]!)).toBe(before);
    expect(await page.locator('.details h2').textContent()).toContain('model-520');
    expect(await row(page, ids[519]!).count()).toBe(0);
    // The older rows are above.
    await page.locator('[data-testid=rows]').evaluate((element) => (element.scrollTop = 0));
    await expect.poll(() => row(page, ids[0]!).isVisible()).toBe(true);
    await page.close();
  }, 300_000);

  it('moves through the rows with the arrow, Home and End keys wherever the focus is, except while typing', async () => {
    const { who, owner, worker, threadId } = await superadminThread('keys anywhere');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) ids.push((await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: i, model: `model-${i}` })).id);
    await worker.finishRun({ lease, status: 'COMPLETED' });
    const page = await newPage();
    await openThread(page, who.owner, threadId);
    await expect.poll(() => page.locator('.row-space .row').count()).toBe(4);
    const selected = () => page.locator('.row.selected').getAttribute('data-key');
    // Focus on the thread's heading, where opening it puts it: as n and p, the keys the help line lists work at once.
    await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    await page.keyboard.press('End');
    await expect.poll(selected).toBe(ids[2]);
    await page.keyboard.press('Home');
    await expect.poll(selected).toBe(run.id);
    await page.keyboard.press('ArrowDown');
    await expect.poll(selected).toBe(ids[0]);
    // After a click on a button, still.
    await page.click('[data-testid=errors-only]');
    await page.click('[data-testid=errors-only]');
    await page.keyboard.press('ArrowDown');
    await expect.poll(selected).toBe(ids[1]);
    // Typing in the search box keeps its own keys.
    await page.fill('input[type=search]', 'model');
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowUp');
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).selectionStart)).toBe(0);
    expect(await selected()).toBe(ids[1]);
    await page.close();
  }, 120_000);

  it('searches within the open thread and across threads, opens a hit in its timeline, and shows a live tool as it runs', async () => {
    const { who, owner, worker, threadId: billing } = await superadminThread('billing');
    const { id: other } = await owner.createThread({ title: 'refunds' });
    const write = async (threadId: string, tools: { id: string; name: string; input: { [key: string]: string | number }; output?: { content: string } }[]) => {
      const run = await owner.createRun({ threadId });
      const lease = await worker.claimRun(run.id, 120);
      await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'planner-7' });
      await worker.recordModelFinished({
        lease, operationId: 'plan', status: 'COMPLETED', sequence: 2,
        toolCalls: tools.map((tool) => ({ id: tool.id, name: tool.name, args: tool.input })),
      });
      const ids: Record<string, string> = {};
      let sequence = 3;
      for (const tool of tools.filter((candidate) => candidate.output !== undefined)) {
        ids[tool.id] = (await worker.recordToolStarted({ lease, toolCallId: tool.id, name: tool.name, effectiveInput: tool.input, sequence: sequence++ })).id;
        await worker.recordToolFinished({ lease, toolCallId: tool.id, output: tool.output!, sequence: sequence++ });
      }
      return { lease, ids, sequence };
    };
    const paid = await write(billing, [
      { id: 'pay', name: 'pay_invoice', input: { amount: 120, payee: 'Kettle Co.' }, output: { content: 'paid' } },
      { id: 'pay-later', name: 'pay_invoice', input: { amount: 300, payee: 'Teapot Ltd' } },
    ]);
    const refunded = await write(other, [{ id: 'refund', name: 'refund', input: { amount: 120, payee: 'Kettle Co.' }, output: { content: 'declined' } }]);

    const page = await newPage();
    await openThread(page, who.owner, billing);
    const hits = page.locator('[data-testid=search-results] li');
    // Within the open thread.
    await page.fill('input[type=search]', 'kettle co');
    await page.press('input[type=search]', 'Enter');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([paid.ids.pay]);
    // Across the caller's threads.
    await page.selectOption('select[aria-label=Where]', 'all');
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([refunded.ids.refund, paid.ids.pay]);
    expect(await hits.first().textContent()).toContain('in refunds');
    await saveScreenshot(page, 'search-results.png');
    // A hit opens its row in its thread's timeline.
    await hits.first().locator('a').click();
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(refunded.ids.refund);
    expect(page.url()).toContain(`#thread=${other}`);

    // Back in the billing thread, a tool that starts while its results show joins them, running.
    await page.goto(`${origin}/#thread=${billing}`);
    await page.waitForSelector('[data-testid=connection]:text("live")');
    await expect.poll(() => page.locator('.timeline code').textContent()).toBe(billing);
    await page.selectOption('select[aria-label=Where]', 'thread');
    await page.fill('input[type=search]', 'teapot');
    await page.press('input[type=search]', 'Enter');
    await expect.poll(() => page.locator('[data-testid=search-results]').textContent()).toContain('No audit matches');
    const running = await worker.recordToolStarted({
      lease: paid.lease, toolCallId: 'pay-later', name: 'pay_invoice', effectiveInput: { amount: 300, payee: 'Teapot Ltd' }, sequence: paid.sequence,
    });
    await expect.poll(() => hits.evaluateAll((items) => items.map((item) => item.getAttribute('data-audit-id')))).toEqual([running.id]);
    expect(await hits.first().locator('.status').textContent()).toBe('RUNNING');
    await page.close();
  }, 180_000);

  it('shows token usage per call, run and thread, a model call as a conversation, and has no serious or critical accessibility violations (axe-core) on the thread list, a timeline with a row open, search results', async () => {
    const { who, owner, worker, threadId } = await superadminThread('accessible');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 60);
    const model = await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x', input: { messages: [{ role: 'user', content: 'hi' }] } });
    await worker.recordModelFinished({
      lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'lookup', args: { q: 1 } }],
      usage: { input_tokens: 1200, output_tokens: 30 },
      output: { role: 'assistant', content: 'Looking it up', tool_calls: [{ id: 'c1', name: 'lookup', args: { q: 1 } }] },
    });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'lookup', effectiveInput: { q: 2 }, sequence: 3 });
    const page = await newPage();
    const violations = async (where: string) => {
      // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an injected <script>.
      await page.evaluate(readFileSync(AXE, 'utf8'));
      const found = await page.evaluate(async () => {
        const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
        return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
      });
      return found.map((violation) => `${where}: ${violation}`);
    };
    await openThread(page, who.owner, threadId);
    // Token usage: on the model call, its run, and the thread.
    await expect.poll(() => page.locator('[data-testid=thread-tokens]').textContent()).toBe(' · 1,200 → 30 tokens in this thread');
    expect(await row(page, run.id).locator('.tokens').textContent()).toBe('1,200 → 30 tokens');
    // The model call as a conversation: the user's message, then the answer's tool call.
    await row(page, model.id).click();
    await expect.poll(() => page.locator('[data-testid=conversation] li').allTextContents()).toEqual(['user hi', 'assistant Looking it up→ lookup({"q":1}) c1']);
    await row(page, tool.id).click();
    await page.waitForSelector('.details .declared-vs-effective');
    await page.fill('input[type=search]', 'lookup');
    await page.press('input[type=search]', 'Enter');
    await page.waitForSelector('[data-testid=search-results] li');
    const found = await violations('timeline');
    await page.click('text=← threads');
    await page.waitForSelector('section.threads');
    found.push(...(await violations('thread list')));
    expect(found).toEqual([]);
    await page.close();
  }, 120_000);

  it('lists the tool calls in a ledger: declared vs effective input, the cases, filters, a tool appearing live as it runs; calls never started under their model call', async () => {
    const { who, owner, worker, threadId } = await superadminThread('ledger');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 120);
    await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'gpt-x' });
    const plan = await worker.recordModelFinished({
      lease, operationId: 'plan', status: 'COMPLETED', sequence: 2,
      toolCalls: [
        { id: 'look', name: 'lookup', args: { q: 1 } },
        { id: 'pay-small', name: 'pay', args: { amount: 5 } },
        { id: 'pay-big', name: 'pay', args: { amount: 9 } },
        { id: 'skip', name: 'notify', args: { to: 'ops' } },
      ],
    });
    await worker.recordToolStarted({ lease, toolCallId: 'look', name: 'lookup', effectiveInput: { q: 2 }, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'look', output: { content: 'found' }, sequence: 4 });
    await worker.recordToolStarted({ lease, toolCallId: 'pay-big', name: 'pay', effectiveInput: { amount: 9 }, sequence: 5 });

    const page = await newPage();
    await openThread(page, who.owner, threadId);
    // The timeline: the calls declared and not started yet sit under their model call, pending.
    const declared = page.locator('.row[data-key^="declared:"]');
    await expect.poll(() => declared.evaluateAll((rows) => rows.map((r) => [r.querySelector('.name')!.textContent, r.getAttribute('data-status')]))).toEqual([
      ['pay (pay-small)', 'PENDING'],
      ['notify (skip)', 'PENDING'],
    ]);
    const keys = await page.locator('.row-space .row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')));
    expect(keys.indexOf(await declared.first().getAttribute('data-key'))).toBeGreaterThan(keys.indexOf(plan.id));
    await declared.last().click();
    await expect.poll(() => page.locator('[data-testid=declared-note]').textContent()).toContain('not started yet');

    await page.click('button:text("Tool calls")');
    const entries = page.locator('[data-testid=ledger] tbody tr');
    const entry = (id: string) => page.locator(`[data-testid=ledger] tr[data-tool-call-id="${id}"]`);
    await expect.poll(() => entries.count()).toBe(4);
    expect(await entry('look').locator('.input').textContent()).toContain('differs');
    expect(await entry('look').getAttribute('data-status')).toBe('COMPLETED');
    // Declared a moment ago in a run still going: pending, not "never run".
    expect(await entry('pay-small').locator('.cases').textContent()).toBe('pending');
    expect(await entry('pay-big').locator('.input').textContent()).toContain('as declared');
    expect(await entry('pay-big').locator('.cases').textContent()).toMatch(/^runninglease \d.* left$/);

    await page.selectOption('select[aria-label="Tool-call status"]', 'RUNNING');
    await expect.poll(() => entries.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool-call-id')))).toEqual(['pay-big']);
    await page.selectOption('select[aria-label="Tool-call status"]', '');
    await page.selectOption('select[aria-label="Tool name"]', 'pay');
    await page.selectOption('select[aria-label=Case]', 'pending');
    await expect.poll(() => entries.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool-call-id')))).toEqual(['pay-small']);

    // The pending call starts: it leaves the "pending" filter and shows running.
    await worker.recordToolStarted({ lease, toolCallId: 'pay-small', name: 'pay', effectiveInput: { amount: 50 }, sequence: 6 });
    await expect.poll(() => entries.count()).toBe(0);
    await page.selectOption('select[aria-label=Case]', 'running');
    await expect.poll(() => entries.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool-call-id')))).toEqual(['pay-big', 'pay-small']);
    await expect.poll(() => entry('pay-small').locator('.input').textContent()).toContain('differs');

    // The run ends without running `skip`: now it never ran, in the ledger and on the timeline.
    await worker.recordToolFinished({ lease, toolCallId: 'pay-small', output: { content: 'paid' }, sequence: 7 });
    await worker.recordToolFinished({ lease, toolCallId: 'pay-big', output: { content: 'paid' }, sequence: 8 });
    await worker.finishRun({ lease, status: 'COMPLETED' });
    await page.selectOption('select[aria-label="Tool name"]', '');
    await page.selectOption('select[aria-label=Case]', 'never run');
    await expect.poll(() => entries.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool-call-id')))).toEqual(['skip']);
    await page.click('button:text("Timeline")');
    await expect.poll(() => declared.evaluateAll((rows) => rows.map((r) => [r.querySelector('.name')!.textContent, r.getAttribute('data-status')]))).toEqual([
      ['notify (skip)', 'NEVER_RUN'],
    ]);
    await page.close();
  }, 120_000);

  it('lists the tool calls across threads: each with its thread, filters, a tool appearing live while it runs, an entry opening its row', async () => {
    const { who, owner, worker, threadId: orders } = await superadminThread('orders');
    const { id: payments } = await owner.createThread({ title: 'payments' });
    const declare = async (threadId: string, tools: { id: string; name: string; args: { [key: string]: string | number } }[]) => {
      const run = await owner.createRun({ threadId });
      const lease = await worker.claimRun(run.id, 120);
      await worker.recordModelStarted({ lease, operationId: 'plan', sequence: 1, model: 'planner-7' });
      const model = await worker.recordModelFinished({ lease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: tools });
      return { lease, model };
    };
    // Another superadmin's calls never show.
    const stranger = await superadminThread('not yours');
    const strangerRun = await stranger.owner.createRun({ threadId: stranger.threadId });
    const strangerLease = await stranger.worker.claimRun(strangerRun.id, 120);
    await stranger.worker.recordModelStarted({ lease: strangerLease, operationId: 'plan', sequence: 1, model: 'planner-7' });
    await stranger.worker.recordModelFinished({
      lease: strangerLease, operationId: 'plan', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'theirs', name: 'pay', args: { amount: 1 } }],
    });

    const ordering = await declare(orders, [
      { id: 'lookup', name: 'lookup', args: { q: 'kettle' } },
      { id: 'ship', name: 'ship', args: { to: 'Leeds' } },
    ]);
    const lookup = await worker.recordToolStarted({ lease: ordering.lease, toolCallId: 'lookup', name: 'lookup', effectiveInput: { q: 'kettle', limit: 5 }, sequence: 3 });
    await worker.recordToolFinished({ lease: ordering.lease, toolCallId: 'lookup', output: { content: 'found' }, sequence: 4 });
    const paying = await declare(payments, [
      { id: 'pay', name: 'pay', args: { amount: 120 } },
      { id: 'pay-later', name: 'pay', args: { amount: 300 } },
    ]);
    await worker.recordToolStarted({ lease: paying.lease, toolCallId: 'pay', name: 'pay', effectiveInput: { amount: 120 }, sequence: 3 });

    const page = await newPage();
    await signIn(page, who.owner);
    await page.click('button:text("Tool calls across threads")');
    const entries = page.locator('[data-testid=ledger] tbody tr');
    const shown = () => entries.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool-call-id')));
    const entry = (id: string) => page.locator(`[data-testid=ledger] tr[data-tool-call-id="${id}"]`);
    // Newest first, each with its thread.
    await expect.poll(shown).toEqual(['pay-later', 'pay', 'ship', 'lookup']);
    expect(await entry('pay').getAttribute('data-thread-id')).toBe(payments);
    expect(await entry('pay').locator('td').first().textContent()).toBe('payments');
    expect(await entry('lookup').locator('td').first().textContent()).toBe('orders');
    expect(await entry('lookup').locator('.input').textContent()).toContain('differs');
    expect(await entry('pay').locator('.cases').textContent()).toMatch(/^runninglease \d.* left$/);
    expect(await entry('ship').locator('.cases').textContent()).toBe('pending');
    await saveScreenshot(page, 'tool-call-ledger.png');

    // Filters: by tool, by status, by case, together.
    await page.selectOption('select[aria-label="Tool name"]', 'pay');
    await expect.poll(shown).toEqual(['pay-later', 'pay']);
    await page.selectOption('select[aria-label="Tool-call status"]', 'RUNNING');
    await expect.poll(shown).toEqual(['pay']);
    await page.selectOption('select[aria-label="Tool-call status"]', '');
    await page.selectOption('select[aria-label=Case]', 'pending');
    await expect.poll(shown).toEqual(['pay-later']);
    await page.selectOption('select[aria-label="Tool name"]', '');
    await expect.poll(shown).toEqual(['pay-later', 'ship']);

    // A call that starts leaves "pending" and shows among the running, with no reload.
    await worker.recordToolStarted({ lease: paying.lease, toolCallId: 'pay-later', name: 'pay', effectiveInput: { amount: 300 }, sequence: 4 });
    await expect.poll(shown, { timeout: 10_000 }).toEqual(['ship']);
    await page.selectOption('select[aria-label=Case]', 'running');
    await expect.poll(shown).toEqual(['pay-later', 'pay']);
    expect(await entry('pay-later').locator('.input').textContent()).toContain('as declared');

    // An entry opens its row in its thread's timeline: the execution, or for a call not started, its
    // own row under the model call that declared it.
    await page.selectOption('select[aria-label=Case]', '');
    await entry('lookup').locator('a').click();
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(lookup.id);
    expect(page.url()).toContain(`#thread=${orders}`);
    await page.click('text=← threads');
    await page.click('button:text("Tool calls across threads")');
    await entry('ship').locator('a').click();
    await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toMatch(/^declared:/);
    expect(await page.locator('.row.selected .name').textContent()).toBe('ship (ship)');
    expect(await page.locator('.row.selected').getAttribute('data-status')).toBe('PENDING');
    const keys = await page.locator('.row-space .row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')));
    expect(keys.indexOf(await page.locator('.row.selected').getAttribute('data-key'))).toBeGreaterThan(keys.indexOf(ordering.model.id));
    await page.close();
  }, 120_000);

  it('has a favicon, for the page and for GraphiQL', async () => {
    const page = await newPage();
    await page.goto(`${origin}/`);
    const icon = await page.request.get(`${origin}/favicon.ico`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()['content-type']).toBe('image/svg+xml');
    expect((await page.request.get(`${origin}/favicon.svg`)).status()).toBe(200);
    await page.close();
  });
});
