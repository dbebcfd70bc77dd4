import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { actors, claim, createRun, createThread, must } from '../support/lifecycle.js';
import { byKey, expectedSpans, hasAll, nanos, recordScenarios, type ExpectedSpan } from './scenarios.js';

/*
 * The OpenTelemetry export (docs/export.md) end to end: runs recorded through the API reach an
 * OTLP receiver as GenAI spans, checked attribute by attribute against the same runs read back
 * through the API, over both OTLP/HTTP encodings.
 */

const versionOf = (url: URL) => (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
/** What the official exporters send (`OTel-OTLP-Exporter-JavaScript/<version>`), after this server's own product token. */
const USER_AGENT = `agent-audit-server/${versionOf(new URL('../../package.json', import.meta.url))} OTel-OTLP-Exporter-JavaScript/${versionOf(
  new URL('../../package.json', pathToFileURL(createRequire(import.meta.url).resolve('@opentelemetry/otlp-exporter-base'))),
)}`;

function expectSpan(span: ReceivedSpan, expected: ExpectedSpan, runSpanIds: Map<string, string>) {
  expect(span.traceId).toBe(expected.traceId);
  expect(span.name).toBe(expected.name);
  expect(span.kind).toBe(expected.kind);
  expect(span.parentSpanId).toBe(expected.parentRunId ? runSpanIds.get(expected.parentRunId) : '');
  expect(span.startTimeUnixNano).toBe(nanos(expected.start));
  expect(span.endTimeUnixNano).toBe(nanos(expected.end));
  for (const [name, value] of Object.entries(expected.attributes)) expect([name, span.attributes[name]]).toEqual([name, value]);
  for (const [name, value] of Object.entries(expected.jsonAttributes)) {
    const text = span.attributes[name];
    expect([name, text === undefined ? undefined : JSON.parse(text as string)]).toEqual([name, value]);
  }
  expect(span.status.code).toBe(expected.error ? 2 : 0);
  if (expected.error) expect(span.events.map((event) => event.name)).toContain('exception');
  else expect(span.attributes['error.type']).toBeUndefined();
  if (expected.linkToRunId) {
    expect(span.links).toEqual([
      { traceId: expected.linkToRunId.replaceAll('-', ''), spanId: runSpanIds.get(expected.linkToRunId), attributes: { 'agent_audit.link.type': 'resume' } },
    ]);
  } else {
    expect(span.links).toEqual([]);
  }
  expect(span.resource['service.name']).toBe('audit-under-test');
}

describe.each(['http/protobuf', 'http/json'])(`OTLP export over %s (${backendName})`, (protocol) => {
  let receiver: OtlpReceiver;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Basic%20dGVzdDp0ZXN0,x-langfuse-ingestion-version=4',
      OTEL_SERVICE_NAME: 'audit-under-test',
      EXPORT_POLL_MS: '50',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('sends every ended run and audit as a GenAI span, attribute by attribute as recorded', { timeout: 120_000 }, async () => {
    const { threadIds, owner } = await recordScenarios(t);
    const expected = await expectedSpans(t, owner, threadIds);
    // normal 4, tool error 3, cancel mid-tool 3, interrupt then resume 4, parallel tools 4
    expect(expected).toHaveLength(18);
    await receiver.waitFor(hasAll(expected));

    const received = byKey(receiver.spans);
    const runSpanIds = new Map<string, string>();
    for (const span of receiver.spans) if (span.name === 'invoke_agent') runSpanIds.set(span.attributes['agent_audit.run.id'] as string, span.spanId);
    for (const span of expected) {
      const copies = received.get(span.key)!;
      for (const copy of copies) expectSpan(copy, span, runSpanIds);
    }
    // Only ended runs and audits leave, each once here (the receiver never failed).
    expect(receiver.spans).toHaveLength(expected.length);
    expect(new Set(receiver.spans.map((span) => span.contentType.split(';')[0]))).toEqual(
      new Set([protocol === 'http/json' ? 'application/json' : 'application/x-protobuf']),
    );
    expect(receiver.requests[0]!.path).toBe('/v1/traces');
    expect(receiver.requests[0]!.headers.authorization).toBe('Basic dGVzdDp0ZXN0');
    expect(receiver.requests[0]!.headers['x-langfuse-ingestion-version']).toBe('4');
    // The OTLP exporter specification: a User-Agent naming the exporter, its language and version.
    expect(receiver.requests[0]!.headers['user-agent']).toBe(USER_AGENT);
  });

  // The AI SDK adapter (packages/client/src/ai-sdk) records content parts and AI SDK 5+'s nested
  // usage; the export reads them with the page's reader (src/shared/llm-payloads.ts).
  it('gives an AI SDK model call its gen_ai.usage.* and its answer text', { timeout: 60_000 }, async () => {
    const who = await actors(t);
    const threadId = await createThread(t, who.owner, 'export ai sdk');
    const runId = await createRun(t, who.owner, threadId);
    const session = await claim(t, who.worker, runId);
    must(await session.modelStarted('m1', { model: 'mock-model', input: { messages: [{ role: 'user', content: [{ type: 'text', text: 'Refund order 7' }] }] } }));
    must(
      await session.modelFinished('m1', [], {
        output: { content: [{ type: 'text', text: 'Refunded.' }], finishReason: 'stop' },
        usage: { inputTokens: { total: 1200, noCache: 1000, cacheRead: 200 }, outputTokens: { total: 85, text: 80, reasoning: 5 } },
      }),
    );
    must(await session.finish('COMPLETED'));
    await receiver.waitFor((spans) => spans.some((span) => span.name === 'chat mock-model' && span.attributes['agent_audit.run.id'] === runId));
    const model = receiver.spans.find((span) => span.name === 'chat mock-model' && span.attributes['agent_audit.run.id'] === runId)!;
    expect(model.attributes['gen_ai.usage.input_tokens']).toBe(1200);
    expect(model.attributes['gen_ai.usage.output_tokens']).toBe(85);
    expect(JSON.parse(model.attributes['gen_ai.output.messages'] as string)[0].parts).toEqual([{ type: 'text', content: 'Refunded.' }]);
  });
});
