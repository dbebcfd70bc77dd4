import { randomUUID } from 'node:crypto';
import type { AuditStatus, ToolCallStatus } from '../../src/generated/prisma/client.js';
import type { TestApp } from '../support/app.js';

type Prisma = TestApp['app']['db']['prisma'];

/** A finished run written straight into the table (test data setup). */
export async function insertRun(prisma: Prisma, threadId: string, resumedFromId: string | null = null): Promise<string> {
  const run = await prisma.run.create({
    data: { threadId, status: 'COMPLETED', resumedFromId, startedAt: new Date(), finishedAt: new Date() },
  });
  return run.id;
}

/**
 * Test data setup: `count` audits in one run, written straight into the tables as the lifecycle
 * writes them, so a test can hold hundreds of them without hundreds of mutations. They alternate:
 * a model audit declaring one tool call, then that call's tool audit; sequences run from
 * `firstSequence` up. Returns the audit ids in sequence order.
 */
export async function insertAudits(
  prisma: Prisma,
  options: { threadId: string; runId: string; count: number; firstSequence?: number },
): Promise<string[]> {
  const { threadId, runId, count } = options;
  const first = options.firstSequence ?? 1;
  const at = new Date();
  const audits = [];
  const toolCalls = [];
  for (let i = 0; i < count; i += 2) {
    const sequence = first + i;
    const modelId = randomUUID();
    const toolCallRowId = randomUUID();
    const toolCallId = `call-${sequence}`;
    const ran = i + 1 < count;
    const completed = { status: 'COMPLETED' as AuditStatus, startedAt: at, finishedAt: at };
    audits.push({
      id: modelId, threadId, runId, role: 'ASSISTANT' as const, messageType: 'model_audit' as const,
      operationId: `model-${sequence}`, name: 'test-model', sequence: BigInt(sequence), input: { turn: sequence }, ...completed,
    });
    toolCalls.push({
      id: toolCallRowId, threadId, runId, declaredById: modelId, position: 0, toolCallId, name: 'search',
      declaredInput: { q: sequence },
      ...(ran
        ? { status: 'COMPLETED' as ToolCallStatus, effectiveInput: { q: sequence }, output: `found ${sequence}`, startedAt: at, finishedAt: at }
        : {}),
    });
    if (ran) {
      audits.push({
        id: randomUUID(), threadId, runId, role: 'TOOL' as const, messageType: 'tool_audit' as const,
        operationId: toolCallId, name: 'search', sequence: BigInt(sequence + 1), input: { q: sequence },
        output: { content: `found ${sequence}`, status: 'success', id: `msg-${sequence}`, artifact: { raw: sequence } },
        toolCallRowId, ...completed,
      });
    }
  }
  // Model audits, then the calls they declare, then the tool audits bound to those calls.
  await prisma.message.createMany({ data: audits.filter((audit) => audit.role === 'ASSISTANT') });
  await prisma.toolCall.createMany({ data: toolCalls });
  await prisma.message.createMany({ data: audits.filter((audit) => audit.role === 'TOOL') });
  return audits.map((audit) => audit.id);
}
