// A worker pool shutting down (SIGTERM) stops its runs mid-tool to hand them over: aborted with a
// RunInterruption, a recorded run ends INTERRUPTED (its running tool INTERRUPTED, its call PENDING
// again for the resume), where a user's stop (any other abort reason) ends it CANCELLED. With the
// server out of reach, the hand-back is bounded by the grace period's signal (CallOptions), so that
// the worker exits before SIGKILL and the lease's expiry ends the run.
import { tool as langChainTool } from '@langchain/core/tools';
import { stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AuditClient, RunInterruption, type ThreadAuditItem, type ToolAuditWithLinks } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { LangGraphAudit } from '@agent-audit/client/langgraph';
import { callTool, scriptedModel, turn } from '../../src/cli/ai-sdk-agent.js';
import * as langgraphAgent from '../../src/cli/langgraph-agent.js';
import { e2eActors, serverForFile } from './support/server.js';
import { proxyForFile } from './support/tcp-proxy.js';
import { withTimeout } from './support/wait.js';

const server = serverForFile();
const through = proxyForFile(server);

/** An AI SDK tool that runs until its call is aborted, calling `toolRunning` once it runs. */
const longJob = (toolRunning: () => void) => ({
  long_job: tool({
    inputSchema: z.object({}),
    execute: (_input, { abortSignal }) =>
      new Promise<string>((_resolve, reject) => {
        abortSignal?.addEventListener('abort', () => reject(abortSignal.reason));
        toolRunning();
      }),
  }),
});

async function stopMidTool(reason: unknown) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title: 'shutdown mid-tool' });
  const { id: runId } = await owner.createRun({ threadId });
  const pool = new AbortController();
  let toolRunning!: () => void;
  const running = new Promise<void>((resolve) => (toolRunning = resolve));
  const tools = longJob(toolRunning);
  const call = callTool('long_job', {});
  const done = new AiSdkAudit(worker).generateText(runId, { model: scriptedModel([turn('Working.', [call])]), tools, prompt: 'Go.', abortSignal: pool.signal, stopWhen: stepCountIs(2) });
  const outcome = done.then(() => 'resolved', (error: unknown) => error);
  await running;
  // The tool's start is on the server before the stop.
  await expect.poll(async () => (await owner.threadAudits(threadId)).items.some((item) => item.__typename === 'ToolAudit')).toBe(true);
  pool.abort(reason);
  expect(await outcome).not.toBe('resolved');
  const run = (await owner.run(runId))!;
  const [toolAudit] = (await owner.threadAudits(threadId)).items.filter((item: ThreadAuditItem): item is ToolAuditWithLinks => item.__typename === 'ToolAudit');
  return { status: run.status, tool: toolAudit!.status, call: toolAudit!.toolCall.status };
}

describe('a worker pool stopping its runs', () => {
  it('a shutdown (abort with a RunInterruption) ends the run INTERRUPTED, its tool call PENDING for the resume', async () => {
    expect(await stopMidTool(new RunInterruption('SIGTERM'))).toEqual({ status: 'INTERRUPTED', tool: 'INTERRUPTED', call: 'PENDING' });
  });

  it('a user\'s stop (any other reason) still ends it CANCELLED', async () => {
    expect(await stopMidTool(new Error('the user pressed Stop'))).toMatchObject({ status: 'CANCELLED' });
  });
});

/**
 * A run recorded through a worker behind the proxy, its lease LEASE_SECONDS, stopped mid-tool by a shutdown
 * (`pool` aborted with a RunInterruption) while the server does not answer (the proxy stalled);
 * the grace period (`grace`) runs out a moment later. `start` runs the agent with both signals.
 */
