import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type GraphQLResponse, type TestApp } from '../support/app.js';
import { WorkerSession, must } from '../support/lifecycle.js';
import { expectRejected, runningScene, toolAuditOf } from './support.js';

const MAX_JSON_BYTES = 1024;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ MAX_JSON_BYTES: String(MAX_JSON_BYTES) });
});
afterAll(() => t.close());

/** A running run with a declared call-1, an open model call m-open and an open tool call call-open. */
async function busyRun() {
  const { session, scene } = await runningScene(t);
  await session.declare('m-declare', [
    { id: 'call-1', name: 'search' },
    { id: 'call-open', name: 'search' },
  ]);
  must(await session.toolStarted('call-open', 'search'));
  must(await session.modelStarted('m-open'));
  return { session, scene };
}

/** One character over the 256-character bound of ids and names. */
const LONG = 'x'.repeat(257);

/** A JSON object whose UTF-8 serialisation is exactly `bytes` long, built from `unit` characters. */
function jsonOfBytes(bytes: number, unit = 'x') {
  const overhead = Buffer.byteLength(JSON.stringify({ data: '' }));
  const unitBytes = Buffer.byteLength(unit);
  const value = { data: unit.repeat(Math.floor((bytes - overhead) / unitBytes)) };
  expect(Buffer.byteLength(JSON.stringify(value))).toBe(bytes);
  return value;
}

