import { describe, expect, it } from 'vitest';
import { AuditApiError, AuditClient, type FetchLike } from '@agent-audit/client';
import { fakeFetch, graphqlData, networkError, type RecordedRequest } from './fake-fetch.js';

// The client's one writer of lifecycle events (SEMANTICS.md, "Batches"; issue 45): idle, an event
// goes at once as its own mutation; events written while a request is in flight go together in
// the next one, each answered by its own result or error.

const lease = { runId: 'run-1', epoch: 3 };
const toolAudit = (id: string, status = 'RUNNING') => ({ __typename: 'ToolAudit', id, toolCallId: id, status });

function clientWith(fetchImpl: FetchLike, batching?: AuditClientBatching) {
  return new AuditClient({
    url: 'http://audit.test/graphql',
    token: 'worker-token',
    clockId: 'test-clock',
    fetch: fetchImpl,
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 1_000 },
    batching,
  });
}
type AuditClientBatching = ConstructorParameters<typeof AuditClient>[0]['batching'];

const start = (client: AuditClient, id: string, sequence: number) =>
  client.recordToolStarted({ lease, toolCallId: id, name: 'search', sequence: BigInt(sequence) });

const body = (request: RecordedRequest) => JSON.parse(request.body) as { operationName: string; variables: any };

/** A reply held until `release` is called: a request in flight. */
function held(reply: (request: RecordedRequest) => Response) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { release, reply: async (request: RecordedRequest) => (await gate, reply(request)) };
}

/** Answers a RecordEvents request: the tool starts applied, except those named in `refuse`; a single start applied. */
const batchReply = (refuse: Record<string, string> = {}) => (request: RecordedRequest) =>
  body(request).operationName === 'RecordToolStarted' ? Response.json({ data: { recordToolStarted: toolAudit(body(request).variables.input.toolCallId) } }) : Response.json({
    data: {
      recordEvents: body(request).variables.events.map((event: any, index: number) => {
        const id = event.toolStarted.toolCallId;
        return refuse[id]
          ? { index, audit: null, run: null, lease: null, error: { code: refuse[id], message: `refused ${id}` } }
          : { index, audit: toolAudit(id), run: null, lease: null, error: null };
      }),
    },
  });