async function stopMidToolOutOfReach(start: (run: { worker: AuditClient; runId: string; threadId: string; pool: AbortSignal; grace: AbortSignal; toolRunning: () => void }) => Promise<unknown>) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: through.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title: 'shutdown out of reach' });
  const { id: runId } = await owner.createRun({ threadId });
  const [pool, grace] = [new AbortController(), new AbortController()];
  let toolRunning!: () => void;
  const running = new Promise<void>((resolve) => (toolRunning = resolve));
  const outcome = start({ worker, runId, threadId, pool: pool.signal, grace: grace.signal, toolRunning }).then(() => 'resolved', (error: unknown) => error);
  await running;
  await expect.poll(async () => (await owner.threadAudits(threadId)).items.some((item) => item.__typename === 'ToolAudit')).toBe(true);
  const overdue = new Error('grace period over');
  through.proxy.stall();
  try {
    pool.abort(new RunInterruption('SIGTERM'));
    setTimeout(() => grace.abort(overdue), 500);
    expect(await withTimeout(outcome, 20_000, () => 'the run\'s end was not given up when the grace period ran out')).toBe(overdue);
    await withTimeout(worker.close({ signal: grace.signal }).catch(() => undefined), 5_000, () => 'close({ signal }) did not give up');
  } finally {
    await through.proxy.close();
    await through.proxy.up();
  }
  // Nothing renews the lease any more: its expiry ends the run, the running tool ABANDONED.
  await expect.poll(async () => (await owner.run(runId))!.status, { timeout: 30_000, interval: 200 }).not.toBe('RUNNING');
  const run = (await owner.run(runId))!;
  const [toolAudit] = (await owner.threadAudits(threadId)).items.filter((item: ThreadAuditItem): item is ToolAuditWithLinks => item.__typename === 'ToolAudit');
  return { status: run.status, error: run.error, tool: toolAudit!.status, call: toolAudit!.toolCall.status };
}

const LEASE_EXPIRED = { status: 'FAILED', error: { code: 'LEASE_EXPIRED' }, tool: 'ABANDONED', call: 'FAILED' };
/**
 * Short, as the stop waits for its expiry, yet renewed every 3.3 s with 6.7 s to commit before it
 * expires: a loaded machine let a 2 s lease expire before the stop (a renewal has 1.3 s there).
 */
const LEASE_SECONDS = 10;

describe('a worker pool stopping its runs while the server does not answer', { timeout: 90_000 }, () => {
  it('AI SDK: generateText settles when the grace period\'s signal aborts; the lease expiry ends the run', async () => {
    const ended = await stopMidToolOutOfReach(({ worker, runId, pool, grace, toolRunning }) => {
      const tools = longJob(toolRunning);
      const model = scriptedModel([turn('Working.', [callTool('long_job', {})])]);
      return new AiSdkAudit(worker, { leaseSeconds: LEASE_SECONDS }).generateText(runId, { model, tools, prompt: 'Go.', abortSignal: pool, stopWhen: stepCountIs(2) }, { signal: grace });
    });
    expect(ended).toMatchObject(LEASE_EXPIRED);
  });

  it('AI SDK: streamText\'s finished settles when the grace period\'s signal aborts; the lease expiry ends the run', async () => {
    const ended = await stopMidToolOutOfReach(async ({ worker, runId, pool, grace, toolRunning }) => {
      const tools = longJob(toolRunning);
      const model = scriptedModel([turn('Working.', [callTool('long_job', {})])]);
      const { result, finished } = await new AiSdkAudit(worker, { leaseSeconds: LEASE_SECONDS }).streamText(
        runId,
        { model, tools, prompt: 'Go.', abortSignal: pool, stopWhen: stepCountIs(2), onError: () => {} },
        { signal: grace },
      );
      await result.consumeStream();
      return finished;
    });
    expect(ended).toMatchObject(LEASE_EXPIRED);
  });

  it('LangGraph: invoke settles when the grace period\'s signal aborts; the lease expiry ends the run', async () => {
    const ended = await stopMidToolOutOfReach(({ worker, runId, threadId, pool, grace, toolRunning }) => {
      const longJob = langChainTool(
        (_args, config) =>
          new Promise<string>((_resolve, reject) => {
            config?.signal?.addEventListener('abort', () => reject(config.signal!.reason));
            toolRunning();
          }),
        { name: 'long_job', description: 'Runs until the invocation is aborted.', schema: z.object({}) },
      );
      const graph = langgraphAgent.buildReactAgent([langgraphAgent.turn('Working.', [langgraphAgent.callTool('long_job', {})]), langgraphAgent.turn('Never reached.')], { tools: [longJob] });
      const input = { messages: [{ role: 'user', content: 'Go.' }] };
      return new LangGraphAudit(worker, { leaseSeconds: LEASE_SECONDS }).invoke(runId, graph, input, { configurable: { thread_id: threadId }, signal: pool }, { signal: grace });
    });
    expect(ended).toMatchObject(LEASE_EXPIRED);
  });
});