/** An object nested `depth` levels deep. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
}

const CASES: [string, (s: WorkerSession) => Promise<any>][] = [
  ['a blank toolCallId on start', (s) => s.toolStarted('  ', 'search')],
  ['a blank toolCallId on finish', (s) => s.toolFinished('', { content: 'x' })],
  ['a blank toolCallId on error', (s) => s.toolError(' ', { message: 'x' })],
  ['a blank tool name', (s) => s.toolStarted('call-1', ' ')],
  ['a blank model operationId on start', (s) => s.modelStarted(' ')],
  ['a blank model operationId on finish', (s) => s.modelFinished('')],
  ['a blank declared tool_call_id', (s) => s.modelFinished('m-open', [{ id: ' ', name: 'search' }])],
  ['a blank declared tool name', (s) => s.modelFinished('m-open', [{ id: 'call-9', name: '' }])],
  ['a blank lease runId', (s) => new WorkerSession(t, s.token, { ...s.lease, runId: ' ' }).modelStarted('m-new')],
  ['a blank clockId', (s) => s.toolStarted('call-1', 'search', { clock: { clockId: ' ', nanos: '1' } })],
  ['a negative clock reading', (s) => s.toolStarted('call-1', 'search', { clock: { clockId: 'c', nanos: '-1' } })],
  ['a negative tool start sequence', (s) => s.toolStarted('call-1', 'search', { sequence: '-1' })],
  ['a negative tool finish sequence', (s) => s.toolFinished('call-open', { content: 'x' }, { sequence: '-1' })],
  ['a negative tool error sequence', (s) => s.toolError('call-open', { message: 'x' }, { sequence: '-1' })],
  ['a negative model start sequence', (s) => s.modelStarted('m-new', { sequence: '-5' })],
  ['a negative model finish sequence', (s) => s.modelFinished('m-open', [], { sequence: '-5' })],
  ['a sequence beyond 64 bits', (s) => s.toolStarted('call-1', 'search', { sequence: '9223372036854775808' })],
  ['a sequence that is not an integer', (s) => s.toolStarted('call-1', 'search', { sequence: '1.5' })],
  ['an effective input that is an array', (s) => s.toolStarted('call-1', 'search', { effectiveInput: [1, 2] })],
  ['an effective input that is a string', (s) => s.toolStarted('call-1', 'search', { effectiveInput: 'q=1' })],
  ['an effective input that is a number', (s) => s.toolStarted('call-1', 'search', { effectiveInput: 42 })],
  ['a tool output that is not an envelope', (s) => s.toolFinished('call-open', 'plain text')],
  ['a model finish status RUNNING', (s) => s.modelFinished('m-open', [], { status: 'RUNNING' })],
  ['a model finish status CANCELLED', (s) => s.modelFinished('m-open', [], { status: 'CANCELLED' })],
  ['a model finish status ABANDONED', (s) => s.modelFinished('m-open', [], { status: 'ABANDONED' })],
  ['an unknown model finish status', (s) => s.modelFinished('m-open', [], { status: 'DONE' })],
  ['an observedAt without a time zone', (s) => s.modelStarted('m-new', { observedAt: '2026-11-29T21:00:00' })],
  ['an oversized effective input', (s) => s.toolStarted('call-1', 'search', { effectiveInput: jsonOfBytes(MAX_JSON_BYTES + 1) })],
  ['an oversized tool output', (s) => s.toolFinished('call-open', { content: 'x'.repeat(MAX_JSON_BYTES) })],
  ['an oversized tool error', (s) => s.toolError('call-open', jsonOfBytes(MAX_JSON_BYTES + 1))],
  ['an oversized model input', (s) => s.modelStarted('m-new', { input: jsonOfBytes(MAX_JSON_BYTES + 1) })],
  ['an oversized model output', (s) => s.modelFinished('m-open', [], { output: jsonOfBytes(MAX_JSON_BYTES + 1) })],
  ['an oversized model usage', (s) => s.modelFinished('m-open', [], { usage: jsonOfBytes(MAX_JSON_BYTES + 1) })],
  ['an oversized model error', (s) => s.modelFinished('m-open', [], { status: 'FAILED', error: jsonOfBytes(MAX_JSON_BYTES + 1) })],
  [
    'oversized declared tool arguments',
    (s) => s.modelFinished('m-open', [{ id: 'call-9', name: 'search', args: jsonOfBytes(MAX_JSON_BYTES + 1) }]),
  ],
  ['a value over the limit in bytes, not characters', (s) => s.toolStarted('call-1', 'search', { effectiveInput: jsonOfBytes(MAX_JSON_BYTES + 1, 'é') })],
  ['a NUL character in a JSON string', (s) => s.toolStarted('call-1', 'search', { effectiveInput: { q: 'a\u0000b' } })],
  ['a NUL character in a JSON key', (s) => s.toolFinished('call-open', { content: 'x', ['k\u0000']: 1 })],
  ['an unpaired surrogate in a JSON string', (s) => s.toolError('call-open', { message: ['ok', 'bad \ud800'] })],
  ['a NUL character in a toolCallId', (s) => s.toolStarted('call-\u0000', 'search')],
  ['a NUL character in a tool name', (s) => s.toolStarted('call-1', 'sea\u0000rch')],
  ['an unpaired surrogate in a model name', (s) => s.modelStarted('m-new', { model: 'gpt-\udc00' })],
  ['a NUL character in a clockId', (s) => s.modelStarted('m-new', { clock: { clockId: 'c\u0000', nanos: '1' } })],
  ['a model operationId over 256 characters', (s) => s.modelStarted(LONG)],
  ['a model operationId of 3,000 characters on finish', (s) => s.modelFinished('x'.repeat(3000))],
  ['a toolCallId over 256 characters', (s) => s.toolStarted(LONG, 'search')],
  ['a toolCallId over 256 characters on finish', (s) => s.toolFinished(LONG, { content: 'x' })],
  ['a toolCallId over 256 characters on error', (s) => s.toolError(LONG, { message: 'x' })],
  ['a tool name over 256 characters', (s) => s.toolStarted('call-1', LONG)],
  ['a model name over 256 characters', (s) => s.modelStarted('m-new', { model: LONG })],
  ['a clockId over 256 characters', (s) => s.modelStarted('m-new', { clock: { clockId: LONG, nanos: '1' } })],
  ['a declared tool_call_id over 256 characters', (s) => s.modelFinished('m-open', [{ id: LONG, name: 'search' }])],
  ['a declared tool name over 256 characters', (s) => s.modelFinished('m-open', [{ id: 'call-9', name: LONG }])],
  ['a lease runId over 256 characters', (s) => new WorkerSession(t, s.token, { ...s.lease, runId: LONG }).modelStarted('m-new')],
  [
    'more than 1,000 tool calls declared by one model response',
    (s) => s.modelFinished('m-open', Array.from({ length: 1001 }, (_, i) => ({ id: `call-many-${i}`, name: 'search' }))),
  ],
  [
    '8,192 tool calls declared by one model response',
    (s) => s.modelFinished('m-open', Array.from({ length: 8192 }, (_, i) => ({ id: `call-many-${i}`, name: 'search' }))),
  ],
];

describe('malformed lifecycle input', () => {
  it.each(CASES)('%s is BAD_USER_INPUT and changes nothing', async (_what, write) => {
    const { session, scene } = await busyRun();
    await expectRejected(scene, 'BAD_USER_INPUT', () => write(session));
  });
});

describe('where inside a JSON value the refused part is', () => {
  it('names the path to a NUL, an unpaired surrogate or a bad key, so a large payload need not be searched by hand', async () => {
    const { session, scene } = await busyRun();
    const messages = Array.from({ length: 42 }, (_, i) => ({ role: 'user', content: `turn ${i}` }));
    messages[41]!.content = 'a\u0000b';
    const nul = await expectRejected(scene, 'BAD_USER_INPUT', () => session.toolStarted('call-1', 'search', { effectiveInput: { messages } }));
    expect(nul.message).toBe('effectiveInput.messages[41].content contains a NUL character (U+0000), which cannot be stored');
    const surrogate = await expectRejected(scene, 'BAD_USER_INPUT', () => session.toolError('call-open', { message: ['ok', 'bad \ud800'] }));
    expect(surrogate.message).toBe('error.message[1] contains an unpaired surrogate (U+D800), which cannot be stored');
    const key = await expectRejected(scene, 'BAD_USER_INPUT', () => session.toolFinished('call-open', { content: 'x', 'my key': { ['k\u0000']: 1 } }));
    expect(key.message).toBe('output["my key"] has a key "k\\u0000" that contains a NUL character (U+0000), which cannot be stored');
  });

  it('names the path to a number out of range (1e400)', async () => {
    const { session, scene } = await busyRun();
    const input = { lease: session.lease, toolCallId: 'call-1', name: 'search', sequence: '50', observedAt: new Date().toISOString() };
    const body = JSON.stringify({
      query: `mutation($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }`,
      variables: { input: { ...input, effectiveInput: { pages: [{ n: 1 }, { n: 0 }] } } },
    }).replace('"n":0', '"n":1e400');
    const refused = await expectRejected(scene, 'BAD_USER_INPUT', () => postRaw(body, session.token));
    expect(refused.message).toMatch(/ at "input\.effectiveInput"; JSON numbers must be finite \(1e400 and the like are out of range\): \$\.pages\[1\]\.n$/);
  });
});

describe('the bounds of ids, names and declarations', () => {
  it('accepts ids and names of exactly 256 characters', async () => {
    const { session } = await busyRun();
    const id = 'i'.repeat(256);
    const name = 'n'.repeat(256);
    must(await session.modelStarted(id, { model: name, clock: { clockId: id, nanos: '1' } }));
    const finished = must(await session.modelFinished(id, [{ id, name }]));
    expect(finished.toolCalls).toMatchObject([{ toolCallId: id }]);
    expect(must(await session.toolStarted(id, name)).name).toBe(name);
  });

  it('names a declared call\'s field by its place, as its arguments are named: toolCalls[1].id', async () => {
    const { session } = await busyRun();
    const refused = await session.modelFinished('m-open', [{ id: 'call-9', name: 'search' }, { id: ' ', name: 'fetch' }]);
    expect(refused.errors?.[0]?.message).toContain('toolCalls[1].id');
    const unnamed = await session.modelFinished('m-open', [{ id: 'call-9', name: '' }]);
    expect(unnamed.errors?.[0]?.message).toContain('toolCalls[0].name');
  });

  it('accepts 1,000 tool calls declared by one model response', async () => {
    const { session } = await busyRun();
    const calls = Array.from({ length: 1000 }, (_, i) => ({ id: `call-many-${i}`, name: 'search', args: { i } }));
    expect(must(await session.modelFinished('m-open', calls)).toolCalls).toHaveLength(1000);
  });
});

/** Posts a raw request body, so that numbers JSON.stringify cannot write (1e400) reach the server. */
async function postRaw(body: string, token: string) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
  return (await response.json()) as GraphQLResponse;
}

