// The timeline left open on a wall screen while a run writes for hours, in headless Chromium: the
// page keeps a bounded window of the newest entries (the newest 500, as a thread opens with) and
// says how many of the run's entries are not loaded, as the run's own count goes on growing.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;

/** A running run of `threadId` and a writer of finished model calls into it, 16 at a time (`failing`: the written call of that number fails); `written` counts them. */
async function runningRun({ owner, worker, threadId }: { owner: AuditClient; worker: AuditClient; threadId: string }) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 3600);
  const writer = {
    runId: run.id,
    written: 0,
    async write(calls: number, failing = -1) {
      const batch: Promise<unknown>[] = [];
      for (let i = 0; i < calls; i++) {
        const n = writer.written++;
        batch.push(
          worker
            .recordModelStarted({ lease, operationId: `m${n}`, sequence: 2 * n + 1, model: 'gpt-x' })
            .then(() =>
              worker.recordModelFinished({
                lease, operationId: `m${n}`, sequence: 2 * n + 2,
                ...(n === failing ? { status: 'FAILED' as const, error: { message: 'rate limited' } } : { status: 'COMPLETED' as const }),
              }),
            ),
        );
        if (batch.length === 16) await Promise.all(batch.splice(0));
      }
      await Promise.all(batch);
    },
  };
  return writer;
}

const loadedCount = (page: Page) => page.locator('[data-testid=loaded-count]').textContent();
const notLoaded = (page: Page, runId: string) =>
  page.locator(`.row[data-key="${runId}"] [data-testid=load-run]`).textContent({ timeout: 1000 }).catch(() => 'none');
/** Selects the first row, the run's: the rows are drawn while in sight, and a thread opens at its newest. */
async function selectRun(page: Page, runId: string) {
  await page.locator('[data-testid=rows]').focus();
  await page.keyboard.press('Home');
  await expect.poll(() => page.locator('.row.selected').getAttribute('data-key')).toBe(runId);
}

