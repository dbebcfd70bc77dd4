import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, startTestApp, type TestApp } from '../support/app.js';
import { MODEL_AUDIT_FRAGMENT, TOOL_AUDIT_FRAGMENT, must, runningRun } from '../support/lifecycle.js';

/*
 * Every custom scalar (BigInt, DateTime, JSON) written inline in the document, as a literal,
 * means what the same value means as a variable; a malformed literal is BAD_USER_INPUT.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const lease = (session: { lease: { runId: string; epoch: number } }) =>
  `{ runId: ${JSON.stringify(session.lease.runId)}, epoch: ${session.lease.epoch} }`;

describe('custom scalars written inline', () => {
  it('recordModelStarted with BigInt, DateTime and JSON literals records what the same values as variables record', async () => {
    const inline = await runningRun(t);
    const variables = await runningRun(t);
    const input = { prompt: 'hi', temperature: 0.5, stop: null, tools: [{ name: 'search', strict: true }], n: -3 };
    const literal = await t.gql(
      `mutation { result: recordModelStarted(input: {
        lease: ${lease(inline.session)}, operationId: "m1", sequence: "7", observedAt: "2026-11-29T21:00:00.123Z",
        clock: { clockId: "c", nanos: 1500000 },
        input: { prompt: "hi", temperature: 0.5, stop: null, tools: [{ name: "search", strict: true }], n: -3 }
      }) { ...LifecycleModelAuditFields } } ${MODEL_AUDIT_FRAGMENT}`,
      {},
      inline.session.token,
    );
    const viaVariables = await variables.session.modelStarted('m1', {
      sequence: '7',
      observedAt: '2026-11-29T21:00:00.123Z',
      clock: { clockId: 'c', nanos: '1500000' },
      input,
    });
    const comparable = ({ id: _id, runId: _runId, ...rest }: Record<string, unknown>) => rest;
    expect(comparable(must(literal))).toEqual(comparable(must(viaVariables)));
    expect(must(literal)).toMatchObject({ sequence: '7', startedAt: '2026-11-29T21:00:00.123Z', input });
  });

  it('a JSON literal may hold variables, as GraphQL allows', async () => {
    const { session } = await runningRun(t);
    const response = await t.gql(
      `mutation($q: String!, $limit: Int) { result: recordModelStarted(input: {
        lease: ${lease(session)}, operationId: "m1", sequence: 1, observedAt: "2026-11-29T21:00:00Z",
        input: { query: $q, options: [$limit, "x"] }
      }) { input sequence } }`,
      { q: 'find', limit: 3 },
      session.token,
    );
    expect(must(response)).toEqual({ input: { query: 'find', options: [3, 'x'] }, sequence: '1' });
  });

  it('recordToolStarted, recordToolFinished and recordToolError with inline literals', async () => {
    const { session } = await runningRun(t);
    await session.declare('m1', [{ id: 'c1', name: 'read' }, { id: 'c2', name: 'read' }]);
    const started = await t.gql(
      `mutation { result: recordToolStarted(input: { lease: ${lease(session)}, toolCallId: "c1", name: "read",
        sequence: "10", observedAt: "2026-11-29T21:00:01Z", effectiveInput: { path: "/a", depth: 2 } }) { ...LifecycleToolAuditFields } } ${TOOL_AUDIT_FRAGMENT}`,
      {},
      session.token,
    );
    expect(must(started)).toMatchObject({ sequence: '10', status: 'RUNNING', effectiveInput: { path: '/a', depth: 2 } });
    const finished = await t.gql(
      `mutation { result: recordToolFinished(input: { lease: ${lease(session)}, toolCallId: "c1", sequence: "11",
        observedAt: "2026-11-29T21:00:02+01:00", output: { content: "text", status: "success", metadata: null } }) { ...LifecycleToolAuditFields } } ${TOOL_AUDIT_FRAGMENT}`,
      {},
      session.token,
    );
    expect(must(finished)).toMatchObject({
      finishedSequence: '11',
      status: 'COMPLETED',
      finishedAt: '2026-11-29T20:00:02.000Z',
      output: { content: 'text', status: 'success', metadata: null },
    });
    must(await session.toolStarted('c2', 'read', { sequence: '12' }));
    const errored = await t.gql(
      `mutation { result: recordToolError(input: { lease: ${lease(session)}, toolCallId: "c2", sequence: "13",
        observedAt: "2026-11-29T21:00:03Z", error: { message: "boom", code: 7 } }) { ...LifecycleToolAuditFields } } ${TOOL_AUDIT_FRAGMENT}`,
      {},
      session.token,
    );
    expect(must(errored)).toMatchObject({ finishedSequence: '13', awaitingRunTerminal: true, error: { message: 'boom', code: 7 } });
  });

  it.each([
    ['a BigInt that is no integer', 'sequence: "7.5"'],
    ['a BigInt past 64 bits', 'sequence: "9223372036854775808"'],
    ['a BigInt as a float literal', 'sequence: 7.0'],
    ['a BigInt as a boolean', 'sequence: true'],
    ['a DateTime without a time zone', 'sequence: "1", observedAt: "2026-11-29T21:00:00"'],
    ['a DateTime that is no date', 'sequence: "1", observedAt: "2026-13-45T99:00:00Z"'],
    ['a DateTime as a number', 'sequence: "1", observedAt: 1764450000000'],
    ['a JSON enum value', 'sequence: "1", input: { mode: FAST }'],
    ['a JSON number out of range', 'sequence: "1", input: { big: 1e400 }'],
  ])('%s is BAD_USER_INPUT and records nothing', async (_what, fields) => {
    const { session } = await runningRun(t);
    const observedAt = fields.includes('observedAt') ? '' : 'observedAt: "2026-11-29T21:00:00Z",';
    const response = await t.gql(
      `mutation { result: recordModelStarted(input: { lease: ${lease(session)}, operationId: "m1", ${observedAt} ${fields} }) { id } }`,
      {},
      session.token,
    );
    expect(errorCode(response), JSON.stringify(response.errors)).toBe('BAD_USER_INPUT');
    expect(response.errors![0]!.message).not.toMatch(/at .*\.(ts|js):\d+/);
    // Nothing was recorded: the same operation id starts cleanly afterwards.
    must(await session.modelStarted('m1', { sequence: '1' }));
  });

  it("a query's DateTime written inline (searchAudits' and toolCallLedger's windows) means what it says, each time the document runs", async () => {
    const { session, owner } = await runningRun(t);
    must(await session.modelStarted('m1', { sequence: '1' }));
    const at = (offsetMs: number) => JSON.stringify(new Date(Date.now() + offsetMs).toISOString());
    const hits = async (since: string, until: string) => {
      const response = await t.gql(`{ result: searchAudits(since: ${since}, until: ${until}) { items { audit { id } } } ledger: toolCallLedger(since: ${since}, until: ${until}) { edges { cursor } } }`, {}, owner);
      return must(response).items.length as number;
    };
    expect(await hits(at(-3_600_000), at(3_600_000))).toBeGreaterThan(0);
    // The same document with other values: read anew, not compiled once with the first.
    expect(await hits(at(3_600_000), at(7_200_000))).toBe(0);
  });
});
