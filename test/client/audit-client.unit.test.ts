import { describe, expect, it } from 'vitest';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { fakeFetch, graphqlData, graphqlError, hang, httpStatus, networkError, unavailable, variablesOf } from './fake-fetch.js';
import { rejectionOf } from '../support/client-errors.js';

const lease = { runId: 'run-1', owner: 'worker-1', epoch: 3, expiresAt: '2030-01-01T00:00:00.000Z' };
const toolAudit = { __typename: 'ToolAudit', id: 'audit-1', status: 'RUNNING' };

function clientWith(fetchImpl: FetchLike, maxAttempts = 4) {
  return new AuditClient({
    url: 'http://audit.test/graphql',
    token: 'worker-token',
    clockId: 'test-clock',
    fetch: fetchImpl,
    retry: { maxAttempts, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 1_000 },
  });
}

const startTool = (client: AuditClient) =>
  client.recordToolStarted({ lease, toolCallId: 'call-1', name: 'search', effectiveInput: { q: 'x' }, sequence: 7n });


describe('AuditClient retries', () => {
  it('replays the byte-identical request after transport failures, then returns the result', async () => {
    const fetchImpl = fakeFetch(networkError, httpStatus(503), httpStatus(502), graphqlData('recordToolStarted', toolAudit));
    const result = await startTool(clientWith(fetchImpl));

    expect(result).toEqual(toolAudit);
    expect(fetchImpl.requests).toHaveLength(4);
    const [first, ...replays] = fetchImpl.requests.map((request) => request.body);
    for (const replay of replays) expect(replay).toBe(first);
  });

  it('sends the bearer token and the lease without the extra RunLease fields', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolStarted', toolAudit));
    await startTool(clientWith(fetchImpl));

    const [request] = fetchImpl.requests;
    expect(request!.url).toBe('http://audit.test/graphql');
    expect(request!.headers.authorization).toBe('Bearer worker-token');
    expect(variablesOf(request!).input).toMatchObject({ lease: { runId: 'run-1', epoch: 3 }, sequence: '7' });
    expect(variablesOf(request!).input.lease).toEqual({ runId: 'run-1', epoch: 3 });
  });

  it('fills in observedAt and a monotonic clock reading once, and keeps them across retries', async () => {
    const fetchImpl = fakeFetch(networkError, graphqlData('recordToolStarted', toolAudit));
    const before = Date.now();
    await startTool(clientWith(fetchImpl));

    const [first, second] = fetchImpl.requests.map(variablesOf);
    expect(first!.input.clock!.clockId).toBe('test-clock');
    expect(first!.input.clock!.nanos).toMatch(/^\d+$/);
    expect(Date.parse(first!.input.observedAt)).toBeGreaterThanOrEqual(before);
    expect(second!.input.clock).toEqual(first!.input.clock);
    expect(second!.input.observedAt).toBe(first!.input.observedAt);
  });

  it('keeps a caller-supplied observation, converting bigint and Date', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolFinished', toolAudit));
    await clientWith(fetchImpl).recordToolFinished({
      lease,
      toolCallId: 'call-1',
      output: { content: 'done', status: 'success' },
      sequence: 9,
      observedAt: new Date('2026-11-29T21:00:00.123Z'),
      clock: { clockId: 'runtime-clock', nanos: 123456789012345678901n },
    });

    expect(variablesOf(fetchImpl.requests[0]!).input).toMatchObject({
      sequence: '9',
      observedAt: '2026-11-29T21:00:00.123Z',
      clock: { clockId: 'runtime-clock', nanos: '123456789012345678901' },
    });
  });

  it('retries an attempt that timed out', async () => {
    const fetchImpl = fakeFetch(hang, graphqlData('recordToolStarted', toolAudit));
    const client = new AuditClient({
      url: 'http://audit.test/graphql',
      token: 't',
      fetch: fetchImpl,
      retry: { baseDelayMs: 1, timeoutMs: 20 },
    });

    await expect(startTool(client)).resolves.toEqual(toolAudit);
    expect(fetchImpl.requests).toHaveLength(2);
  });

  it.each(['CONFLICT', 'LEASE_LOST', 'LEASE_EXPIRED', 'INTERNAL_SERVER_ERROR'])('never retries the GraphQL error %s', async (code) => {
    const fetchImpl = fakeFetch(graphqlError(code), graphqlData('recordToolStarted', toolAudit));
    const error = await rejectionOf(startTool(clientWith(fetchImpl)));

    expect(fetchImpl.requests).toHaveLength(1);
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(false);
    expect(error.attempts).toBe(1);
    expect(error.operationName).toBe('RecordToolStarted');
  });

  it('reads the GraphQL error code even from a non-2xx answer', async () => {
    const fetchImpl = fakeFetch(() => Response.json({ errors: [{ message: 'no', extensions: { code: 'UNAUTHENTICATED' } }] }, { status: 401 }));
    const error = await rejectionOf(startTool(clientWith(fetchImpl)));

    expect(error).toMatchObject({ code: 'UNAUTHENTICATED', httpStatus: 401, retryable: false });
  });

  it('retries UNAVAILABLE (503) as a transport failure, waiting at least its Retry-After, and gives up naming it', async () => {
    const replayed = fakeFetch(unavailable(1), graphqlData('recordToolStarted', toolAudit));
    expect(await startTool(clientWith(replayed))).toEqual(toolAudit);
    expect(replayed.requests).toHaveLength(2);
    expect(replayed.requests[1]!.body).toBe(replayed.requests[0]!.body);

    const down = fakeFetch(unavailable(1));
    const error = await rejectionOf(startTool(clientWith(down, 3)));
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true, httpStatus: 503, attempts: 3, retryAfterMs: 1000 });
  });

  it('gives up after maxAttempts transport failures with a retryable error', async () => {
    const fetchImpl = fakeFetch(httpStatus(504));
    const error = await rejectionOf(startTool(clientWith(fetchImpl, 3)));

    expect(fetchImpl.requests).toHaveLength(3);
    expect(error).toMatchObject({ code: 'TRANSPORT_ERROR', retryable: true, httpStatus: 504, attempts: 3 });
  });

  it('does not retry a 4xx answer that is not GraphQL (a 5xx page is retried: transport-faults.unit.test.ts)', async () => {
    const fetchImpl = fakeFetch(httpStatus(404), graphqlData('recordToolStarted', toolAudit));
    const error = await rejectionOf(startTool(clientWith(fetchImpl)));

    expect(fetchImpl.requests).toHaveLength(1);
    expect(error).toMatchObject({ code: 'TRANSPORT_ERROR', retryable: false, httpStatus: 404 });
  });

  it('sends a claim with a claimId and replays it with the same claimId after a transport failure', async () => {
    const fetchImpl = fakeFetch(networkError, graphqlData('claimRun', lease));
    const claimed = await clientWith(fetchImpl).claimRun('run-1', 10);

    expect(claimed).toEqual(lease);
    const sent = fetchImpl.requests.map((request) => JSON.parse(request.body) as { operationName: string; variables: any });
    expect(sent.map((request) => request.operationName)).toEqual(['ClaimRun', 'ClaimRun']);
    const claimId = sent[0]!.variables.input.claimId;
    expect(claimId).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.variables).toEqual({ input: { runId: 'run-1', leaseSeconds: 10, claimId } });
  });

  it('gives every claim its own claimId unless the caller names one', async () => {
    const fetchImpl = fakeFetch(graphqlData('claimRun', lease));
    const client = clientWith(fetchImpl);
    await client.claimRun('run-1');
    await client.claimRun('run-2');
    await client.claimRun('run-3', 10, 'my-claim');
    const claimIds = fetchImpl.requests.map((request) => (JSON.parse(request.body) as { variables: any }).variables.input.claimId);
    expect(new Set(claimIds.slice(0, 2)).size).toBe(2);
    expect(claimIds[2]).toBe('my-claim');
  });

  it('takes an INVALID_TRANSITION of a claim as final', async () => {
    const fetchImpl = fakeFetch(networkError, graphqlError('INVALID_TRANSITION'), graphqlData('renewLease', lease));
    const error = await rejectionOf(clientWith(fetchImpl).claimRun('run-1'));

    expect(error).toMatchObject({ code: 'INVALID_TRANSITION', attempts: 2 });
    expect(fetchImpl.requests).toHaveLength(2);
  });

  it('retries a creation with the same createId, a fresh one per creation unless the caller names one', async () => {
    const fetchImpl = fakeFetch(networkError, graphqlData('createThread', { id: 't' }), networkError, graphqlData('createRun', { id: 'r' }));
    const client = clientWith(fetchImpl);
    await client.createThread({ title: 'x' });
    await client.createRun({ threadId: 't' });
    await client.createRun({ threadId: 't', createId: 'my-run' });
    const inputs = fetchImpl.requests.map((request) => (JSON.parse(request.body) as { variables: any }).variables.input);
    expect(inputs.map((input) => input.createId)).toEqual([inputs[0].createId, inputs[0].createId, inputs[2].createId, inputs[2].createId, 'my-run']);
    expect(inputs[0].createId).toMatch(/^[0-9a-f-]{36}$/);
    expect(inputs[2].createId).not.toBe(inputs[0].createId);
  });

  it('does not retry a message, a cancel or a deletion: sent again, a message is a second one', async () => {
    for (const [field, call] of [
      ['appendMessage', (c: AuditClient) => c.appendMessage({ threadId: 't', role: 'USER', content: 'x' })],
      ['cancelRun', (c: AuditClient) => c.cancelRun('r')],
      ['deleteThread', (c: AuditClient) => c.deleteThread('t')],
    ] as const) {
      const fetchImpl = fakeFetch(httpStatus(503), graphqlData(field, { id: 'x' }));
      await rejectionOf(call(clientWith(fetchImpl)));
      expect(fetchImpl.requests, field).toHaveLength(1);
    }
  });

  it('retries every lifecycle call and reads', async () => {
    const client = (field: string) => {
      const fetchImpl = fakeFetch(networkError, graphqlData(field, {}));
      return { fetchImpl, client: clientWith(fetchImpl) };
    };
    const calls: Array<[string, (c: AuditClient) => Promise<unknown>]> = [
      ['renewLease', (c) => c.renewLease(lease, 10)],
      ['recordModelStarted', (c) => c.recordModelStarted({ lease, operationId: 'm1', sequence: '1' })],
      ['recordModelFinished', (c) => c.recordModelFinished({ lease, operationId: 'm1', status: 'COMPLETED' })],
      ['recordToolError', (c) => c.recordToolError({ lease, toolCallId: 'call-1', error: { message: 'boom' } })],
      ['finishRun', (c) => c.finishRun({ lease, status: 'COMPLETED' })],
      ['threadAudits', (c) => c.threadAudits('thread-1', 10)],
      ['run', (c) => c.run('run-1')],
    ];
    for (const [field, call] of calls) {
      const subject = client(field);
      await call(subject.client);
      expect(subject.fetchImpl.requests, field).toHaveLength(2);
    }
  });
});
