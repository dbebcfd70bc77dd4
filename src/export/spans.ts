import { createHash } from 'node:crypto';
import { SpanKind, SpanStatusCode, TraceFlags, type Attributes, type HrTime, type Link, type SpanContext } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { Message, Run, ToolCall } from '../generated/prisma/client.js';
import { isRunEnded } from '../domain/runs.js';
import { answerTextOf, tokensOf } from '../shared/llm-payloads.js';
import type { AuditTimes, ExportBatch } from './queue.js';

/*
 * Runs and audits as OTLP spans, following the OpenTelemetry GenAI semantic conventions at
 * SEMCONV_VERSION (docs/export.md has the mapping table). Spans are built from stored rows with
 * their recorded times; every id is derived from a row id, so a span exported twice is the same
 * span and a receiver can drop the copy.
 */

export const SEMCONV_VERSION = '1.41.0';
export const SCHEMA_URL = `https://opentelemetry.io/schemas/${SEMCONV_VERSION}`;
/** The project namespace for what the conventions have no name for. */
const NS = 'agent_audit';
/** gen_ai.provider.name is required; a model audit whose input names no provider gets this custom value. */
const UNKNOWN_PROVIDER = NS;

/** The trace of a run: the run id's 16 bytes (a UUID), so a run's trace is found by its id. */
export const traceIdOf = (runId: string) => runId.replaceAll('-', '').toLowerCase();

/** A span id (8 bytes) derived from a row id: the same row always gives the same span id. */
export const spanIdOf = (kind: 'run' | 'audit', id: string) =>
  createHash('sha256').update(`${kind}:${id}`).digest('hex').slice(0, 16);

const contextOf = (traceId: string, spanId: string): SpanContext => ({ traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: false });
const runContext = (runId: string) => contextOf(traceIdOf(runId), spanIdOf('run', runId));

