// A thread as a debugger meets it late in its life, in headless Chromium against the server
// process: more runs than one read returns, failures written while the page is open, payloads
// holding characters that hide or reorder text.
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { serverForFile } from '../e2e/support/server.js';
import { browserRequired, haveChromium } from './support/chromium.js';
import { openThread, pageSuite, signIn, superadminThread } from './support/page.js';

let server: ReturnType<typeof serverForFile>;
let origin: string;
let browser: Browser;

const row = (page: Page, key: string) => page.locator(`.row[data-key="${key}"]`);
const selectedKey = (page: Page) => page.locator('.row.selected').getAttribute('data-key');

/** A run whose one model call declares one tool call that fails. */
async function runWithFailingTool(owner: AuditClient, worker: AuditClient, threadId: string) {
  const run = await owner.createRun({ threadId });
  const lease = await worker.claimRun(run.id, 600);
  await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
  await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'pay', args: {} }] });
  const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'pay', effectiveInput: {}, sequence: 3 });
  await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'permission denied', status: 'error' }, sequence: 4 });
  await worker.finishRun({ lease, status: 'COMPLETED' });
  return { runId: run.id, toolId: tool.id };
}

/**
 * `count` runs of the thread, queued and never claimed (only their number matters): 15 to a
 * request (the server's alias limit), the requests sent together.
 */
async function createRuns(url: string, token: string, threadId: string, count: number) {
  const requests = [];
  for (let made = 0; made < count; made += 15) {
    const aliases = Array.from({ length: Math.min(15, count - made) }, (_, i) => `r${i}: createRun(input: { threadId: $threadId }) { id }`);
    const body = JSON.stringify({ query: `mutation($threadId: ID!) { ${aliases.join(' ')} }`, variables: { threadId } });
    requests.push(fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body }).then((response) => response.json()));
  }
  for (const answer of await Promise.all(requests)) expect(answer.errors).toBeUndefined();
}

