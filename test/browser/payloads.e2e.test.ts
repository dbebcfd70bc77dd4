// Chromium against the server process (PGlite, or PostgreSQL in the services pass): a tool's
// awkward payloads (a screenshot as base64, line breaks, invisible characters, odd keys, an
// object 200 levels deep) open in a row's details, and each payload can be copied on its own,
// exactly as the API gives it.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let origin: string;
let context: BrowserContext;

const deep = (levels: number): unknown => {
  let value: unknown = { leaf: 'bottom' };
  for (let i = 0; i < levels; i++) value = { d: value };
  return value;
};

/** The clipboard's text after clicking the copy button of the details' payload labelled `label` (the first such). */
async function copyPayload(page: Page, label: string): Promise<string> {
  const button = page.locator(`.details .json-view[data-label="${label}"] [data-testid=copy-payload]`).first();
  await button.click();
  await expect.poll(() => button.textContent()).toBe('Copied');
  return page.evaluate(() => navigator.clipboard.readText());
}

describe.skipIf(!haveChromium && !browserRequired)(`a payload's own copy button (${backendName})`, () => {
  let browser: Browser;
  const server = pageSuite((suite) => ({ origin, browser } = suite));
  beforeAll(async () => {
    context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  });

  it('copies one payload exactly as read: a 1 MB screenshot, CRLF and invisible characters, a __proto__ key, a string payload as its text', { timeout: 120_000 }, async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'awkward payloads');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const screenshot = `data:image/png;base64,${Buffer.alloc(750_000, 7).toString('base64')}`;
    const effectiveInput = { ...JSON.parse('{"__proto__": {"polluted": true}, "a.b": 1, "$set": null, "empty": {}}'), nested: deep(200) };
    const output = { type: 'tool', tool_call_id: 'shot', name: 'screenshot', status: 'success', content: { image: screenshot, note: 'line1\r\nline2\t"quoted" \u202Eevil\u200D ok' } };
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    // The model's arguments as a JSON string, as OpenAI's API writes them.
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'shot', name: 'screenshot', args: '{"url":"https://example.test"}' }] });
    const { id: auditId } = await worker.recordToolStarted({ lease, toolCallId: 'shot', name: 'screenshot', effectiveInput, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'shot', output, sequence: 4 });
    await worker.finishRun({ lease, status: 'FAILED', error: 'the page would not load' });

    const page = await context.newPage();
    await page.setViewportSize({ width: 1600, height: 1000 });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${auditId}`);
    await page.waitForSelector('.details .json-view[data-label="output"]');

    // The output as the API reads it: same value, keys in jsonb's order.
    expect(JSON.parse(await copyPayload(page, 'output'))).toEqual(output);
    // The model's arguments as it wrote them (a JSON string), beside the effective input 200 levels deep.
    expect(await copyPayload(page, 'declared')).toBe('{"url":"https://example.test"}');
    const input = JSON.parse(await copyPayload(page, 'effective'));
    expect(Object.getOwnPropertyNames(input)).toContain('__proto__');
    expect(input).toEqual(JSON.parse(JSON.stringify(effectiveInput)));
    // A string payload is copied as its text, not as a JSON string literal.
    await page.click(`.row[data-key="${run.id}"]`);
    await page.waitForSelector('.details .json-view[data-label="error"]');
    expect(await copyPayload(page, 'error')).toBe('the page would not load');
    await page.close();
  });
  it('says a 60,000-item input differs without drawing it, and draws a small one 200 levels deep', { timeout: 120_000 }, async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'a large effective input');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const items = Array.from({ length: 60_000 }, (_, i) => ({ i }));
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({
      lease, operationId: 'm1', status: 'COMPLETED', sequence: 2,
      toolCalls: [{ id: 'many', name: 'bulk', args: { items: [] } }, { id: 'deep', name: 'nest', args: { nested: deep(199) } }],
    });
    const many = await worker.recordToolStarted({ lease, toolCallId: 'many', name: 'bulk', effectiveInput: { items }, sequence: 3 });
    const nested = await worker.recordToolStarted({ lease, toolCallId: 'deep', name: 'nest', effectiveInput: { nested: deep(200) }, sequence: 4 });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await context.newPage();
    await page.setViewportSize({ width: 1600, height: 1000 });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${many.id}`);
    await page.waitForSelector('.details .json-view[data-label="effective"]');
    // Said, not drawn: 60,000 items drawn kept the page from answering for more than 30 s.
    expect(await page.locator('.details .declared-vs-effective .differs').count()).toBe(1);
    expect(await page.locator('.details .diff').count()).toBe(0);
    expect(await page.locator('[data-testid=diff-not-drawn]').textContent()).toContain('copy both sides');
    const { items: copied } = JSON.parse(await copyPayload(page, 'effective'));
    expect(copied).toHaveLength(60_000);
    // A small input's differences are drawn at once, however deep.
    await openThread(page, origin, `#thread=${threadId}&audit=${nested.id}`);
    await page.waitForSelector('.details .diff');
    expect(await page.locator('[data-testid=diff-not-drawn]').count()).toBe(0);
    expect(await page.locator('.details .diff').textContent()).toContain('bottom');
    await page.close();
  });
});
