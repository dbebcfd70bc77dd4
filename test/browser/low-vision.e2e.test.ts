// The page as a low-vision engineer reads it: Windows High Contrast (forced colours, light and
// dark palettes), 400 % zoom (320 CSS px wide) and WCAG 1.4.12's text spacing. A call's status
// stays told by more than a colour, and in the user's own colours; axe-core clean in each state.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

/** A running run whose tool calls completed (`c1`, fetch), failed (`c2`, lookup) and still run (`c3`, search_documents). */
async function threadWithEachStatus() {
  const { who, owner, worker, threadId } = await superadminThread(server.url, 'each status');
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  const calls = [{ id: 'c1', name: 'fetch', args: {} }, { id: 'c2', name: 'lookup', args: {} }, { id: 'c3', name: 'search_documents', args: {} }];
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: calls });
  const completed = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'fetch', effectiveInput: {}, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'ok' }, sequence: 4 });
  const failed = await worker.recordToolStarted({ lease, toolCallId: 'c2', name: 'lookup', effectiveInput: {}, sequence: 5 });
  await worker.recordToolFinished({ lease, toolCallId: 'c2', output: { content: 'permission denied', status: 'error' }, sequence: 6 });
  const running = await worker.recordToolStarted({ lease, toolCallId: 'c3', name: 'search_documents', effectiveInput: {}, sequence: 7 });
  return { who, threadId, ids: { completed: completed.id, failed: failed.id, running: running.id } };
}

/** How a row's bar is painted: its fill, its pattern (the stripes' first colour), and the forced palette's CanvasText and Canvas. */
const barLook = (page: Page, auditId: string) =>
  page.locator(`#row-${auditId} .bar`).evaluate((bar) => {
    const probe = document.createElement('span');
    document.body.append(probe);
    probe.style.color = 'CanvasText';
    probe.style.backgroundColor = 'Canvas';
    const { color: canvasText, backgroundColor: canvas } = getComputedStyle(probe);
    probe.remove();
    const style = getComputedStyle(bar);
    return { fill: style.backgroundColor, stripes: /rgba?\([^)]*\)/.exec(style.backgroundImage)?.[0] ?? null, canvasText, canvas };
  });

describe.skipIf(!haveChromium && !browserRequired)(`the page for a low-vision reader (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it("tells a failed call's bar from a running one's in forced colours, every bar in the palette's colours, the running one striped", async () => {
    const { who, threadId, ids } = await threadWithEachStatus();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.locator(`#row-${ids.running}`).waitFor();
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ forcedColors: 'active', colorScheme });
      const [completed, failed, running] = await Promise.all([barLook(page, ids.completed), barLook(page, ids.failed), barLook(page, ids.running)]);
      // A finished call's bar is the palette's text colour, not the authored green left on the user's background.
      expect(completed.fill, colorScheme).toBe(completed.canvasText);
      expect(completed.stripes, colorScheme).toBeNull();
      // A failure and a call still running look different, and not by a colour alone: only the running one is striped.
      expect(failed.stripes, colorScheme).toBeNull();
      expect(failed.fill, colorScheme).not.toBe(completed.fill);
      expect(running.stripes, colorScheme).toBe(running.canvas);
      expect(running.fill, colorScheme).not.toBe(running.canvas);
    }
    await page.close();
  }, 120_000);
});
