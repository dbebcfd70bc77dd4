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

/** A running run of `threadId` and a writer of finished model calls into it, 16 at a time; `written` counts them. */
async function runningRun({ owner, worker, threadId }: { owner: AuditClient; worker: AuditClient; threadId: string }) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 3600);
  const writer = {
    runId: run.id,
    written: 0,
    async write(calls: number) {
      const batch: Promise<unknown>[] = [];
      for (let i = 0; i < calls; i++) {
        const n = writer.written++;
        batch.push(
          worker
            .recordModelStarted({ lease, operationId: `m${n}`, sequence: 2 * n + 1, model: 'gpt-x' })
            .then(() => worker.recordModelFinished({ lease, operationId: `m${n}`, status: 'COMPLETED', sequence: 2 * n + 2 })),
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

  /** A new thread's running run with `calls` model calls written, open in a new page with the run's row selected. */
  async function runShown(title: string, calls: number) {
    const thread = await superadminThread(server.url, title);
    const run = await runningRun(thread);
    await run.write(calls);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, thread.who.owner);
    await openThread(page, origin, `#thread=${thread.threadId}`);
    await selectRun(page, run.runId);
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

  it('keeps at most 1,000 entries of a run writing for hours, the newest, and says the others are not loaded', async () => {
    const { run, page } = await runShown('a run writing all day', 10);
    await expect.poll(() => loadedCount(page)).toBe('10 entries loaded');

    await run.write(1190);
    // Once all 1,200 are in: the page holds the newest of them, the run's row says how many it does not.
    await expect.poll(async () => {
      const loaded = Number(/^(\d+) entries loaded; older ones exist$/.exec((await loadedCount(page)) ?? '')?.[1]);
      return loaded <= 1000 && (await notLoaded(page, run.runId)) === `${1200 - loaded} entries not loaded · load`;
    }, { timeout: 60_000 }).toBe(true);
    // The older ones are a click away, as on a thread opened long.
    await expect(page.locator('[data-testid=load-older]').count()).resolves.toBe(1);
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