const hrTime = (date: Date): HrTime => {
  const ms = date.getTime();
  return [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
};
const hrDuration = (start: Date, end: Date): HrTime => {
  const ms = Math.max(0, end.getTime() - start.getTime());
  return [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
};

const json = (value: unknown) => JSON.stringify(value ?? null);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const stringField = (value: unknown, ...names: string[]) => {
  if (!isObject(value)) return undefined;
  for (const name of names) if (typeof value[name] === 'string' && value[name] !== '') return value[name];
  return undefined;
};

/** error.type: the stored error's own type or name when it has one (low cardinality), else `_OTHER` as the conventions say. */
const errorTypeOf = (error: unknown) => stringField(error, 'type', 'name', 'code') ?? '_OTHER';
const errorMessageOf = (error: unknown) => stringField(error, 'message') ?? (typeof error === 'string' ? error : json(error));

interface Failure {
  status: ReadableSpan['status'];
  attributes: Attributes;
  events: TimedEvent[];
}

/** A FAILED row is span status ERROR with error.type and an `exception` event; any other status is UNSET. */
function failureOf(status: string, error: unknown, at: Date): Failure {
  if (status !== 'FAILED') return { status: { code: SpanStatusCode.UNSET }, attributes: {}, events: [] };
  const message = errorMessageOf(error);
  return {
    status: { code: SpanStatusCode.ERROR, message },
    attributes: { 'error.type': errorTypeOf(error) },
    events: [{ name: 'exception', time: hrTime(at), attributes: { 'exception.type': errorTypeOf(error), 'exception.message': message } }],
  };
}

interface SpanParts {
  name: string;
  kind: SpanKind;
  context: SpanContext;
  parent?: SpanContext;
  start: Date;
  end: Date;
  attributes: Attributes;
  failure: Failure;
  links?: Link[];
}

function span(resource: Resource, parts: SpanParts): ReadableSpan {
  const end = parts.end < parts.start ? parts.start : parts.end;
  return {
    name: parts.name,
    kind: parts.kind,
    spanContext: () => parts.context,
    parentSpanContext: parts.parent,
    startTime: hrTime(parts.start),
    endTime: hrTime(end),
    duration: hrDuration(parts.start, end),
    status: parts.failure.status,
    attributes: { ...parts.attributes, ...parts.failure.attributes },
    links: parts.links ?? [],
    events: parts.failure.events,
    ended: true,
    resource,
    instrumentationScope: { name: 'agent-audit-server', schemaUrl: SCHEMA_URL },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

const earliest = (a: Date, b: Date | undefined) => (b && b < a ? b : a);
const latest = (a: Date, b: Date | undefined) => (b && b > a ? b : a);

/**
 * The run's root span: `invoke_agent`, linked to the run it resumes. It covers its audits' spans:
 * their times are the worker's clock (observedAt), the run's the database's (docs/operations.md
 * "Clocks"), and a back end draws a child outside its parent as broken.
 */
export function runSpan(resource: Resource, run: Run, audits?: AuditTimes): ReadableSpan {
  const end = run.finishedAt ?? run.changedAt ?? run.createdAt;
  return span(resource, {
    name: 'invoke_agent',
    kind: SpanKind.INTERNAL,
    context: runContext(run.id),
    start: earliest(run.startedAt ?? run.createdAt, audits?.firstStart),
    end: latest(end, audits?.lastEnd),
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': UNKNOWN_PROVIDER,
      'gen_ai.conversation.id': run.threadId,
      [`${NS}.run.id`]: run.id,
      [`${NS}.status`]: run.status,
      [`${NS}.run.lease_epoch`]: run.leaseEpoch,
      ...(run.resumedFromId ? { [`${NS}.run.resumed_from_id`]: run.resumedFromId } : {}),
    },
    failure: failureOf(run.status, run.error, end),
    links: run.resumedFromId ? [{ context: runContext(run.resumedFromId), attributes: { [`${NS}.link.type`]: 'resume' } }] : [],
  });
}

/** Usage tokens under the conventions' names, read by the one usage reader the page uses too. */
function usageAttributes(usage: unknown): Attributes {
  const tokens = tokensOf(usage);
  return tokens ? { 'gen_ai.usage.input_tokens': tokens.input, 'gen_ai.usage.output_tokens': tokens.output } : {};
}

/** A model audit: `chat {model}`, its declared tool calls as `tool_call` parts of gen_ai.output.messages. */
export function modelSpan(resource: Resource, audit: Message, declared: ToolCall[]): ReadableSpan {
  const end = audit.finishedAt ?? audit.changedAt ?? audit.createdAt;
  const text = answerTextOf(audit.output);
  const finishReason = declared.length > 0 ? 'tool_call' : audit.status === 'FAILED' ? 'error' : 'stop';
  const outputMessages = [
    {
      role: 'assistant',
      parts: [
        ...(text !== undefined ? [{ type: 'text', content: text }] : []),
        ...declared.map((call) => ({ type: 'tool_call', id: call.toolCallId, name: call.name, arguments: call.declaredInput ?? null })),
      ],
      finish_reason: finishReason,
    },
  ];
  return span(resource, {
    name: audit.name ? `chat ${audit.name}` : 'chat',
    kind: SpanKind.CLIENT,
    context: contextOf(traceIdOf(audit.runId!), spanIdOf('audit', audit.id)),
    parent: runContext(audit.runId!),
    start: audit.startedAt ?? audit.createdAt,
    end,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': stringField(audit.input, 'provider') ?? UNKNOWN_PROVIDER,
      'gen_ai.conversation.id': audit.threadId,
      ...(audit.name ? { 'gen_ai.request.model': audit.name } : {}),
      ...(stringField(audit.output, 'model') ? { 'gen_ai.response.model': stringField(audit.output, 'model') } : {}),
      'gen_ai.response.finish_reasons': [declared.length > 0 ? 'tool_calls' : finishReason],
      'gen_ai.output.messages': json(outputMessages),
      ...usageAttributes(audit.usage),
      [`${NS}.run.id`]: audit.runId!,
      [`${NS}.audit.id`]: audit.id,
      [`${NS}.operation_id`]: audit.operationId ?? '',
      [`${NS}.status`]: audit.status ?? '',
      ...(audit.input !== null ? { [`${NS}.model.input`]: json(audit.input) } : {}),
      ...(audit.output !== null ? { [`${NS}.model.output`]: json(audit.output) } : {}),
    },
    failure: failureOf(audit.status ?? '', audit.error, end),
  });
}

/** A tool audit's result: the envelope's content (what the tool returned), else the whole envelope. */
const resultOf = (output: unknown) => (isObject(output) && 'content' in output ? output.content : output);

/** A tool audit: `execute_tool {name}` with the effective arguments, and the declared ones beside them. */
export function toolSpan(resource: Resource, audit: Message, declaration: ToolCall | undefined): ReadableSpan {
  const end = audit.finishedAt ?? audit.changedAt ?? audit.createdAt;
  return span(resource, {
    name: `execute_tool ${audit.name ?? ''}`.trim(),
    kind: SpanKind.INTERNAL,
    context: contextOf(traceIdOf(audit.runId!), spanIdOf('audit', audit.id)),
    parent: runContext(audit.runId!),
    start: audit.startedAt ?? audit.createdAt,
    end,
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.conversation.id': audit.threadId,
      'gen_ai.tool.call.id': audit.operationId ?? '',
      'gen_ai.tool.name': audit.name ?? '',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.arguments': json(audit.input),
      ...(audit.status === 'COMPLETED' ? { 'gen_ai.tool.call.result': json(resultOf(audit.output)) } : {}),
      [`${NS}.run.id`]: audit.runId!,
      [`${NS}.audit.id`]: audit.id,
      [`${NS}.status`]: audit.status ?? '',
      ...(declaration ? { [`${NS}.tool.call.declared_arguments`]: json(declaration.declaredInput) } : {}),
      ...(declaration && declaration.runId !== audit.runId ? { [`${NS}.tool.call.declared_in_run_id`]: declaration.runId } : {}),
    },
    failure: failureOf(audit.status ?? '', audit.error, end),
  });
}

/** The spans of a batch: every ended run and audit, each thread's in cursor (commit) order, with each one's commit time and cursor. */
export function spansOf(resource: Resource, batch: ExportBatch): { spans: ReadableSpan[]; changedAt: Date[]; cursors: bigint[] } {
  const spans: ReadableSpan[] = [];
  const changedAt: Date[] = [];
  const cursors: bigint[] = [];
  for (const thread of batch.threads) {
    const rows = [
      ...thread.runs.map((row) => ({ cursor: row.changeCursor!, run: row, audit: undefined })),
      ...thread.audits.map((row) => ({ cursor: row.changeCursor!, run: undefined, audit: row })),
    ].sort((a, b) => (a.cursor < b.cursor ? -1 : a.cursor > b.cursor ? 1 : 0));
    for (const { cursor, run, audit } of rows) {
      if (run && isRunEnded(run.status)) {
        spans.push(runSpan(resource, run, batch.auditTimes.get(run.id)));
        changedAt.push(run.changedAt!);
        cursors.push(cursor);
      } else if (audit && audit.status !== null && audit.status !== 'RUNNING' && audit.runId) {
        spans.push(
          audit.messageType === 'model_audit'
            ? modelSpan(resource, audit, batch.declaredBy.get(audit.id) ?? [])
            : toolSpan(resource, audit, audit.toolCallRowId ? batch.toolCalls.get(audit.toolCallRowId) : undefined),
        );
        changedAt.push(audit.changedAt!);
        cursors.push(cursor);
      }
    }
  }
  return { spans, changedAt, cursors };
}