describe('non-finite numbers in JSON input', () => {
  const START = `mutation($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }`;

  it('1e400 in a variable is BAD_USER_INPUT and changes nothing', async () => {
    const { session, scene } = await busyRun();
    const input = { lease: session.lease, toolCallId: 'call-1', name: 'search', sequence: '50', observedAt: new Date().toISOString() };
    const body = JSON.stringify({ query: START, variables: { input: { ...input, effectiveInput: { limit: 0 } } } }).replace(
      '"limit":0',
      '"limit":1e400',
    );
    expect(body).toContain('1e400');
    await expectRejected(scene, 'BAD_USER_INPUT', () => postRaw(body, session.token));
    // Nested anywhere, in any JSON argument (here the tool output's artifact).
    must(await session.toolStarted('call-1', 'search'));
    const finish = JSON.stringify({
      query: `mutation($input: ToolFinishedInput!) { recordToolFinished(input: $input) { id } }`,
      variables: { input: { lease: session.lease, toolCallId: 'call-1', observedAt: new Date().toISOString(), output: { content: 'x', artifact: [{ n: 0 }] } } },
    }).replace('"n":0', '"n":-1e400');
    await expectRejected(scene, 'BAD_USER_INPUT', () => postRaw(finish, session.token));
  });

  it("quotes at most 100 characters of the refused value, not a payload's megabyte or its every key", async () => {
    const { session, scene } = await busyRun();
    const input = { lease: session.lease, toolCallId: 'call-1', name: 'search', sequence: '50', observedAt: new Date().toISOString() };
    const screenshot = 'iVBORw0KGgo'.repeat(100_000);
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]));
    for (const effectiveInput of [{ screenshot, limit: 0 }, { ...keys, limit: 0 }]) {
      const body = JSON.stringify({ query: START, variables: { input: { ...input, effectiveInput } } }).replace('"limit":0', '"limit":1e400');
      const answer = await postRaw(body, session.token);
      const [error] = answer.errors!;
      expect(error!.extensions?.code).toBe('BAD_USER_INPUT');
      expect(error!.message).toMatch(/^Variable "\$input" got invalid value \{ .{80,105}… at "input\.effectiveInput"; JSON numbers must be finite \(1e400 and the like are out of range\): \$\.limit$/s);
      // A required field left out echoes the whole input, payload and all.
      const { observedAt: _, ...withoutTime } = input;
      const missing = (await postRaw(JSON.stringify({ query: START, variables: { input: { ...withoutTime, effectiveInput } } }), session.token)).errors![0]!;
      expect(missing.extensions?.code).toBe('BAD_USER_INPUT');
      expect(missing.message).toMatch(/^Variable "\$input" got invalid value \{ .{80,105}…; Field "observedAt" of required type "DateTime!" was not provided\.$/s);
    }
    await expectRejected(scene, 'BAD_USER_INPUT', () => postRaw(JSON.stringify({ query: START, variables: { input: { ...input, effectiveInput: { screenshot, limit: 0 } } } }).replace('"limit":0', '"limit":1e400'), session.token));
  });

  it('1e400 written inline in the document is BAD_USER_INPUT and changes nothing', async () => {
    const { session, scene } = await busyRun();
    const query = `mutation { recordToolStarted(input: { lease: { runId: "${session.lease.runId}", epoch: ${session.lease.epoch} },
      toolCallId: "call-1", name: "search", sequence: "50", observedAt: "${new Date().toISOString()}",
      effectiveInput: { limit: 1e400 } }) { id } }`;
    await expectRejected(scene, 'BAD_USER_INPUT', () => postRaw(JSON.stringify({ query }), session.token));
  });
});

