import type { TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type WorkerSession } from '../support/lifecycle.js';
import type { ReceivedSpan } from '../support/otlp-receiver.js';

/*
 * Runs recorded through the API for the export tests, and what their spans must say, derived from
 * the same runs read back through the API (docs/export.md, "Mapping").
 */

const READ = `query($id: ID!) {
  thread(id: $id) { id runs { id status createdAt startedAt finishedAt error leaseEpoch leaseOwner resumedFrom { id } } }
  threadAudits(threadId: $id) { items {
    __typename id runId status startedAt finishedAt operationId
    ... on ModelAudit { model input output error usage toolCalls { toolCallId name declaredInput } }
    ... on ToolAudit { toolCallId name effectiveInput output error toolCall { declaredInput } }
  } }
}`;

async function gqlOk(t: TestApp, token: string, query: string, variables: Record<string, unknown>) {
  const response = await t.gql(query, variables, token);
  if (response.errors?.length) throw new Error(JSON.stringify(response.errors));
  return response.data;
}

async function newRun(t: TestApp, who: Awaited<ReturnType<typeof actors>>) {
  const threadId = await createThread(t, who.owner, 'export');
  const runId = await createRun(t, who.owner, threadId);
  return { who, threadId, runId, session: await claim(t, who.worker, runId) };
}

async function modelCall(session: WorkerSession, operationId: string, model: string, tools: { id: string; name: string; args?: unknown }[]) {
  must(await session.modelStarted(operationId, { model, input: { messages: [{ role: 'user', content: 'hi' }] } }));
  must(
    await session.modelFinished(operationId, tools, {
      output: { content: tools.length ? 'calling tools' : 'done' },
      usage: { input_tokens: 12, output_tokens: 7 },
    }),
  );
}

/** The five runs of the issue, each in its own thread: normal, tool error, cancel mid-tool, interrupt then resume, parallel tools. */
export async function recordScenarios(t: TestApp): Promise<{ threadIds: string[]; owner: string }> {
  const threadIds: string[] = [];
  const who = await actors(t);
  const owner = who.owner;

  const normal = await newRun(t, who);
  await modelCall(normal.session, 'm1', 'gpt-test', [{ id: 'call-1', name: 'search', args: { q: 'declared' } }]);
  must(await normal.session.toolStarted('call-1', 'search', { effectiveInput: { q: 'effective' } }));
  must(await normal.session.toolFinished('call-1', { content: 'found it', status: 'success' }));
  await modelCall(normal.session, 'm2', 'gpt-test', []);
  must(await normal.session.finish('COMPLETED'));
  threadIds.push(normal.threadId);

  const failing = await newRun(t, who);
  await modelCall(failing.session, 'm1', 'gpt-test', [{ id: 'call-x', name: 'divide', args: { by: 0 } }]);
  must(await failing.session.toolStarted('call-x', 'divide', { effectiveInput: { by: 0 } }));
  must(await failing.session.toolFinished('call-x', { content: 'division by zero', status: 'error' }));
  must(await failing.session.finish('FAILED', { error: { type: 'AgentError', message: 'gave up' } }));
  threadIds.push(failing.threadId);

  const cancelled = await newRun(t, who);
  await modelCall(cancelled.session, 'm1', 'gpt-test', [{ id: 'call-slow', name: 'sleep', args: { s: 60 } }]);
  must(await cancelled.session.toolStarted('call-slow', 'sleep', { effectiveInput: { s: 60 } }));
  await gqlOk(t, cancelled.who.owner, 'mutation($id: ID!) { cancelRun(runId: $id) { id } }', { id: cancelled.runId });
  threadIds.push(cancelled.threadId);

  const first = await newRun(t, who);
  await modelCall(first.session, 'm1', 'gpt-test', [{ id: 'call-approve', name: 'approve', args: { amount: 5 } }]);
  must(await first.session.finish('INTERRUPTED'));
  const resumedId = await createRun(t, first.who.owner, first.threadId, first.runId);
  const resumed = await claim(t, first.who.worker, resumedId);
  must(await resumed.toolStarted('call-approve', 'approve', { effectiveInput: { amount: 5, approved: true } }));
  must(await resumed.toolFinished('call-approve', { content: 'approved', status: 'success' }));
  must(await resumed.finish('COMPLETED'));
  threadIds.push(first.threadId);

  const parallel = await newRun(t, who);
  await modelCall(parallel.session, 'm1', 'gpt-test', [
    { id: 'call-a', name: 'weather', args: { city: 'Oslo' } },
    { id: 'call-b', name: 'weather', args: { city: 'Lima' } },
  ]);
  must(await parallel.session.toolStarted('call-a', 'weather', { effectiveInput: { city: 'Oslo' } }));
  must(await parallel.session.toolStarted('call-b', 'weather', { effectiveInput: { city: 'Lima' } }));
  must(await parallel.session.toolFinished('call-b', { content: 'warm', status: 'success' }));
  must(await parallel.session.toolFinished('call-a', { content: 'cold', status: 'success' }));
  must(await parallel.session.finish('COMPLETED'));
  threadIds.push(parallel.threadId);

  return { threadIds, owner };
}

/** A span as the mapping says it must be, from a run or audit read through the API. */
export interface ExpectedSpan {
  key: string;
  traceId: string;
  name: string;
  kind: number;
  parentRunId: string | null;
  start: string;
  end: string;
  attributes: Record<string, unknown>;
  jsonAttributes: Record<string, unknown>;
  error: boolean;
  linkToRunId: string | null;
}

