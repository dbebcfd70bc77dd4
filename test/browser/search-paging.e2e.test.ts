// A search past its first page in Chromium, against the server process (PGlite, or PostgreSQL in the
// services pass): a live change of the open thread reads the search again as far as it was read,
// so the pages read with 'Next results' stay; 'Clear' empties the box and its filters, and the
// address, so the next search starts from none of them.
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, seriousViolations, signIn, superadminThread } from './support/page.js';

let origin: string;
let browser: Browser;

describe.skipIf(!haveChromium && !browserRequired)(`a search past its first page in Chromium (${backendName})`, () => {
  const server = pageSuite((suite) => ({ origin, browser } = suite));

  /** The open thread's completed model calls searched for (kind and status chosen), signed in as `token`. */
  async function searchCompletedModelCalls(token: string, threadId: string) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, token);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.selectOption('select[aria-label=Kind]', 'MODEL');
    await page.selectOption('select[aria-label=Status]', 'COMPLETED');
    return { page, hits: page.locator('[data-testid=search-results] li') };
  }

  it('keeps the pages read as the open thread changes: all 61 hits, not the first 50', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'sixty calls');
    const lease = await worker.claimRun((await owner.createRun({ threadId })).id, 600);
    let sequence = 0;
    const modelCall = async (i: number) => {
      await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: ++sequence, model: 'gpt-x' });
      await worker.recordModelFinished({ lease, operationId: `m${i}`, status: 'COMPLETED', sequence: ++sequence });
    };
    for (let i = 0; i < 60; i++) await modelCall(i);

    const { page, hits } = await searchCompletedModelCalls(who.owner, threadId);
    await expect.poll(() => hits.count()).toBe(50);
    await page.click('[data-testid=search-more]');
    await expect.poll(() => hits.count()).toBe(60);

    // A call of the open thread ends: the results are read again, all 61, not the first 50.
    await modelCall(60);
    await expect.poll(() => page.locator('[data-testid=search-results] [role=status]').textContent()).toMatch(/^61 matching model calls/);
    expect(await hits.count()).toBe(61);
    expect(await page.locator('[data-testid=search-more]').count()).toBe(0);
    await page.close();
  }, 240_000);

  it('Clear empties the box, the name, kind and status filters and the address', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'cleared');
    const lease = await worker.claimRun((await owner.createRun({ threadId })).id, 600);
    for (let i = 0; i < 51; i++) {
      await worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: 2 * i + 1, model: 'gpt-x' });
      await worker.recordModelFinished({ lease, operationId: `m${i}`, status: 'COMPLETED', sequence: 2 * i + 2 });
    }
    const { page, hits } = await searchCompletedModelCalls(who.owner, threadId);
    await page.fill('input[name=q]', 'gpt');
    await page.fill('input[name=name]', 'gpt-x');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => page.locator('[data-testid=search-results] [role=status]').textContent()).toMatch(/^50\+ matching model calls/);
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => hits.count()).toBe(0);
    expect(await page.inputValue('input[name=q]')).toBe('');
    expect(await page.inputValue('input[name=name]')).toBe('');
    expect(await page.inputValue('select[aria-label=Kind]')).toBe('');
    expect(await page.inputValue('select[aria-label=Status]')).toBe('');
    await expect.poll(() => new URL(page.url()).hash).toBe(`#thread=${threadId}`);
    expect(await seriousViolations(page)).toEqual([]);
    // The next search is only what is asked now: any kind, any status.
    await page.fill('input[name=q]', 'gpt-x');
    await page.press('input[name=q]', 'Enter');
    await expect.poll(() => page.locator('[data-testid=search-results] [role=status]').textContent()).toMatch(/^50\+ matching audits/);
    await page.close();
  }, 240_000);
});