describe('the JSON size limit (MAX_JSON_BYTES)', () => {
  it('accepts a value of exactly the limit, stored whole', async () => {
    const { session } = await busyRun();
    const largest = jsonOfBytes(MAX_JSON_BYTES);
    const started = must(await session.toolStarted('call-1', 'search', { effectiveInput: largest }));
    expect(started.effectiveInput).toEqual(largest);
    const multibyte = jsonOfBytes(MAX_JSON_BYTES - 1, 'é');
    expect(must(await session.toolFinished('call-1', multibyte)).output).toEqual(multibyte);
  });

  it('names the field and the limit in the error', async () => {
    const { session, scene } = await busyRun();
    const response = await expectRejected(scene, 'BAD_USER_INPUT', () =>
      session.toolStarted('call-1', 'search', { effectiveInput: jsonOfBytes(MAX_JSON_BYTES + 1) }),
    );
    expect(response.message).toMatch(/effectiveInput/);
    expect(response.message).toMatch(String(MAX_JSON_BYTES));
    // And the setting that sets it, so the reader knows what an operator can raise.
    expect(response.message).toMatch(new RegExp(`the limit is ${MAX_JSON_BYTES} \\(MAX_JSON_BYTES\\)$`));
  });

});

describe('with the default limit', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  async function declaredRun() {
    const { session, scene } = await runningScene(app);
    await session.declare('m1', [{ id: 'call-1', name: 'search' }]);
    return { session, scene };
  }

  it('accepts 1 MiB and refuses one byte more', async () => {
    const { session, scene } = await declaredRun();
    await expectRejected(scene, 'BAD_USER_INPUT', () =>
      session.toolStarted('call-1', 'search', { effectiveInput: jsonOfBytes(1024 * 1024 + 1) }),
    );
    must(await session.toolStarted('call-1', 'search', { effectiveInput: jsonOfBytes(1024 * 1024) }));
  });

  it('refuses JSON nested deeper than 1000 levels', async () => {
    const { session, scene } = await declaredRun();
    const response = await expectRejected(scene, 'BAD_USER_INPUT', () =>
      session.toolStarted('call-1', 'search', { effectiveInput: nested(1001) }),
    );
    expect(response.message).toMatch(/nested deeper than 1000/);
  });

  it('stores deep values and any valid Unicode exactly as given', async () => {
    const { session, scene } = await declaredRun();
    const deep = nested(1000);
    const text = { q: 'emoji 🧪, accents é, CJK 漢字, controls \t\n\u0001' };
    must(await session.toolStarted('call-1', 'search', { effectiveInput: deep }));
    must(await session.toolFinished('call-1', { content: text }));
    const audit = await toolAuditOf(scene, session.lease.runId, 'call-1');
    expect(audit.effectiveInput).toEqual(deep);
    expect(audit.output).toEqual({ content: text });
    expect(audit.toolCall.output).toEqual(text);
  });
});