describe.skipIf(!haveChromium && !browserRequired)(`a live timeline left open (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));

  /** A new thread's running run with `calls` model calls written, open in a new page with the run's row selected (or none: the page follows the newest rows). */
  async function runShown(title: string, calls: number, select = true, prepare?: (page: Page) => Promise<unknown>) {
    const thread = await superadminThread(server.url, title);
    const run = await runningRun(thread);
    await run.write(calls);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await prepare?.(page);
    await signIn(page, origin, thread.who.owner);
    await openThread(page, origin, `#thread=${thread.threadId}`);
    if (select) await selectRun(page, run.runId);
    return { run, page };
  }

  it("keeps saying how many of a running run's entries are not loaded while its new ones stream in", async () => {
    const { run, page } = await runShown('a long run watched', 520);
    await expect.poll(() => notLoaded(page, run.runId)).toBe('20 entries not loaded · load');

    await run.write(30);
    await expect.poll(() => loadedCount(page)).toBe('530 entries loaded; older ones exist');
    // The 30 new entries are loaded: the 20 old ones still are not.
    await expect.poll(() => notLoaded(page, run.runId)).toBe('20 entries not loaded · load');
    await page.close();
  }, 180_000);

  it("reads a running run's summary again when that read fails, so its count of entries not loaded does not stay wrong", async () => {
    // Reads of one run (query PageRun) fail while `refusing`: over HTTP as behind a proxy answering 503, over the live connection with an error.
    const refusal = { refusing: true, refused: 0 };
    const isRunRead = (text: string) => text.includes('query PageRun');
    const { run, page } = await runShown('a run read again', 520, true, async (page) => {
      await page.route('**/graphql', (route) => {
        if (!refusal.refusing || !isRunRead(route.request().postData() ?? '')) return route.fallback();
        refusal.refused++;
        return route.fulfill({ status: 503, body: 'Service Unavailable' });
      });
      await page.routeWebSocket(/\/graphql/, (socket) => {
        const server = socket.connectToServer();
        socket.onMessage((message) => {
          const sent = JSON.parse(String(message)) as { id?: string; type: string; payload?: { query?: string } };
          if (refusal.refusing && sent.type === 'subscribe' && isRunRead(sent.payload?.query ?? '')) {
            return socket.send(JSON.stringify({ id: sent.id, type: 'error', payload: [{ message: 'unavailable' }] }));
          }
          server.send(message);
        });
      });
    });
    await expect.poll(() => notLoaded(page, run.runId)).toBe('20 entries not loaded · load');

    await run.write(30);
    await expect.poll(() => loadedCount(page)).toBe('530 entries loaded; older ones exist');
    // The read after them failed (and would fail again): the 30 new entries count as old ones loaded.
    await expect.poll(() => refusal.refused, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => notLoaded(page, run.runId)).toBe('none');
    // The server answers again; nothing more changes in the run, and its count is right all the same.
    refusal.refusing = false;
    await expect.poll(() => notLoaded(page, run.runId), { timeout: 30_000 }).toBe('20 entries not loaded · load');
    await page.close();
  }, 180_000);

  it('keeps at most 1,000 entries of a run writing for hours, the newest, and says the others are not loaded', async () => {
    // A wall screen: nothing selected, the page at the newest rows as they stream in.
    const { run, page } = await runShown('a run writing all day', 10, false);
    await expect.poll(() => loadedCount(page)).toBe('10 entries loaded');

    await run.write(1190);
    await expect.poll(() => loadedCount(page), { timeout: 60_000 }).toMatch(/older ones exist$/);
    // Once all 1,200 are in: the page holds the newest of them, the run's row says how many it does not.
    await selectRun(page, run.runId);
    await expect.poll(async () => {
      const loaded = Number(/^(\d+) entries loaded; older ones exist$/.exec((await loadedCount(page)) ?? '')?.[1]);
      const said = await notLoaded(page, run.runId);
      return loaded <= 1000 && said === `${1200 - loaded} entries not loaded · load` ? true : `${loaded} loaded, the run says ${said}`;
    }, { timeout: 60_000 }).toBe(true);
    // The older ones are a click away, as on a thread opened long.
    await expect(page.locator('[data-testid=load-older]').count()).resolves.toBe(1);
    await page.close();
  }, 300_000);

  it('leaves the rows a reader scrolled up to where they are while the run streams past 1,000 entries, and lets older ones go once the reader is back at the newest', async () => {
    const { run, page } = await runShown('a failure read while the run streams', 10);
    // Call m300 fails, 301 rows down; the newest 500 of the 1,100 below are calls m600 on.
    await run.write(890, 300);
    await expect.poll(() => loadedCount(page), { timeout: 60_000 }).toBe('900 entries loaded');
    // The reader goes to the failure (n) and reads it, its details open.
    await page.keyboard.press('n');
    const failure = page.locator('.row.selected');
    await expect.poll(() => failure.getAttribute('data-status')).toBe('FAILED');
    const failureKey = (await failure.getAttribute('data-key'))!;
    await expect.poll(() => page.locator(`aside.details[data-key="${failureKey}"]`).textContent()).toContain('rate limited');
    /** Where each row wholly in the scroller's sight is, in pixels from the page's top. */
    const inSight = () =>
      page.locator('[data-testid=rows]').evaluate((scroller) => {
        const pane = scroller.getBoundingClientRect();
        return Object.fromEntries(
          [...scroller.querySelectorAll<HTMLElement>('.row')]
            .map((row) => [row.dataset.key!, row.getBoundingClientRect()] as const)
            .filter(([, box]) => box.top >= pane.top && box.bottom <= pane.bottom)
            .map(([key, box]) => [key, Math.round(box.top)]),
        );
      });
    const before = await inSight();
    expect(before[failureKey]).toBeDefined();

    await run.write(200);
    // All 1,100 are held (or, were the window to drop, some are not loaded): then the rows read are still there, where they were.
    await expect.poll(() => loadedCount(page), { timeout: 60_000 }).toMatch(/^1100 entries loaded$|older ones exist$/);
    const after = await inSight();
    for (const [key, top] of Object.entries(before)) expect(Math.abs((after[key] ?? -1e6) - top), `row ${key}`).toBeLessThanOrEqual(3);

    // Back at the newest rows (the cue below), the page lets the older entries go with the next ones; the failure stays selected and open.
    await page.locator('[data-testid=new-activity]').click();
    await run.write(20);
    await expect.poll(async () => Number(/^(\d+) entries loaded; older ones exist$/.exec((await loadedCount(page)) ?? '')?.[1]) || Infinity, { timeout: 60_000 }).toBeLessThanOrEqual(1000);
    await expect.poll(() => page.locator(`aside.details[data-key="${failureKey}"]`).textContent()).toContain('rate limited');
    await page.close();
  }, 300_000);

  it("counts a lease's time left down while it is shown, then shows the run failed when the server sweeps it", async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'a lease running out');
    const run = await owner.createRun({ threadId });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await worker.claimRun(run.id, 8);
    const meta = page.locator(`.row[data-key="${run.id}"] .meta`).first();
    await expect.poll(() => meta.textContent()).toMatch(/ s left$/);
    // The worker never renews: the sweep fails the run, and the row says so, the lease's clock gone.
    await expect.poll(() => page.locator(`.row[data-key="${run.id}"]`).getAttribute('data-status'), { timeout: 60_000 }).toBe('FAILED');
    await expect.poll(() => meta.textContent()).not.toMatch(/left|lease expired/);
    await expect.poll(() => page.locator(`.row[data-key="${run.id}"]`).textContent()).toContain('LEASE_EXPIRED');
    await page.close();
  }, 120_000);
});