const hex = (uuid: string) => uuid.replaceAll('-', '');
const ENDED_RUN = ['COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED'];

function coveringAudits(start: string, end: string, audits: { startedAt: string | null; finishedAt: string | null }[]) {
  const at = (time: string) => new Date(time).getTime();
  for (const audit of audits) {
    if (audit.startedAt && at(audit.startedAt) < at(start)) start = audit.startedAt;
    if (audit.finishedAt && at(audit.finishedAt) > at(end)) end = audit.finishedAt;
  }
  return { start, end };
}

/** Every span the threads' ended runs and audits must be exported as. */
export async function expectedSpans(t: TestApp, token: string, threadIds: string[]): Promise<ExpectedSpan[]> {
  const expected: ExpectedSpan[] = [];
  for (const threadId of threadIds) {
    const data = await gqlOk(t, token, READ, { id: threadId });
    for (const run of data.thread.runs) {
      if (!ENDED_RUN.includes(run.status)) continue;
      expected.push({
        key: `run:${run.id}`,
        traceId: hex(run.id),
        name: 'invoke_agent',
        kind: 1,
        parentRunId: null,
        // The root span covers its audits' spans, whose times are the worker's clock.
        ...coveringAudits(run.startedAt ?? run.createdAt, run.finishedAt, data.threadAudits.items.filter((audit: { runId: string }) => audit.runId === run.id)),
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.provider.name': 'agent_audit',
          'gen_ai.conversation.id': threadId,
          'agent_audit.run.id': run.id,
          'agent_audit.status': run.status,
          'agent_audit.run.lease_epoch': run.leaseEpoch,
          ...(run.resumedFrom ? { 'agent_audit.run.resumed_from_id': run.resumedFrom.id } : {}),
          ...(run.status === 'FAILED' ? { 'error.type': run.error?.type ?? '_OTHER' } : {}),
        },
        jsonAttributes: {},
        error: run.status === 'FAILED',
        linkToRunId: run.resumedFrom?.id ?? null,
      });
    }
    for (const audit of data.threadAudits.items) {
      if (audit.status === 'RUNNING') continue;
      const common = {
        'gen_ai.conversation.id': threadId,
        'agent_audit.run.id': audit.runId,
        'agent_audit.audit.id': audit.id,
        'agent_audit.status': audit.status,
        ...(audit.status === 'FAILED' ? { 'error.type': audit.error?.type ?? '_OTHER' } : {}),
      };
      if (audit.__typename === 'ModelAudit') {
        const calls = audit.toolCalls.map((call: any) => ({ type: 'tool_call', id: call.toolCallId, name: call.name, arguments: call.declaredInput }));
        expected.push({
          key: `audit:${audit.id}`,
          traceId: hex(audit.runId),
          name: `chat ${audit.model}`,
          kind: 3,
          parentRunId: audit.runId,
          start: audit.startedAt,
          end: audit.finishedAt,
          attributes: {
            ...common,
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': 'agent_audit',
            'gen_ai.request.model': audit.model,
            'gen_ai.response.finish_reasons': [calls.length ? 'tool_calls' : 'stop'],
            'gen_ai.usage.input_tokens': audit.usage.input_tokens,
            'gen_ai.usage.output_tokens': audit.usage.output_tokens,
            'agent_audit.operation_id': audit.operationId,
          },
          jsonAttributes: {
            'gen_ai.output.messages': [
              {
                role: 'assistant',
                parts: [{ type: 'text', content: audit.output.content }, ...calls],
                finish_reason: calls.length ? 'tool_call' : 'stop',
              },
            ],
            'agent_audit.model.input': audit.input,
            'agent_audit.model.output': audit.output,
          },
          error: audit.status === 'FAILED',
          linkToRunId: null,
        });
      } else {
        expected.push({
          key: `audit:${audit.id}`,
          traceId: hex(audit.runId),
          name: `execute_tool ${audit.name}`,
          kind: 1,
          parentRunId: audit.runId,
          start: audit.startedAt,
          end: audit.finishedAt,
          attributes: {
            ...common,
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.call.id': audit.toolCallId,
            'gen_ai.tool.name': audit.name,
            'gen_ai.tool.type': 'function',
          },
          jsonAttributes: {
            'gen_ai.tool.call.arguments': audit.effectiveInput,
            'gen_ai.tool.call.result': audit.status === 'COMPLETED' ? audit.output.content : undefined,
            'agent_audit.tool.call.declared_arguments': audit.toolCall.declaredInput,
          },
          error: audit.status === 'FAILED',
          linkToRunId: null,
        });
      }
    }
  }
  return expected;
}

/** The received span of a run or audit (`run:<id>` / `audit:<id>`). */
export const keyOf = (span: ReceivedSpan) =>
  span.name === 'invoke_agent' ? `run:${span.attributes['agent_audit.run.id']}` : `audit:${span.attributes['agent_audit.audit.id']}`;

/** All received copies of each span, by key. */
export function byKey(spans: ReceivedSpan[]): Map<string, ReceivedSpan[]> {
  const map = new Map<string, ReceivedSpan[]>();
  for (const span of spans) map.set(keyOf(span), [...(map.get(keyOf(span)) ?? []), span]);
  return map;
}

export const hasAll = (expected: ExpectedSpan[]) => (spans: ReceivedSpan[]) => {
  const received = byKey(spans);
  return expected.every((span) => received.has(span.key));
};

export const nanos = (iso: string) => BigInt(Date.parse(iso)) * 1_000_000n;
