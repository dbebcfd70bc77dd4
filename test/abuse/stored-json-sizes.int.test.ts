// What a JSON value takes as stored: PostgreSQL prints jsonb with a space after every `,` and `:`
// and every number in full (1e308 is 309 digits), and that text is what `*Bytes` and the answer
// budget measure. The write check bounded only the compact JSON, so a 6-byte `1e308` was stored as
// 309 bytes (an 840 kB input reported 43 MB), and an accepted audit could be too large for any
// answer (docs/semantics.md, "Sizes of JSON values").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, MAX_JSON_BYTES_CEILING } from '../../src/config.js';
import { storedJsonBytes } from '../../src/domain/json.js';
import { onLogLine } from '../../src/log.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { must } from '../support/lifecycle.js';
import { expectRejected, runningScene, threadState } from '../write-path/support.js';
import { RunEvents, sendBatch } from '../batches/support.js';

const MAX_JSON_BYTES = 1024;
/** 1.5 × MAX_JSON_BYTES: what ordinary JSON within MAX_JSON_BYTES never reaches as stored. */
const MAX_STORED_BYTES = 1536;

let t: TestApp;
const logged: string[] = [];
beforeAll(async () => {
  const stopReading = onLogLine((line) => void logged.push(line));
  // The documented minimum before: 4 × MAX_JSON_BYTES.
  t = await startTestApp({ MAX_JSON_BYTES: String(MAX_JSON_BYTES), MAX_ANSWER_PAYLOAD_BYTES: String(4 * MAX_JSON_BYTES) }).finally(stopReading);
});
afterAll(() => t?.close());

/** `[0,0,…]` of `bytes` compact bytes (odd): as stored, half as long again, less one. */
const zeros = (bytes: number) => Array<number>((bytes - 1) / 2).fill(0);
/** An array of `count` copies of 1e308: 6 bytes each sent, 309 stored. */
const bigNumbers = (count: number) => Array<number>(count).fill(1e308);

const AUDIT = `query($id: ID!) { audit(id: $id) { id inputBytes outputBytes errorBytes ... on ModelAudit { input output error usage } } }`;

