import { describe, expect, it } from 'vitest';
import { AuditClient, isAuditApiError, type FetchLike } from '@agent-audit/client';
import { fakeFetch, graphqlData, httpStatus, type RecordedRequest } from './fake-fetch.js';
import { rejectionOf } from '../support/client-errors.js';
import { assertStorableJson } from '../../src/domain/json.js';

// What the client sends of a payload (packages/client/README.md, "Payloads"): any value, as JSON
// (toJson), and a value the server would refuse as too large (MAX_JSON_BYTES) cut visibly, so
// the event itself is recorded.

const lease = { runId: 'run-1', epoch: 3 };
const modelAudit = { __typename: 'ModelAudit', id: 'audit-1', status: 'RUNNING' };

function clientWith(fetchImpl: FetchLike, options: { maxJsonBytes?: number } = {}) {
  return new AuditClient({
    url: 'http://audit.test/graphql',
    token: 'worker-token',
    clockId: 'test-clock',
    fetch: fetchImpl,
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 1_000 },
    ...options,
  });
}

const sentInput = (request: RecordedRequest) => (JSON.parse(request.body) as { variables: { input: Record<string, any> } }).variables.input;
const utf8Bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('payloads the client sends', () => {
  it('sends values JSON cannot hold as what they say: a BigInt, a cycle, a Map, bytes, a thrown object', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordModelFinished', modelAudit));
    const cyclic: Record<string, unknown> = { name: 'node' };
    cyclic.self = cyclic;
    await clientWith(fetchImpl).recordModelFinished({
      lease,
      operationId: 'm1',
      status: 'FAILED',
      output: { id: 123n, cyclic, index: new Map([['a', 1]]), image: new Uint8Array(150_000) },
      error: { code: 'RATE_LIMITED', retryAfter: 3 },
      toolCalls: [{ id: 'c1', name: 'lookup', args: { ids: new Set([1n, 2n]) } }],
    });

    const input = sentInput(fetchImpl.requests[0]!);
    expect(input.output).toEqual({ id: '123', cyclic: { name: 'node', self: '[Circular]' }, index: { a: 1 }, image: { type: 'bytes', bytes: 150_000 } });
    expect(input.error).toEqual({ code: 'RATE_LIMITED', retryAfter: 3 });
    expect(input.toolCalls).toEqual([{ id: 'c1', name: 'lookup', args: { ids: ['1', '2'] } }]);
  });

  it('cuts a payload over maxJsonBytes to a visible marker, keeping the other payloads and the declared tool calls', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordModelStarted', modelAudit), graphqlData('recordModelFinished', modelAudit));
    const client = clientWith(fetchImpl);
    const messages = [{ role: 'user', content: 'page '.repeat(300_000) }];
    await client.recordModelStarted({ lease, operationId: 'm1', sequence: 1, model: 'm', input: messages });
    await client.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED', output: { text: 'ok' }, toolCalls: [{ id: 'c1', name: 'fetchPage', args: { url: 'x' } }] });

    const started = sentInput(fetchImpl.requests[0]!);
    expect(started.input).toEqual({ truncated: true, bytes: utf8Bytes(messages), preview: expect.any(String) });
    expect(JSON.stringify(messages).startsWith(started.input.preview)).toBe(true);
    expect(started.input.preview.length).toBeGreaterThan(1000);
    expect(utf8Bytes(started.input)).toBeLessThan(16 * 1024);
    expect(sentInput(fetchImpl.requests[1]!).toolCalls).toEqual([{ id: 'c1', name: 'fetchPage', args: { url: 'x' } }]);
  });

  it("cuts an object's largest members first, so a tool message keeps its status and tool_call_id", async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolFinished', { __typename: 'ToolAudit', id: 'audit-2' }));
    const content = 'x'.repeat(5_000);
    const output = { type: 'tool', tool_call_id: 'c1', name: 'fetchPage', status: 'error', content };
    await clientWith(fetchImpl, { maxJsonBytes: 2_048 }).recordToolFinished({ lease, toolCallId: 'c1', output });

    const sent = sentInput(fetchImpl.requests[0]!).output;
    expect(sent).toEqual({ ...output, content: { truncated: true, bytes: utf8Bytes(content), preview: expect.stringMatching(/^"x+$/) } });
    expect(utf8Bytes(sent)).toBeLessThanOrEqual(2_048);
  });

  it('sends a payload at the limit whole', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolFinished', { __typename: 'ToolAudit', id: 'audit-2' }));
    const output = { content: 'y'.repeat(2_048 - utf8Bytes({ content: '' })) };
    expect(utf8Bytes(output)).toBe(2_048);
    await clientWith(fetchImpl, { maxJsonBytes: 2_048 }).recordToolFinished({ lease, toolCallId: 'c1', output });
    expect(sentInput(fetchImpl.requests[0]!).output).toEqual(output);
  });

  it('cuts a payload whose numbers, written out in full as the server stores them, pass 1.5 × maxJsonBytes; ordinary JSON at the limit goes whole', async () => {
    const fetchImpl = fakeFetch(...Array.from({ length: 2 }, () => graphqlData('recordToolFinished', { __typename: 'ToolAudit', id: 'audit-2' })));
    const client = clientWith(fetchImpl, { maxJsonBytes: 2_048 });
    const numbers = Array<number>(200).fill(1e308); // 1,401 bytes sent, 62,200 stored
    await client.recordToolFinished({ lease, toolCallId: 'c1', output: { status: 'success', content: numbers } });
    const zeros = Array<number>(1_023).fill(0); // 2,047 bytes sent, 3,069 stored
    await client.recordToolFinished({ lease, toolCallId: 'c2', output: zeros });

    const [cut, whole] = fetchImpl.requests.map((request) => sentInput(request).output);
    expect(cut).toEqual({ status: 'success', content: { truncated: true, bytes: utf8Bytes(numbers), preview: expect.stringMatching(/^\[1e\+308,/) } });
    expect(whole).toEqual(zeros);
    // What the server checks: both are accepted.
    for (const sent of [cut, whole]) expect(() => assertStorableJson(sent, 2_048, 'output')).not.toThrow();
  });

  it('measures payloads of megabytes, strings full of escapes and numbers among them included', async () => {
    const fetchImpl = fakeFetch(...Array.from({ length: 2 }, () => graphqlData('recordToolFinished', { __typename: 'ToolAudit', id: 'audit-2' })));
    const client = clientWith(fetchImpl, { maxJsonBytes: 16 * 1024 * 1024 });
    const text = 'x'.repeat(9_000_000);
    const escaped = { lines: '\n"'.repeat(2_000_000), numbers: Array<number>(1_000).fill(1.5e-7) };
    await client.recordToolFinished({ lease, toolCallId: 'c1', output: { content: text } });
    await client.recordToolFinished({ lease, toolCallId: 'c2', output: escaped });
    expect(fetchImpl.requests.map((request) => sentInput(request).output)).toEqual([{ content: text }, escaped]);
  });

  it('never leaves half a surrogate pair at the end of a preview', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolError', { __typename: 'ToolAudit', id: 'audit-2' }));
    // maxJsonBytes 2048 previews 256 characters: the opening quote, then emoji of two units each.
    await clientWith(fetchImpl, { maxJsonBytes: 2_048 }).recordToolError({ lease, toolCallId: 'c1', error: '😀'.repeat(2_000) });
    const { preview } = sentInput(fetchImpl.requests[0]!).error;
    expect(preview).toBe(`"${'😀'.repeat(127)}`);
  });

  it('refuses a sequence that is not an integer as BAD_USER_INPUT, sending nothing', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordModelStarted', modelAudit));
    const error = await rejectionOf(clientWith(fetchImpl).recordModelStarted({ lease, operationId: 'm1', sequence: 1.5 }));
    expect(isAuditApiError(error, 'BAD_USER_INPUT')).toBe(true);
    expect(error).toMatchObject({ operationName: 'RecordModelStarted', retryable: false });
    expect(fetchImpl.requests).toHaveLength(0);
  });

  it("names the field and the value it could not convert, as the server names a variable's path", async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolStarted', modelAudit));
    const client = clientWith(fetchImpl);
    const cases = [
      [() => client.recordToolStarted({ lease, toolCallId: 'c1', name: 't', sequence: Number.NaN }), 'RecordToolStarted: sequence must be an integer, not NaN'],
      [() => client.recordToolFinished({ lease, toolCallId: 'c1', output: {}, sequence: 2.5 }), 'RecordToolFinished: sequence must be an integer, not 2.5'],
      [() => client.recordToolError({ lease, toolCallId: 'c1', error: {}, clock: { clockId: 'c', nanos: Number.POSITIVE_INFINITY } }), 'RecordToolError: clock.nanos must be an integer, not Infinity'],
      [() => client.recordToolError({ lease, toolCallId: 'c1', error: {}, observedAt: new Date('yesterday') }), 'RecordToolError: observedAt must be a valid Date, not an Invalid Date'],
    ] as const;
    for (const [call, message] of cases) {
      const error = await rejectionOf(call());
      expect({ code: (error as { code?: string }).code, message: (error as Error).message }).toEqual({ code: 'BAD_USER_INPUT', message });
    }
    expect(fetchImpl.requests).toHaveLength(0);
  });

  it('says what to check when the URL answers 404 with a page that is not GraphQL (a URL without /graphql)', async () => {
    const error = await rejectionOf(clientWith(fakeFetch(httpStatus(404))).claimRun('run-1'));
    expect(error).toMatchObject({ code: 'TRANSPORT_ERROR', httpStatus: 404 });
    expect((error as Error).message).toContain("is the URL the server's GraphQL endpoint, e.g. http://host:4000/graphql?");
  });
});
