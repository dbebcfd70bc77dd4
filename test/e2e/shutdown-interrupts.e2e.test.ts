// A worker pool shutting down (SIGTERM) stops its runs mid-tool to hand them over: aborted with a
// RunInterruption, a recorded run ends INTERRUPTED (its running tool INTERRUPTED, its call PENDING
// again for the resume), where a user's stop (any other abort reason) ends it CANCELLED.
import { stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AuditClient, RunInterruption, type ThreadAuditItem, type ToolAuditWithLinks } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { callTool, scriptedModel, turn } from '../../src/cli/ai-sdk-agent.js';
import { e2eActors, serverForFile } from './support/server.js';

const server = serverForFile();

async function stopMidTool(reason: unknown) {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker });
  const { id: threadId } = await owner.createThread({ title: 'shutdown mid-tool' });
  const { id: runId } = await owner.createRun({ threadId });
  const pool = new AbortController();
  let toolRunning!: () => void;
  const running = new Promise<void>((resolve) => (toolRunning = resolve));
  const tools = {
    long_job: tool({
      inputSchema: z.object({}),
      execute: (_input, { abortSignal }) =>
        new Promise<string>((_resolve, reject) => {
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason));
          toolRunning();
        }),
    }),
  };
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