describe('the batching writer', () => {
  it('sends an event at once, as its own mutation, when nothing is in flight', async () => {
    const fetchImpl = fakeFetch(graphqlData('recordToolStarted', toolAudit('c1')));
    const client = clientWith(fetchImpl);
    const pending = start(client, 'c1', 1);
    // Sent before anything else runs: no timer.
    expect(fetchImpl.requests).toHaveLength(1);
    expect(await pending).toEqual(toolAudit('c1'));
    expect(body(fetchImpl.requests[0]!).operationName).toBe('RecordToolStarted');
  });

  it('sends the events written while a request is in flight together, in order, each answered by its own result or error', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const fetchImpl = fakeFetch(first.reply, batchReply({ c2: 'LEASE_LOST' }));
    const client = clientWith(fetchImpl);
    const answers = [0, 1, 2, 3].map((i) => start(client, `c${i}`, i + 1).then((value) => ({ value }), (error: unknown) => ({ error })));
    expect(fetchImpl.requests).toHaveLength(1);
    first.release();
    const settled = await Promise.all(answers);

    expect(fetchImpl.requests.map((request) => body(request).operationName)).toEqual(['RecordToolStarted', 'RecordEvents']);
    const events = body(fetchImpl.requests[1]!).variables.events;
    expect(events.map((event: any) => [Object.keys(event), event.toolStarted.toolCallId, event.toolStarted.sequence])).toEqual([
      [['toolStarted'], 'c1', '2'],
      [['toolStarted'], 'c2', '3'],
      [['toolStarted'], 'c3', '4'],
    ]);
    expect(settled[0]).toEqual({ value: toolAudit('c0') });
    expect(settled[1]).toEqual({ value: toolAudit('c1') });
    expect(settled[3]).toEqual({ value: toolAudit('c3') });
    const refused = (settled[2] as { error: unknown }).error;
    expect(refused).toBeInstanceOf(AuditApiError);
    expect(refused).toMatchObject({ code: 'LEASE_LOST', operationName: 'RecordToolStarted', retryable: false, message: 'RecordToolStarted: refused c2' });
  });

  it('gives every event of a batch the error of a request that failed as a whole, after its retries', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const fetchImpl = fakeFetch(first.reply, networkError);
    const client = clientWith(fetchImpl);
    const zero = start(client, 'c0', 1);
    const rest = [1, 2].map((i) => start(client, `c${i}`, i + 1).catch((error: unknown) => error));
    first.release();
    await zero;
    const errors = await Promise.all(rest);
    expect(errors.map((error) => (error as AuditApiError).code)).toEqual(['TRANSPORT_ERROR', 'TRANSPORT_ERROR']);
    // Retried with the identical batch (sending it again replays every applied event).
    expect(fetchImpl.requests.slice(1).map((request) => request.body)).toEqual([fetchImpl.requests[1]!.body, fetchImpl.requests[1]!.body, fetchImpl.requests[1]!.body]);
  });

  it('sends again the events of a batch the server left unapplied (UNAVAILABLE: a later call of the batch timed out after earlier ones committed)', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    let batches = 0;
    const fetchImpl = fakeFetch(first.reply, (request) => (++batches === 1 ? batchReply({ c2: 'UNAVAILABLE', c3: 'UNAVAILABLE' })(request) : batchReply()(request)));
    const client = clientWith(fetchImpl);
    const answers = [0, 1, 2, 3].map((i) => start(client, `c${i}`, i + 1));
    first.release();
    expect(await Promise.all(answers)).toEqual(['c0', 'c1', 'c2', 'c3'].map((id) => toolAudit(id)));
    expect(fetchImpl.requests.slice(1).map((request) => body(request).variables.events.map((event: any) => event.toolStarted.toolCallId))).toEqual([
      ['c1', 'c2', 'c3'],
      ['c2', 'c3'],
    ]);
  });

  it('sends each event of a batch refused whole as BAD_USER_INPUT alone, in order: only the bad call fails', async () => {
    // The server refuses a whole recordEvents when one event's value does not coerce (an observedAt
    // of "yesterday"): other callers' events must still get their own answers.
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const refusedWhole = (request: RecordedRequest) => {
      const { operationName, variables } = body(request);
      const ids: string[] = operationName === 'RecordEvents' ? variables.events.map((event: any) => event.toolStarted.toolCallId) : [variables.input.toolCallId];
      if (!ids.includes('bad')) return Response.json({ data: { recordToolStarted: toolAudit(ids[0]!) } });
      return Response.json({ data: null, errors: [{ message: 'Variable "$events" got invalid value "yesterday"', extensions: { code: 'BAD_USER_INPUT' } }] }, { status: 400 });
    };
    const fetchImpl = fakeFetch(first.reply, refusedWhole);
    const client = clientWith(fetchImpl);
    const answers = ['c0', 'c1', 'bad', 'c3'].map((id, i) => start(client, id, i + 1).then((value) => ({ value }), (error: unknown) => ({ error })));
    first.release();
    const settled = await Promise.all(answers);

    expect(settled[1]).toEqual({ value: toolAudit('c1') });
    expect(settled[3]).toEqual({ value: toolAudit('c3') });
    expect((settled[2] as { error: unknown }).error).toMatchObject({ code: 'BAD_USER_INPUT', operationName: 'RecordToolStarted', httpStatus: 400, attempts: 1 });
    expect(fetchImpl.requests.map((request) => [body(request).operationName, body(request).variables.input?.toolCallId])).toEqual([
      ['RecordToolStarted', 'c0'],
      ['RecordEvents', undefined],
      ['RecordToolStarted', 'c1'],
      ['RecordToolStarted', 'bad'],
      ['RecordToolStarted', 'c3'],
    ]);
  });

  it('records a payload as it was when the call was made, not when its request leaves, even after a refused batch', async () => {
    // Agents append the reply to the history they just recorded as the model's input; the call
    // was recorded before that, so the reply must not appear in it (docs/runtime-authors.md:
    // "serialise the body once").
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const refusedWhole = () => Response.json({ data: null, errors: [{ message: 'Variable "$events" got invalid value', extensions: { code: 'BAD_USER_INPUT' } }] }, { status: 400 });
    const fetchImpl = fakeFetch(first.reply, refusedWhole, () => Response.json({ data: { recordModelStarted: { __typename: 'ModelAudit', id: 'm1' } } }));
    const client = clientWith(fetchImpl);
    const zero = start(client, 'c0', 1);
    const messages: unknown[] = [{ role: 'user', content: 'hi' }];
    const startedModel = client.recordModelStarted({ lease, operationId: 'm1', sequence: 2, model: 'm', input: { messages } });
    const other = start(client, 'c1', 3).catch(() => undefined);
    messages.push({ role: 'assistant', content: 'the reply' });
    first.release();
    await Promise.all([zero, startedModel, other]);

    expect(fetchImpl.requests.map((request) => body(request).operationName)).toEqual(['RecordToolStarted', 'RecordEvents', 'RecordModelStarted', 'RecordToolStarted']);
    const batched = body(fetchImpl.requests[1]!).variables.events[0].modelStarted;
    expect(batched.input).toEqual({ messages: [{ role: 'user', content: 'hi' }] });
    // Sent alone after the batch was refused: the same bytes as in the batch.
    const alone = fetchImpl.requests[2]!.body;
    expect(alone).toContain(`{"input":${JSON.stringify(batched)}}`);
  });

  it('gives an event refused inside a batch the attempts and HTTP status of the batch request', async () => {
    // The batch's first answer is lost and it is sent again: a LEASE_LOST in the replay's answer
    // may mean the first attempt committed (docs/runtime-authors.md), which attempts > 1 tells.
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const fetchImpl = fakeFetch(first.reply, networkError, batchReply({ c2: 'LEASE_LOST' }));
    const client = clientWith(fetchImpl);
    const answers = [0, 1, 2].map((i) => start(client, `c${i}`, i + 1).then((value) => ({ value }), (error: unknown) => ({ error })));
    first.release();
    const settled = await Promise.all(answers);

    expect(fetchImpl.requests.map((request) => body(request).operationName)).toEqual(['RecordToolStarted', 'RecordEvents', 'RecordEvents']);
    expect(settled[1]).toEqual({ value: toolAudit('c1') });
    const refused = (settled[2] as { error: AuditApiError }).error;
    expect(refused).toBeInstanceOf(AuditApiError);
    expect(refused).toMatchObject({ code: 'LEASE_LOST', operationName: 'RecordToolStarted', attempts: 2, httpStatus: 200 });
    // As its own mutation's error: the path names the mutation's root field.
    expect(refused.graphqlErrors).toEqual([{ message: 'refused c2', path: ['recordToolStarted'], extensions: { code: 'LEASE_LOST' } }]);
  });

  it('makes a writer wait for room when the queue is full, and close() flushes', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const fetchImpl = fakeFetch(first.reply, batchReply());
    const client = clientWith(fetchImpl, { maxQueued: 2 });
    const written: string[] = [];
    for (const i of [0, 1, 2, 3]) void start(client, `c${i}`, i + 1).then(() => written.push(`c${i}`));
    // c0 is in flight, c1 and c2 fill the queue: c3's write waits for room, not queued yet.
    await new Promise((resolve) => setImmediate(resolve));
    expect(fetchImpl.requests).toHaveLength(1);
    first.release();
    await client.close();
    expect(written.sort()).toEqual(['c0', 'c1', 'c2', 'c3']);
    const batches = fetchImpl.requests.filter((request) => body(request).operationName === 'RecordEvents').map((request) => body(request).variables.events.map((event: any) => event.toolStarted.toolCallId));
    // c3 was queued only once the batch before it left: it went on its own.
    expect(batches).toEqual([['c1', 'c2']]);
    expect(body(fetchImpl.requests[2]!).operationName).toBe('RecordToolStarted');
  });

  it('sends each event as its own request when batching is off', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const fetchImpl = fakeFetch(first.reply, (request) => Response.json({ data: { recordToolStarted: toolAudit(body(request).variables.input.toolCallId) } }));
    const client = clientWith(fetchImpl, false);
    const answers = [0, 1, 2].map((i) => start(client, `c${i}`, i + 1));
    expect(fetchImpl.requests).toHaveLength(3);
    first.release();
    expect(await Promise.all(answers)).toEqual([toolAudit('c0'), toolAudit('c1'), toolAudit('c2')]);
    expect(fetchImpl.requests.map((request) => body(request).operationName)).toEqual(['RecordToolStarted', 'RecordToolStarted', 'RecordToolStarted']);
  });

  it('sends claims through the batch beside other runs\' events; each claim gets its lease or its own error, and its run\'s events follow its answer', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('c0') } }));
    const claimsReply = (request: RecordedRequest) =>
      Response.json({
        data: {
          recordEvents: body(request).variables.events.map((event: any, index: number) =>
            event.claimRun?.runId === 'run-3'
              ? { index, audit: null, run: null, lease: null, error: { code: 'INVALID_TRANSITION', message: 'Run run-3 is RUNNING' } }
              : event.claimRun
                ? { index, audit: null, run: null, lease: { runId: event.claimRun.runId, owner: 'w', epoch: 1, expiresAt: 'x' }, error: null }
                : { index, audit: toolAudit(event.toolStarted.toolCallId), run: null, lease: null, error: null },
          ),
        },
      });
    const fetchImpl = fakeFetch(first.reply, claimsReply, batchReply());
    const client = clientWith(fetchImpl);
    const zero = start(client, 'c0', 1);
    const claimed = client.claimRun('run-2', 60, 'claim-2');
    const refused = client.claimRun('run-3', 60, 'claim-3').catch((error: unknown) => error);
    const sibling = start(client, 'c1', 2);
    first.release();
    await zero;
    const lease2 = await claimed;
    expect(lease2).toMatchObject({ runId: 'run-2', epoch: 1 });
    expect(await refused).toMatchObject({ code: 'INVALID_TRANSITION', operationName: 'ClaimRun', message: 'ClaimRun: Run run-3 is RUNNING' });
    expect(await sibling).toEqual(toolAudit('c1'));
    expect(body(fetchImpl.requests[1]!).variables.events).toEqual([
      { claimRun: { runId: 'run-2', leaseSeconds: 60, claimId: 'claim-2' } },
      { claimRun: { runId: 'run-3', leaseSeconds: 60, claimId: 'claim-3' } },
      { toolStarted: expect.objectContaining({ toolCallId: 'c1' }) },
    ]);
    // Idle again: the claimed run's first event goes at once, fenced by the epoch the claim got.
    await client.recordToolStarted({ lease: lease2, toolCallId: 'c2', name: 'search', sequence: 1n });
    expect(fetchImpl.requests).toHaveLength(3);
    expect(body(fetchImpl.requests[2]!).variables.input.lease).toEqual({ runId: 'run-2', epoch: 1 });
  });

  it('sends a claim alone as the ClaimRun mutation when nothing is in flight, and retries it with the same claimId', async () => {
    const lease2 = { runId: 'run-2', owner: 'w', epoch: 1, expiresAt: 'x' };
    const fetchImpl = fakeFetch(networkError, graphqlData('claimRun', lease2));
    const client = clientWith(fetchImpl);
    expect(await client.claimRun('run-2', 30)).toEqual(lease2);
    expect(fetchImpl.requests.map((request) => body(request).operationName)).toEqual(['ClaimRun', 'ClaimRun']);
    expect(fetchImpl.requests[1]!.body).toBe(fetchImpl.requests[0]!.body);
    expect(body(fetchImpl.requests[0]!).variables.input.claimId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('lets the callers a request answered write their next events into the next request', async () => {
    const first = held(() => Response.json({ data: { recordToolStarted: toolAudit('a1') } }));
    const fetchImpl = fakeFetch(first.reply, batchReply());
    const client = clientWith(fetchImpl);
    // Three runs, each writing its second event once its first is answered.
    const run = async (name: string) => {
      await start(client, `${name}1`, 1);
      await start(client, `${name}2`, 2);
    };
    const runs = [run('a'), run('b'), run('c')];
    first.release();
    await Promise.all(runs);
    const sent = fetchImpl.requests.map((request) => {
      const { operationName, variables } = body(request);
      return operationName === 'RecordEvents' ? variables.events.map((event: any) => event.toolStarted.toolCallId) : [variables.input.toolCallId];
    });
    // a2 is written when a1 is answered, while b1 and c1 wait: it goes with them.
    expect(sent).toEqual([['a1'], ['b1', 'c1', 'a2'], ['b2', 'c2']]);
  });
});
