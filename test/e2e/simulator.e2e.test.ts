// `npm run simulate` against the server process: every scenario runs, checks what it reads
// back, and a dashboard subscribed to the thread sees each audit reach its final state.
import { afterAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { LiveConnection, firstDelivered } from './support/live.js';
import { e2eActors, runScript, serverForFile } from './support/server.js';

const server = serverForFile();
let live: LiveConnection | undefined;

afterAll(async () => {
  await live?.close();
});

/** `npm run simulate` into `threadId` as `who`, instantly (no pause between steps). */
const simulate = (threadId: string, who: Awaited<ReturnType<typeof e2eActors>>, ...flags: string[]) =>
  runScript('src/cli/simulate.ts', [
    ...flags,
    '--url', server.url,
    '--thread', threadId,
    '--step-ms', '0',
    '--owner-token', who.owner,
    '--worker-token', who.worker,
  ]);

describe(`the simulator against the server process (${backendName})`, () => {
  it('runs every scenario into a watched thread; the live stream ends where threadAudits does', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'watched by a dashboard' });
    live = await LiveConnection.open(server.wsUrl, who.owner);
    const audits = live.subscribe<{ id: string; status: string }>(
      `subscription ($threadId: ID!) { auditChanged(threadId: $threadId) { id status } }`,
      { threadId },
    );
    const runs = live.subscribe<{ id: string }>(`subscription ($threadId: ID!) { runChanged(threadId: $threadId) { id } }`, { threadId });
    const probe = await firstDelivered(
      runs,
      async () => (await owner.createRun({ threadId })).id,
      (id) => owner.cancelRun(id),
    );
    await owner.cancelRun(probe);

    const { code, output } = await simulate(threadId, who);
    expect(code, output).toBe(0);
    expect(output).toContain('6 of 6 scenarios completed as expected.');
    expect(output).toContain(`--thread ${threadId}`);

    const { items, truncated } = await owner.threadAudits(threadId);
    expect(truncated).toBe(false);
    // normal 3, tool error 3, cancel 2, interrupt and resume 4, parallel 5, large output 3.
    expect(items).toHaveLength(20);
    const lastStatus = (id: string) => audits.events.filter((event) => event.id === id).at(-1)?.status;
    await audits.waitUntil(() => items.every((item) => lastStatus(item.id) === item.status));
  }, 180_000);

  it('--langgraph records a real LangGraph.js agent through the adapter, every scenario as expected', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'LangGraph runs' });

    const { code, output } = await simulate(threadId, who, '--langgraph');
    expect(code, output).toBe(0);
    expect(output).toContain('4 of 4 scenarios completed as expected.');

    const { items } = await owner.threadAudits(threadId);
    // parallel 4, tool errors 4, interrupt and resume 4, large output 3.
    expect(items.map((item) => item.status)).toEqual([
      ...['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'],
      ...['COMPLETED', 'FAILED', 'FAILED', 'COMPLETED'],
      ...['COMPLETED', 'INTERRUPTED', 'COMPLETED', 'COMPLETED'],
      ...['COMPLETED', 'COMPLETED', 'COMPLETED'],
    ]);
    expect(new Set(items.map((item) => (item.__typename === 'ModelAudit' ? item.model : item.name)))).toEqual(
      new Set(['ScriptedChatModel', 'get_weather', 'lookup_invoice', 'send_email', 'pay_invoice', 'read_log']),
    );
  }, 180_000);

  it('--ai-sdk records a Vercel AI SDK agent through the adapter, every scenario as expected', async () => {
    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'AI SDK runs' });

    const { code, output } = await simulate(threadId, who, '--ai-sdk');
    expect(code, output).toBe(0);
    expect(output).toContain('4 of 4 scenarios completed as expected.');

    const { items } = await owner.threadAudits(threadId);
    // parallel 4, streamed steps 5, tool error 3, large output 3.
    expect(items.map((item) => item.status)).toEqual([
      ...['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'],
      ...['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'],
      ...['COMPLETED', 'FAILED', 'COMPLETED'],
      ...['COMPLETED', 'COMPLETED', 'COMPLETED'],
    ]);
    expect(new Set(items.map((item) => (item.__typename === 'ModelAudit' ? item.model : item.name)))).toEqual(
      new Set(['scripted-model', 'get_weather', 'send_email', 'read_log']),
    );
  }, 180_000);
});