describe(`JSON values as stored (${backendName})`, () => {
  it('a value within MAX_JSON_BYTES whose numbers, written in full, pass 1.5 × MAX_JSON_BYTES as stored is BAD_USER_INPUT (the field, its stored size, why) and writes nothing', async () => {
    const value = bigNumbers(100); // 701 bytes compact, 31,100 stored
    expect(JSON.stringify(value).length).toBeLessThan(MAX_JSON_BYTES);
    const { session, scene } = await runningScene(t);
    await session.declare('m-declare', [{ id: 'c-open', name: 'search' }]);
    must(await session.modelStarted('m-open'));
    must(await session.toolStarted('c-open', 'search'));
    const refusals = [
      await expectRejected(scene, 'BAD_USER_INPUT', () => session.modelStarted('m-big', { input: value })),
      await expectRejected(scene, 'BAD_USER_INPUT', () => session.modelFinished('m-open', [], { usage: { tokens: value } })),
      await expectRejected(scene, 'BAD_USER_INPUT', () => session.toolFinished('c-open', { content: value })),
    ];
    expect(refusals.map(({ message }) => message)).toEqual([
      expect.stringMatching(/^input is 31100 bytes as stored.*number.*in full.*the limit is 1536 \(1\.5 × MAX_JSON_BYTES\)/),
      expect.stringMatching(/^usage is 31112 bytes as stored/),
      expect.stringMatching(/^output is 31113 bytes as stored/),
    ]);
  });

  it('in a batch, such an event alone is refused: the events around it are applied', async () => {
    const { worker, scene, session } = await runningScene(t);
    const events = new RunEvents(session.lease);
    const response = await sendBatch(t, worker, [events.modelStarted('m1'), events.modelStarted('m-big', { input: bigNumbers(100) }), events.modelStarted('m2')]);
    expect(response.errors).toBeUndefined();
    expect(response.data!.result.map((result) => result.error?.code ?? null)).toEqual([null, 'BAD_USER_INPUT', null]);
    expect((await threadState(scene)).audits.items.map((audit: { operationId: string }) => audit.operationId)).toEqual(['m1', 'm2']);
  });

  it('ordinary JSON up to MAX_JSON_BYTES is accepted whatever its shape, and stays within 1.5 × MAX_JSON_BYTES as stored', async () => {
    const { session, threadId, owner } = await runningScene(t);
    const members = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${String(i).padStart(2, '0')}`.slice(0, 3), i % 10]));
    const shapes = [zeros(1023), members, Array<number>(100).fill(0.000001), [[[[0, 0]], [[0]]], { a: [0, { b: 0 }] }]];
    for (const [index, input] of shapes.entries()) {
      expect(JSON.stringify(input).length).toBeLessThanOrEqual(MAX_JSON_BYTES);
      must(await session.modelStarted(`m${index}`, { input }));
    }
    const audits = await t.gql(`query($t: ID!) { threadAudits(threadId: $t) { items { operationId inputBytes } } }`, { t: threadId }, owner);
    const sizes = audits.data.threadAudits.items.map((audit: { inputBytes: number }) => audit.inputBytes);
    expect(sizes[0]).toBe(1533);
    for (const size of sizes) expect(size).toBeLessThan(MAX_STORED_BYTES);
  });

  it("the size the server bounds is the one the database stores (inputBytes), numbers with exponents and escaped text included", async () => {
    const { session, threadId, owner } = await runningScene(t);
    const inputs = [
      { n: [1e21, -1.5e-7, 5e-324, 1.7976931348623157e308, -2.5e-300, 123.456, -0, 0.1] },
      { text: 'line\nbreak "quoted" \\ tab\t \u0001 é 漢 😀', nested: { '': [], empty: {}, t: true, f: false, z: null } },
      { deep: [[[{ x: [1, 2, { y: 'z' }] }]]] },
    ];
    for (const [index, input] of inputs.entries()) must(await session.modelStarted(`m${index}`, { input }));
    const audits = await t.gql(`query($t: ID!) { threadAudits(threadId: $t) { items { operationId inputBytes } } }`, { t: threadId }, owner);
    expect(audits.data.threadAudits.items.map((audit: { inputBytes: number }) => audit.inputBytes)).toEqual(inputs.map((input) => storedJsonBytes(input)));
  });

  it('one audit whose four values are at the stored bound fits one answer: a MAX_ANSWER_PAYLOAD_BYTES below 6 × MAX_JSON_BYTES is raised to it, with a warn line at start', async () => {
    expect(t.config.maxAnswerPayloadBytes).toBe(6 * MAX_JSON_BYTES);
    expect(logged.filter((line) => /MAX_ANSWER_PAYLOAD_BYTES/.test(line)).map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 'warn', configured: 4096, used: 6144, msg: expect.stringMatching(/MAX_ANSWER_PAYLOAD_BYTES 4096 is raised to 6144.*one audit/) }),
    ]);
    const { session, owner } = await runningScene(t);
    const value = zeros(1023);
    must(await session.modelStarted('m1', { input: value }));
    const audit = must(await session.modelFinished('m1', [], { status: 'FAILED', output: value, error: value, usage: value }));
    const read = await t.gql(AUDIT, { id: audit.id }, owner);
    expect(read.errors, JSON.stringify(read.errors)).toBeUndefined();
    expect(read.data.audit).toMatchObject({ inputBytes: 1533, outputBytes: 1533, errorBytes: 1533, input: value, output: value, error: value, usage: value });
  });
});

describe('MAX_ANSWER_PAYLOAD_BYTES', () => {
  it('holds 4 values at the stored bound: at least 6 × MAX_JSON_BYTES, by default 32 MiB or that if more; a smaller setting is raised to it', () => {
    expect(loadConfig({}).maxAnswerPayloadBytes).toBe(32 * 1024 * 1024);
    expect(loadConfig({ MAX_JSON_BYTES: String(2 * 1024 * 1024), MAX_ANSWER_PAYLOAD_BYTES: String(8 * 1024 * 1024) }).maxAnswerPayloadBytes).toBe(12 * 1024 * 1024);
    expect(loadConfig({ MAX_JSON_BYTES: '1024', MAX_ANSWER_PAYLOAD_BYTES: '100' }).maxAnswerPayloadBytes).toBe(6144);
    expect(loadConfig({ MAX_JSON_BYTES: '1024', MAX_ANSWER_PAYLOAD_BYTES: '6145' }).maxAnswerPayloadBytes).toBe(6145);
  });
});

describe('MAX_JSON_BYTES', () => {
  it('is refused at start past the largest value whose worst case both backends write (2 MiB), naming it', () => {
    expect(MAX_JSON_BYTES_CEILING).toBe(2097152);
    expect(loadConfig({ MAX_JSON_BYTES: '2097152' }).maxJsonBytes).toBe(2097152);
    for (const env of [{}, { DATABASE_URL: 'postgres://audit@db.example/audit' }]) {
      expect(() => loadConfig({ ...env, MAX_JSON_BYTES: String(8 * 1024 * 1024) })).toThrow(/^MAX_JSON_BYTES must be at most 2097152, got 8388608: .*arrays of small numbers/);
    }
  });
});