describe.skipIf(!haveChromium && !browserRequired)(`a long thread (${backendName})`, () => {
  server = pageSuite((suite) => ({ origin, browser } = suite));

  it('shows every run of a thread of more than 500, by its real place: the newest failure is one key away', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'five hundred and twenty runs');
    await createRuns(server.url, who.owner, threadId, 519);
    const newest = await runWithFailingTool(owner, worker, threadId);

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(newest.toolId);
    expect(await row(page, newest.runId).locator('.name').textContent()).toMatch(/^run 520 · /);

    // A run created while the page shows takes the next place.
    const live = await runWithFailingTool(owner, worker, threadId);
    await expect.poll(() => row(page, live.runId).locator('.name').textContent()).toMatch(/^run 521 · /);
    await page.close();
  }, 180_000);

  it('keeps the thread\'s failure line in step with failures written while it shows', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'failing while watched');
    await runWithFailingTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const line = page.locator('[data-testid=thread-failures]');
    await expect.poll(() => line.textContent()).toBe('In this thread: 1 tool failed');

    const live = await runWithFailingTool(owner, worker, threadId);
    await expect.poll(() => row(page, live.toolId).getAttribute('data-status')).toBe('FAILED');
    await expect.poll(() => line.textContent()).toBe('In this thread: 2 tools failed');
    await page.close();
  });

  it('shows bidi controls and invisible characters of a payload as marks, so the text reads as stored', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'payload with hidden characters');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const declared = { q: 'say \u202Eevil\u202C now', zw: 'a\u200bb\u200fc' };
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: [{ id: 'c1', name: 'echo', args: declared }] });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c1', name: 'echo', effectiveInput: { ...declared, zw: 'abc' }, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c1', output: { content: 'ok', status: 'success' }, sequence: 4 });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
    const pane = (label: string) => page.locator(`.details .json-view[data-label=${label}] pre`);
    await expect.poll(() => pane('declared').textContent()).toContain('"say ⟨U+202E⟩evil⟨U+202C⟩ now"');
    expect(await pane('declared').textContent()).toContain('"a⟨U+200B⟩b⟨U+200F⟩c"');
    expect(await pane('effective').textContent()).toContain('"abc"');
    // What the page draws holds no control that acts: the diff too.
    const drawn = await page.locator('.details').innerText();
    expect(drawn).not.toMatch(/[\u200B-\u200F\u202A-\u202E]/);
    expect(await page.locator('.details .diff').textContent()).toContain('a⟨U+200B⟩b⟨U+200F⟩c');
    await page.close();
  });

  it('shows bidi controls in names, ids and titles as marks too: a tool name cannot reorder the row it labels', async () => {
    // U+202E would draw "pay\u202Efdp.exe" as "payexe.pdf", and the title "refund\u202Enimda" as "refundadmin".
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'refund\u202Enimda');
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    const name = 'pay\u202Efdp.exe';
    const args = { to: 'say \u202Eevil' };
    const model = await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt\u2066x' });
    const declared = [{ id: 'c\u202E1', name, args }];
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, output: { role: 'assistant', content: '', tool_calls: declared }, toolCalls: declared });
    const tool = await worker.recordToolStarted({ lease, toolCallId: 'c\u202E1', name, effectiveInput: args, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: 'c\u202E1', output: { content: 'ok', status: 'success' }, sequence: 4 });
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${tool.id}`);
    await expect.poll(() => row(page, tool.id).locator('.name').textContent()).toBe('pay⟨U+202E⟩fdp.exe (c⟨U+202E⟩1)');
    await expect.poll(() => page.locator('.details h2').textContent()).toContain('pay⟨U+202E⟩fdp.exe');
    expect(await page.locator('h1.view-title').textContent()).toBe('refund⟨U+202E⟩nimda');
    expect(await page.locator('main').innerText()).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    // Where no mark can be drawn (the tab's title, what a screen reader announces), the same marks.
    expect(await page.title()).toBe('refund⟨U+202E⟩nimda · Agent audit timeline');
    expect(await page.locator('.details').getAttribute('aria-label')).toBe('Details of pay⟨U+202E⟩fdp.exe (c⟨U+202E⟩1)');
    const labels = await page.locator('[aria-label]').evaluateAll((elements) => elements.map((element) => element.getAttribute('aria-label')!));
    expect(labels.filter((label) => /[\u202A-\u202E\u2066-\u2069]/.test(label))).toEqual([]);
    // The model call's conversation: the call it declared, its name, arguments and id.
    await openThread(page, origin, `#thread=${threadId}&audit=${model.id}`);
    await expect.poll(() => page.locator('.message-tool-call').textContent()).toContain('pay⟨U+202E⟩fdp.exe({"to":"say ⟨U+202E⟩evil"}) c⟨U+202E⟩1');
    await expect.poll(() => row(page, model.id).locator('.name').textContent()).toMatch(/^gpt⟨U\+2066⟩x/);
    expect(await page.locator('main').innerText()).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    // A search hit names its thread, and its snippet's tooltip holds the text: marks there too.
    await page.getByPlaceholder('Search tool and model names, inputs, outputs, errors').fill('evil');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hit = page.locator(`li[data-audit-id="${tool.id}"]`);
    await expect.poll(() => hit.innerText()).toContain('in refund⟨U+202E⟩nimda');
    expect(await page.locator('body').innerText()).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    expect(await hit.locator('[data-testid=snippet]').getAttribute('title')).toContain('say ⟨U+202E⟩evil');
    await page.close();
  });

  it('lays out a Hebrew title holding a Latin word right to left: its first word is drawn rightmost', async () => {
    const title = 'שגיאה ב-API של התשלום';
    const { who, threadId } = await superadminThread(server.url, title);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await expect.poll(() => page.getByRole('link', { name: title }).count()).toBe(1);
    /** The left edges of `first` and `last` as drawn inside the element `selector` finds. */
    const edges = (selector: string) =>
      page.locator(selector).evaluate((element, words) => {
        const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        const text = walker.nextNode()!;
        const left = (word: string) => {
          const range = document.createRange();
          const at = text.textContent!.indexOf(word);
          range.setStart(text, at);
          range.setEnd(text, at + word.length);
          return range.getBoundingClientRect().left;
        };
        return { first: left(words[0]!), last: left(words[1]!) };
      }, ['שגיאה', 'התשלום']);
    const listed = await edges(`a[href$="${threadId}"]`);
    expect(listed.first).toBeGreaterThan(listed.last);
    await openThread(page, origin, `#thread=${threadId}`);
    await expect.poll(() => page.locator('h1.view-title').textContent()).toBe(title);
    const heading = await edges('h1.view-title');
    expect(heading.first).toBeGreaterThan(heading.last);
    await page.close();
  });

  it('opens a link to an old row by reading its run only, not the whole thread back to it', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'an old row behind 510 newer ones');
    const { toolId: oldRow } = await runWithFailingTool(owner, worker, threadId);
    const run = await owner.createRun({ threadId });
    const lease = await worker.claimRun(run.id, 600);
    await Promise.all(Array.from({ length: 510 }, (_, i) => worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: i + 1, model: 'gpt-x' })));
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}&audit=${oldRow}`);
    await expect.poll(() => selectedKey(page)).toBe(oldRow);
    // The old row's run (2 entries) joined the newest 500; the 10 entries between stay unread.
    expect(await page.locator('[data-testid=loaded-count]').textContent()).toBe('502 entries loaded; older ones exist');
    await page.close();
  }, 180_000);

  it('says so when n finds no failure after the selected row, and p none before it', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'one failure to step past');
    const { toolId } = await runWithFailingTool(owner, worker, threadId);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    const cue = page.getByRole('status').filter({ hasText: /failures/ });
    await page.keyboard.press('n');
    await expect.poll(() => selectedKey(page)).toBe(toolId);
    await page.keyboard.press('n');
    await expect.poll(() => cue.textContent()).toBe('No more failures after this row.');
    await page.keyboard.press('p');
    await expect.poll(() => cue.textContent()).toBe('No failures before this row.');
    expect(await selectedKey(page)).toBe(toolId);
    // A second press at the edge is told again: a status whose text stays the same says nothing, so
    // each press puts its words in anew (what a screen reader hears: the nodes the status gains).
    await page.evaluate(() => {
      const told: string[] = ((window as unknown as { told: string[] }).told = []);
      new MutationObserver((changes) => {
        for (const change of changes) for (const node of change.addedNodes) told.push(node.textContent ?? '');
      }).observe(document.querySelector('[data-testid=failure-edge]')!, { childList: true, subtree: true, characterData: true });
    });
    await page.keyboard.press('p');
    await page.keyboard.press('p');
    await expect.poll(() => page.evaluate(() => (window as unknown as { told: string[] }).told)).toEqual(['No failures before this row.', 'No failures before this row.']);
    await page.close();
  });

  it('shows a declared call under its model call when only the declaring run is loaded, though it ran in a resume', async () => {
    const { who, owner, worker, threadId } = await superadminThread(server.url, 'interrupted, resumed, then long');
    const first = await owner.createRun({ threadId });
    let lease = await worker.claimRun(first.id, 600);
    await worker.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'gpt-x' });
    const calls = [{ id: 'c1', name: 'read_file', args: {} }, { id: 'c2', name: 'write_file', args: {} }, { id: 'c3', name: 'run_sql', args: {} }];
    await worker.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', sequence: 2, toolCalls: calls });
    await worker.finishRun({ lease, status: 'INTERRUPTED' });
    const resume = await owner.createRun({ threadId, resumeFromRunId: first.id });
    lease = await worker.claimRun(resume.id, 600);
    await worker.recordToolStarted({ lease, toolCallId: 'c2', name: 'write_file', effectiveInput: {}, sequence: 1 });
    await worker.recordToolFinished({ lease, toolCallId: 'c2', output: { content: 'written', status: 'success' }, sequence: 2 });
    await worker.finishRun({ lease, status: 'COMPLETED' });
    // Newer entries than the page's first read holds: neither run above is loaded on opening.
    const long = await owner.createRun({ threadId });
    lease = await worker.claimRun(long.id, 600);
    await Promise.all(Array.from({ length: 510 }, (_, i) => worker.recordModelStarted({ lease, operationId: `m${i}`, sequence: i + 1, model: 'gpt-x' })));
    await worker.finishRun({ lease, status: 'COMPLETED' });

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, origin, who.owner);
    await openThread(page, origin, `#thread=${threadId}`);
    await page.getByRole('button', { name: 'Tool calls', exact: true }).click();
    // The never-run call opens under its model call: only the declaring run is read.
    await page.locator('[data-testid=ledger] tr[data-tool-call-id=c3] a').click();
    await expect.poll(() => page.locator('.row.selected').textContent()).toContain('run_sql (c3)');
    const written = page.locator('.row', { hasText: 'write_file (c2)' });
    await expect.poll(() => written.textContent()).toContain(`ran in resumed run 2 · ${resume.id.replace(/-/g, '').slice(-6)}`);
    expect(await written.getAttribute('data-status')).toBe('COMPLETED');
    // Its model call's run only (one entry) joined the newest 500.
    expect(await page.locator('[data-testid=loaded-count]').textContent()).toBe('501 entries loaded; older ones exist');
    await page.close();
  }, 180_000);
});
