// Hostile input to every operation of the contract, drawn from a fixed seed: each case changes one
// to three places of a valid request (a replay, where the operation writes) into something the
// contract refuses. Every answer must carry a contract code, a short message with no stack, SQL or
// path, the status GraphQL over HTTP gives it, and the thread must read the same after it.
// A failure names the seed and the case: FUZZ_SEED=<seed> runs another draw.
import { readFileSync } from 'node:fs';
import {
  buildSchema, getNullableType, isEnumType, isInputObjectType, isListType, isNonNullType, isScalarType,
  parse, typeFromAST, type GraphQLInputType, type OperationDefinitionNode,
} from 'graphql';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { actors, claim, createRun, createThread, must, type WorkerSession } from '../support/lifecycle.js';
import { sseEvents, wsClient } from '../support/streams.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261207);
const CASES = Number(process.env.FUZZ_CASES ?? 500);
const MAX_JSON_BYTES = 4096;

/** mulberry32: a small PRNG whose draws depend on the seed alone. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { int, pick: <T>(items: readonly T[]): T => items[int(items.length)]! };
}

/** A value written into the body as this JSON text, unparsed (1e400, 100,000 levels deep). */
class Raw {
  constructor(readonly text: string) {}
}
/** A field left out of its object. */
const OMIT = Symbol('omit');

function bodyOf(payload: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(payload, (_key, value) => (value instanceof Raw ? `\u0000raw${raws.push(value.text) - 1}\u0000` : value));
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_match, index: string) => raws[Number(index)]!);
}

const deepArray = (depth: number) => new Raw('['.repeat(depth) + ']'.repeat(depth));
const deepObject = (depth: number) => new Raw('{"a":'.repeat(depth) + '1' + '}'.repeat(depth));

/** The contract's codes, and those GraphQL over HTTP gives a request that never ran. */
const CONTRACT_CODES = ['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'BAD_USER_INPUT', 'LEASE_LOST', 'LEASE_EXPIRED', 'MODEL_NOT_FOUND', 'NAMESPACE_REJECTED', 'CONFLICT', 'INVALID_TRANSITION'];

const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'));

// Values of the wrong JSON type (or range) for each input type: graphql-js refuses them all before anything runs.
const WRONG_TYPE: Record<string, unknown[]> = {
  ID: [1.5, true, {}, [], { id: 'x' }],
  String: [0, 1.5, true, {}, ['x']],
  Int: ['1', 1.5, 2 ** 31, -(2 ** 31) - 1, 1e308, new Raw('1e400'), true, {}, []],
  Float: ['1', true, {}],
  Boolean: ['true', 1, {}],
  DateTime: [
    0, 1764450000000, true, {}, '', 'now', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00.001Z', '10000-01-01T00:00:00Z',
    '2026-12-31T23:59:60Z', '2026-02-30T00:00:00Z', '2026-11-29T24:00:00Z', '2026-11-29T21:00:00', '2026-11-29T21:00:00+24:00',
    '0001-01-01T00:30:00+01:00', '9999-12-31T23:59:59-01:00', '2026-11-29T21:00:00.123Z\u0000',
  ],
  // 9007199254740993 reads as 9007199254740992: a number past 2^53 is refused, never rounded.
  BigInt: [1.5, 2 ** 53 + 2, new Raw('9007199254740993'), 1e20, '1.5', '1e3', '', ' 1', '0x10', '9223372036854775808', '-9223372036854775809', '9'.repeat(100_000), true, {}, []],
  JSON: [new Raw('1e400'), new Raw('-1e400'), { n: new Raw('1e999') }],
};
const WRONG_ENUM = ['DONE', 'completed', 'COMPLETED ', '', 1, true, {}];

/** Text no name, id or title may be (SEMANTICS.md "Errors"). */
const BAD_TEXT = ['a\u0000b', 'a\ud800', '\udc00z', 'x'.repeat(257), 'é'.repeat(1_000_000)];
const BAD_NAME = ['', '   ', ...BAD_TEXT];
const BAD_JSON = [
  'a\u0000b', { k: 'a\ud800' }, { ['k\u0000']: 1 }, [{ deep: ['\udc00'] }],
  deepArray(1002), deepObject(1002), deepArray(100_000), deepObject(20_000),
  { big: 'x'.repeat(MAX_JSON_BYTES) },
];

interface Scene {
  owner: string;
  worker: string;
  user: string;
  threadId: string;
  otherThreadId: string;
  runId: string;
  queuedRunId: string;
  endedRunId: string;
  otherRunId: string;
  /** threadAudits' cursor of the other thread. */
  otherCursor: string;
  messageId: string;
  auditId: string;
  /** threadAudits' cursor of the thread, for threadChanges(after:). */
  cursor?: string;
  epoch: number;
}

interface Operation {
  name: string;
  document: string;
  token: (s: Scene) => string;
  variables: (s: Scene) => Record<string, unknown>;
}

const OBSERVED = '2026-11-29T21:00:00.000Z';
const lease = (s: Scene) => ({ runId: s.runId, epoch: s.epoch });

// Each write is a replay of what the scene recorded (or a write the case must refuse anyway), so
// any change in the thread after a refused case is the case's.
const OPERATIONS: Operation[] = [
  { name: 'threads', document: 'query($first: Int, $after: String, $title: String) { threads(first: $first, after: $after, title: $title) { edges { cursor } } }', token: (s) => s.owner, variables: () => ({ first: 5, after: null, title: 'fuzz' }) },
  { name: 'thread', document: 'query($id: ID!, $m: Int, $r: Int) { thread(id: $id) { id messages(first: $m) { id } runs(first: $r) { id } } }', token: (s) => s.owner, variables: (s) => ({ id: s.threadId, m: 5, r: 5 }) },
  { name: 'run', document: 'query($id: ID!) { run(id: $id) { id status } }', token: (s) => s.owner, variables: (s) => ({ id: s.runId }) },
  { name: 'threadAudits', document: 'query($threadId: ID!, $limit: Int) { threadAudits(threadId: $threadId, limit: $limit) { cursor } }', token: (s) => s.owner, variables: (s) => ({ threadId: s.threadId, limit: 10 }) },
  { name: 'toolCallStats', document: 'query($threadId: ID!) { toolCallStats(threadId: $threadId) { name count } }', token: (s) => s.owner, variables: (s) => ({ threadId: s.threadId }) },
  { name: 'toolActivity', document: 'query($w: Int, $name: String) { toolActivity(windowSeconds: $w, name: $name) { runningCount } }', token: (s) => s.owner, variables: () => ({ w: 3600, name: 'search' }) },
  { name: 'createThread', document: 'mutation($input: CreateThreadInput!) { createThread(input: $input) { id } }', token: (s) => s.user, variables: () => ({ input: { title: 'fuzz', createId: 'fuzz-create' } }) },
  { name: 'appendMessage', document: 'mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id } }', token: (s) => s.owner, variables: (s) => ({ input: { threadId: s.threadId, role: 'USER', content: { text: 'hi' } } }) },
  { name: 'createRun', document: 'mutation($input: CreateRunInput!) { createRun(input: $input) { id } }', token: (s) => s.owner, variables: (s) => ({ input: { threadId: s.threadId, resumeFromRunId: s.endedRunId, createId: 'fuzz-run' } }) },
  { name: 'cancelRun', document: 'mutation($runId: ID!) { cancelRun(runId: $runId) { id } }', token: (s) => s.owner, variables: (s) => ({ runId: s.queuedRunId }) },
  { name: 'deleteThread', document: 'mutation($id: ID!) { deleteThread(id: $id) { runs } }', token: (s) => s.owner, variables: (s) => ({ id: s.otherThreadId }) },
  { name: 'claimRun', document: 'mutation($input: ClaimRunInput!) { claimRun(input: $input) { epoch } }', token: (s) => s.worker, variables: (s) => ({ input: { runId: s.queuedRunId, leaseSeconds: 3600, claimId: 'fuzz-claim' } }) },
  { name: 'renewLease', document: 'mutation($lease: LeaseInput!, $s: Int) { renewLease(lease: $lease, leaseSeconds: $s) { epoch } }', token: (s) => s.worker, variables: (s) => ({ lease: lease(s), s: 3600 }) },
  { name: 'recordModelStarted', document: 'mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: modelStarted(s) }) },
  { name: 'recordModelFinished', document: 'mutation($input: ModelFinishedInput!) { recordModelFinished(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: modelFinished(s) }) },
  { name: 'recordToolStarted', document: 'mutation($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: toolStarted(s) }) },
  { name: 'recordToolFinished', document: 'mutation($input: ToolFinishedInput!) { recordToolFinished(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: toolFinished(s) }) },
  { name: 'recordToolError', document: 'mutation($input: ToolErrorInput!) { recordToolError(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: toolError(s) }) },
  { name: 'finishRun', document: 'mutation($input: FinishRunInput!) { finishRun(input: $input) { id } }', token: (s) => s.worker, variables: (s) => ({ input: { lease: lease(s), status: 'COMPLETED', error: null, stateMessages: [] } }) },
  {
    name: 'recordEvents',
    document: 'mutation($events: [LifecycleEventInput!]!) { recordEvents(events: $events) { index error { code message } } }',
    token: (s) => s.worker,
    variables: (s) => ({
      events: [{ modelStarted: modelStarted(s) }, { modelFinished: modelFinished(s) }, { toolStarted: toolStarted(s) }, { toolFinished: toolFinished(s) }, { toolStarted: { ...toolStarted(s), toolCallId: 'call-2', sequence: '5' } }, { toolError: toolError(s) }],
    }),
  },
];

const modelStarted = (s: Scene) => ({ lease: lease(s), operationId: 'm-1', sequence: '1', model: 'gpt', input: { q: 1 }, observedAt: OBSERVED, clock: { clockId: 'c', nanos: '1000' } });
const DECLARED = [{ id: 'call-1', name: 'search', args: { q: 1 } }, { id: 'call-2', name: 'search', args: null }];
const modelFinished = (s: Scene) => ({ lease: lease(s), operationId: 'm-1', status: 'COMPLETED', output: { a: 1 }, error: null, usage: { tokens: 3 }, toolCalls: DECLARED, sequence: '2', observedAt: OBSERVED, clock: { clockId: 'c', nanos: '2000' } });
const toolStarted = (s: Scene) => ({ lease: lease(s), toolCallId: 'call-1', name: 'search', effectiveInput: { q: 1 }, sequence: '3', observedAt: OBSERVED, clock: { clockId: 'c', nanos: '3000' }, namespace: [] });
const toolFinished = (s: Scene) => ({ lease: lease(s), toolCallId: 'call-1', output: { content: 'ok', status: 'success' }, sequence: '4', observedAt: OBSERVED, clock: { clockId: 'c', nanos: '4000' }, namespace: [] });
const toolError = (s: Scene) => ({ lease: lease(s), toolCallId: 'call-2', error: { message: 'boom' }, sequence: '6', observedAt: OBSERVED, clock: { clockId: 'c', nanos: '6000' }, namespace: [] });

type Path = (string | number)[];
interface Place {
  path: Path;
  type: GraphQLInputType;
  field: string;
  value: unknown;
  /** Required inside its object: leaving it out is refused. */
  required: boolean;
}

/** Every place of a request's variables, with its input type. */
function placesOf(operation: OperationDefinitionNode, variables: Record<string, unknown>): Place[] {
  const places: Place[] = [];
  const walk = (type: GraphQLInputType, value: unknown, path: Path, field: string) => {
    places.push({ path, type, field, value, required: isNonNullType(type) });
    const named = getNullableType(type);
    if (isListType(named) && Array.isArray(value)) value.forEach((item, index) => walk(named.ofType, item, [...path, index], field));
    if (isInputObjectType(named) && value && typeof value === 'object') {
      for (const [name, child] of Object.entries(named.getFields())) if (name in value) walk(child.type, (value as Record<string, unknown>)[name], [...path, name], name);
    }
  };
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    walk(typeFromAST(schema, definition.type as never) as GraphQLInputType, variables[name], [name], name);
  }
  return places;
}

interface Change {
  place: Place;
  value: unknown;
  /** The codes this change may be refused with. */
  codes: string[];
}

const ROW_IDS = new Set(['id', 'threadId', 'runId', 'resumeFromRunId']);
const NAMES = new Set(['operationId', 'toolCallId', 'name', 'clockId', 'claimId', 'createId']);
const STORED_JSON = new Set(['input', 'output', 'error', 'usage', 'effectiveInput', 'args', 'content']);

/** The refusals a place can be given: of its type (graphql-js), then of the contract's rules for its field. */
function changesOf(place: Place, s: Scene, operation: string): Change[] {
  const named = getNullableType(place.type);
  const bad = (values: unknown[], codes = ['BAD_USER_INPUT']) => values.map((value) => ({ place, value, codes }));
  const changes: Change[] = [];
  if (place.required) changes.push(...bad([null, ...(place.path.length > 1 ? [OMIT] : [])]));
  if (isInputObjectType(named)) changes.push(...bad(['x', 1, true, [], [1], { ...(place.value as object), leaseSecond: 1 }]));
  if (isListType(named) && isNonNullType(named.ofType)) changes.push(...bad([[null]]));
  // @oneOf: exactly one kind, and no kind given as null.
  if (named.toString() === 'LifecycleEventInput') changes.push(...bad([{}, { ...(place.value as object), renewLease: { lease: lease(s) } }, { renewLease: null, ...(place.value as object) }]));
  if (place.field === 'events' && Array.isArray(place.value)) changes.push(...bad([[], Array(501).fill(place.value[0])]));
  if (isEnumType(named)) changes.push(...bad(WRONG_ENUM));
  if (isScalarType(named)) changes.push(...bad(WRONG_TYPE[named.name] ?? []));
  // Deeper than JSON.stringify can write back, or long: no other type takes it, and no answer quotes it whole.
  if (isScalarType(named) || isEnumType(named)) changes.push(...bad([deepArray(100_000), ...(named.toString() === 'String' || named.toString() === 'ID' || named.toString() === 'JSON' ? [] : ['x'.repeat(100_000)])]));
  const { field, path } = place;
  const inside = (name: string) => path.includes(name);
  if (named.toString() === 'ID' && ROW_IDS.has(field)) {
    // An id of another kind (a run's where a thread's goes, …), or of no row at all.
    const namesRun = field === 'runId' || field === 'resumeFromRunId' || operation === 'run';
    const others = [s.messageId, s.auditId, '00000000-0000-4000-8000-000000000000', ...(namesRun ? [s.threadId, s.otherThreadId] : [s.runId, s.endedRunId])];
    // A stream's runId narrows it to a run of its thread: any other id is BAD_USER_INPUT.
    const narrows = operation.startsWith('subscription') && field === 'runId';
    if (narrows) others.push(s.otherRunId);
    const codes = narrows ? ['BAD_USER_INPUT'] : inside('lease') ? ['NOT_FOUND', 'LEASE_LOST'] : operation === 'createRun' ? ['NOT_FOUND', 'INVALID_TRANSITION', 'CONFLICT'] : ['NOT_FOUND'];
    changes.push(...bad(['', ' ', ...BAD_TEXT], ['BAD_USER_INPUT', ...(operation === 'createRun' ? ['CONFLICT'] : [])]), ...bad(others, codes));
  }
  if (named.toString() === 'String' && (NAMES.has(field) || (field === 'id' && inside('toolCalls'))) && !operation.endsWith('toolActivity')) changes.push(...bad(BAD_NAME));
  if (named.toString() === 'String' && (field === 'model' || field === 'title' || (operation.endsWith('toolActivity') && field === 'name'))) {
    changes.push(...bad(field === 'title' ? ['a\u0000b', 'a\ud800', 'x'.repeat(1001)] : BAD_TEXT));
  }
  if (named.toString() === 'JSON' && STORED_JSON.has(field)) changes.push(...bad(BAD_JSON));
  if (field === 'effectiveInput') changes.push(...bad([[], 'q=1', 1, true]));
  if (field === 'output' && operation.startsWith('recordTool')) changes.push(...bad(['plain text', [1]]));
  if (field === 'sequence' || field === 'nanos') changes.push(...bad(['-1', '-9223372036854775808']));
  if (field === 'epoch') changes.push(...bad([s.epoch + 1, s.epoch - 1, 0, -1, 2 ** 31 - 1, -(2 ** 31)], ['LEASE_LOST']));
  if (field === 'namespace' && isListType(named)) changes.push(...bad([['agent'], ['a', 'b']], ['NAMESPACE_REJECTED']));
  if (field === 'status' && operation === 'recordModelFinished') changes.push(...bad(['RUNNING', 'CANCELLED', 'ABANDONED', 'INTERRUPTED']));
  const ranges: Record<string, [number, number]> = { first: [0, 101], m: [-1, 1001], r: [0, 501], limit: [0, 501], w: [59, 604_801] };
  if (ranges[field] && path.length === 1) changes.push(...bad([...ranges[field]!, -(2 ** 31), 2 ** 31 - 1]));
  if (field === 'after' && operation === 'subscription threadChanges') {
    const cursor = String(place.value);
    changes.push(...bad(['', 'garbage', '\u0000', s.otherCursor, cursor.replace(/\d{4}$/, '9999'), cursor.replace(/\.\d+$/, '.99999999999999999999'), `${cursor}\u0000`]));
  }
  if (field === 'after' && operation === 'threads') changes.push(...bad(['', 'garbage', '\u0000', Buffer.from('["2026-01-01T00:00:00Z","x"]').toString('base64url')]));
  return changes;
}

/** A copy of variables whose Raw values stay Raw. */
const clone = (value: unknown): any =>
  value instanceof Raw || typeof value !== 'object' || value === null
    ? value
    : Array.isArray(value)
      ? value.map(clone)
      : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, clone(item)]));

function changed(variables: Record<string, unknown>, { place, value }: Change): Record<string, unknown> {
  const copy = clone(variables);
  let parent: any = copy;
  for (const step of place.path.slice(0, -1)) parent = parent[step];
  const last = place.path.at(-1)!;
  if (value === OMIT) delete parent[last];
  else parent[last] = value;
  return copy;
}

const describeValue = (value: unknown) => (value === OMIT ? '(left out)' : value instanceof Raw ? `raw ${value.text.slice(0, 40)}…` : JSON.stringify(value)?.slice(0, 60));

/** What a client must never read in an error: a stack, SQL, a file of the server. */
function expectClean(error: { message: string; extensions?: Record<string, unknown> }, what: string) {
  expect(error.message, what).not.toMatch(/\n\s+at |node_modules|\/src\/|\.[jt]s:\d|\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b|syntax error at|violates|invalid input syntax|relation "|Prisma|PGlite|sqlstate/i);
  expect(error.message.length, what).toBeLessThan(1000);
  expect(Object.keys(error.extensions ?? {}).filter((key) => !['code', 'requestId', 'runStatus'].includes(key)), what).toEqual([]);
}

/** One to three changes of `operation`'s valid variables, and the codes they may be refused with. */
function drawCase(rng: ReturnType<typeof random>, operation: Operation) {
  const definition = parse(operation.document).definitions[0] as OperationDefinitionNode;
  let variables = operation.variables(s);
  const changes: Change[] = [];
  // A place apart from those already changed: not inside one, not around one.
  const key = (path: Path) => `${path.join('\u0001')}\u0001`;
  const apart = (p: Place) => !changes.some((c) => key(c.place.path).startsWith(key(p.path)) || key(p.path).startsWith(key(c.place.path)));
  for (let n = 1 + rng.int(3); n > 0; n--) {
    const place = rng.pick(placesOf(definition, variables).filter(apart));
    const options = place && changesOf(place, s, operation.name);
    if (!options?.length) continue;
    const change = rng.pick(options);
    changes.push(change);
    variables = changed(variables, change);
  }
  return { variables, changes, codes: [...new Set(changes.flatMap((c) => c.codes))] };
}

const describeChanges = (changes: Change[]) => changes.map((c) => `${c.place.path.join('.')} = ${describeValue(c.value)}`).join(', ');

let t: TestApp;
let s: Scene;

const SNAPSHOT = `query($a: ID!, $b: ID!) {
  threads(first: 100) { edges { node { id title } } }
  a: thread(id: $a) { title messageCount changeCursor runs { id status leaseOwner leaseEpoch leaseExpiresAt finishedAt error } }
  b: thread(id: $b) { title messageCount changeCursor runs { id status leaseOwner leaseEpoch leaseExpiresAt } }
}`;
/** Everything a case could change, read through the API. */
const snapshot = async () => {
  const read = await t.gql(SNAPSHOT, { a: s.threadId, b: s.otherThreadId }, s.owner);
  expect(read.errors).toBeUndefined();
  return read.data;
};

async function post(token: string, payload: unknown, accept: string) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${token}` },
    body: bodyOf(payload),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

beforeAll(async () => {
  // connectionParams up to 1 MiB: deep ones must be refused for their depth, not their size.
  t = await startTestApp({ MAX_JSON_BYTES: String(MAX_JSON_BYTES), LEASE_MAX_SECONDS: '7200', WS_MAX_CONNECTION_PARAMS_BYTES: String(1024 * 1024) });
  const who = await actors(t);
  const user = await t.token('fuzz-user', 'user');
  const threadId = await createThread(t, who.owner, 'fuzz target');
  const otherThreadId = await createThread(t, who.owner, 'fuzz other');
  const endedRunId = await createRun(t, who.owner, threadId);
  must(await (await claim(t, who.worker, endedRunId)).finish('COMPLETED'));
  const runId = await createRun(t, who.owner, threadId);
  const session: WorkerSession = await claim(t, who.worker, runId, 3600);
  const queuedRunId = await createRun(t, who.owner, threadId);
  const otherRunId = await createRun(t, who.owner, otherThreadId);
  const message = await t.gql('mutation($t: ID!) { result: appendMessage(input: { threadId: $t, role: USER, content: "hello" }) { id } }', { t: threadId }, who.owner);
  s = { owner: who.owner, worker: who.worker, user, threadId, otherThreadId, runId, queuedRunId, endedRunId, otherRunId, otherCursor: '', messageId: must(message).id, auditId: '', epoch: session.lease.epoch };
  const otherCursor = await t.gql('query($id: ID!) { threadAudits(threadId: $id) { cursor } }', { id: otherThreadId }, who.owner);
  s.otherCursor = otherCursor.data.threadAudits.cursor;
  // The writes the lifecycle templates replay.
  const replayed = await post(s.worker, { query: OPERATIONS.at(-1)!.document, variables: OPERATIONS.at(-1)!.variables(s) }, 'application/json');
  expect(replayed.body.data.recordEvents.map((result: any) => result.error)).toEqual([null, null, null, null, null, null]);
  const audits = await t.gql('query($id: ID!) { threadAudits(threadId: $id) { items { id } } }', { id: threadId }, who.owner);
  s.auditId = audits.data.threadAudits.items[0].id;
  // Create the replayed thread and run of createThread and createRun's templates: a case then changes a replay.
  must(await t.gql(`mutation($input: CreateThreadInput!) { result: createThread(input: $input) { id } }`, OPERATIONS.find((o) => o.name === 'createThread')!.variables(s), user));
  must(await t.gql(`mutation($input: CreateRunInput!) { result: createRun(input: $input) { id } }`, OPERATIONS.find((o) => o.name === 'createRun')!.variables(s), who.owner));
});
afterAll(() => t.close());

describe(`hostile input, drawn from seed ${SEED} (${backendName})`, () => {
  it(`${CASES} cases over every operation: refused with a contract code, a clean message and the right status; nothing changes`, { timeout: 600_000 }, async () => {
    const rng = random(SEED);
    let before = await snapshot();
    const failures: string[] = [];
    for (let index = 0; index < CASES; index++) {
      const operation = rng.pick(OPERATIONS);
      const { variables, changes, codes } = drawCase(rng, operation);
      if (changes.length === 0) continue;
      const accept = rng.pick(['application/json', 'application/graphql-response+json']);
      // A document of one operation runs compiled (graphql-jit), one of two on graphql-js: both are drawn.
      const executor = rng.pick(['graphql-jit', 'graphql-js']);
      const request = executor === 'graphql-jit'
        ? { query: operation.document }
        : { query: `${operation.document.replace(/^(query|mutation)/, '$1 Fuzzed')} query Other { __typename }`, operationName: 'Fuzzed' };
      const what = `seed ${SEED} case ${index}: ${operation.name} with ${describeChanges(changes)} (${accept}, ${executor})`;
      const { status, body } = await post(operation.token(s), { ...request, variables }, accept);
      // A batch answers its refused events in their places, the batch itself applied.
      const batchErrors = operation.name === 'recordEvents' && body.data?.recordEvents ? body.data.recordEvents.map((r: any) => r.error).filter(Boolean) : [];
      const errors = [...(body.errors ?? []), ...batchErrors];
      try {
        expect(errors.length, `${what}: not refused: ${JSON.stringify(body).slice(0, 300)}`).toBeGreaterThan(0);
        for (const error of errors) {
          const code = error.extensions?.code ?? error.code;
          expect(CONTRACT_CODES, `${what}: ${code} ${error.message}`).toContain(code);
          expect(codes, `${what}: ${error.message}`).toContain(code);
          expectClean(error, what);
        }
        expect(status, what).toBe('data' in body || accept === 'application/json' ? 200 : 400);
        const after = await snapshot();
        expect(after, `${what}: changed the thread`).toEqual(before);
      } catch (error) {
        failures.push((error as Error).message.split('\n')[0]!);
        before = await snapshot();
      }
    }
    expect(failures).toEqual([]);
  });
});

const SUBSCRIPTIONS: Operation[] = [
  { name: 'subscription toolStatusChanged', document: 'subscription($threadId: ID!, $runId: ID) { toolStatusChanged(threadId: $threadId, runId: $runId) { id } }', token: (s) => s.owner, variables: (s) => ({ threadId: s.threadId, runId: s.runId }) },
  { name: 'subscription auditChanged', document: 'subscription($threadId: ID!) { auditChanged(threadId: $threadId) { id } }', token: (s) => s.owner, variables: (s) => ({ threadId: s.threadId }) },
  { name: 'subscription runChanged', document: 'subscription($threadId: ID!) { runChanged(threadId: $threadId) { id } }', token: (s) => s.owner, variables: (s) => ({ threadId: s.threadId }) },
  {
    name: 'subscription threadChanges',
    document: 'subscription($threadId: ID!, $after: String, $runId: ID) { threadChanges(threadId: $threadId, after: $after, runId: $runId) { cursor } }',
    token: (s) => s.owner,
    variables: (s) => ({ threadId: s.threadId, after: s.cursor, runId: s.runId }),
  },
  { name: 'subscription toolActivity', document: 'subscription($w: Int, $name: String) { toolActivity(windowSeconds: $w, name: $name) { runningCount } }', token: (s) => s.owner, variables: () => ({ w: 3600, name: 'search' }) },
];

/** The first result of a subscription over SSE (through yoga's fetch): its errors, then the stream is dropped. */
async function firstOverSse(query: string, variables: Record<string, unknown>, token: string) {
  const client = new AbortController();
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    signal: client.signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: bodyOf({ query, variables }),
  });
  const reader = response.body!.getReader();
  // A stream that was not refused may send nothing for long: given up on after a while, reported as such.
  const givenUp = new Promise<{ status: number; result: any }>((resolve) => setTimeout(() => resolve({ status: response.status, result: { notRefused: true } }), 30_000).unref());
  const first = async () => {
    for await (const { event, data } of sseEvents(reader)) if (event === 'next' && data) return { status: response.status, result: JSON.parse(data) };
    return { status: response.status, result: {} };
  };
  try {
    return await Promise.race([first(), givenUp]);
  } finally {
    client.abort();
    await reader.cancel().catch(() => {});
  }
}

/** The first result of a subscription over graphql-ws, or the errors of its `error` message. */
async function firstOverWs(client: ReturnType<typeof wsClient>, query: string, variables: Record<string, unknown>) {
  try {
    for await (const result of client.iterate({ query, variables })) return result as { data?: unknown; errors?: any[] };
    return {};
  } catch (errors) {
    return { errors: errors as any[] };
  }
}

describe(`hostile subscription arguments, drawn from seed ${SEED} (${backendName})`, () => {
  let url: string;
  beforeAll(async () => {
    url = await t.app.start(0);
    s.cursor = (await t.gql('query($id: ID!) { threadAudits(threadId: $id) { cursor } }', { id: s.threadId }, s.owner)).data.threadAudits.cursor;
  });

  it('over SSE and graphql-ws: refused when the subscription starts, with a contract code and a clean message', { timeout: 300_000 }, async () => {
    const rng = random(SEED + 1);
    const ws = wsClient(url, s.owner);
    const failures: string[] = [];
    try {
      for (let index = 0; index < 120; index++) {
        const operation = rng.pick(SUBSCRIPTIONS);
        const { variables, changes, codes } = drawCase(rng, operation);
        if (changes.length === 0) continue;
        const what = `seed ${SEED + 1} case ${index}: ${operation.name} with ${describeChanges(changes)}`;
        const sse = await firstOverSse(operation.document, variables, s.owner);
        const overWs = await firstOverWs(ws, operation.document, variables);
        try {
          expect(sse.status, what).toBe(200);
          for (const [transport, result] of [['SSE', sse.result], ['graphql-ws', overWs]] as const) {
            expect(result.data ?? null, `${what} over ${transport}: not refused`).toBeNull();
            expect(result.errors?.length, `${what} over ${transport}: not refused`).toBeGreaterThan(0);
            for (const error of result.errors!) {
              expect(codes, `${what} over ${transport}: ${error.message}`).toContain(error.extensions?.code);
              expectClean(error, `${what} over ${transport}`);
            }
          }
        } catch (error) {
          failures.push((error as Error).message.split('\n')[0]!);
        }
      }
    } finally {
      await ws.dispose();
    }
    expect(failures).toEqual([]);
  });

  it('a variable the operation does not declare is ignored, however deep: queries, writes and streams over SSE and graphql-ws answer as without it', async () => {
    const junk = { undeclared: deepArray(100_000) };
    const threads = await post(s.owner, { query: OPERATIONS[0]!.document, variables: { ...OPERATIONS[0]!.variables(s), ...junk } }, 'application/json');
    expect(threads.body).toEqual({ data: { threads: expect.anything() } });
    const replay = OPERATIONS.find((operation) => operation.name === 'recordModelStarted')!;
    const replayed = await post(s.worker, { query: replay.document, variables: { ...replay.variables(s), ...junk } }, 'application/json');
    expect(replayed.body).toEqual({ data: { recordModelStarted: { id: s.auditId } } });
    const activity = 'subscription($w: Int) { toolActivity(windowSeconds: $w) { runningCount } }';
    const sse = await firstOverSse(activity, { w: 3600, ...junk }, s.owner);
    expect(sse.result).toEqual({ data: { toolActivity: { runningCount: expect.any(Number) } } });
    // graphql-ws's client writes its messages with JSON.stringify: this one is written by hand.
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const messages: any[] = [];
    const next = () => new Promise<any>((resolve) => socket.once('message', (data) => resolve(JSON.parse(String(data)))));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${s.owner}` } }));
    messages.push(await next());
    socket.send(`{"id": "1", "type": "subscribe", "payload": {"query": ${JSON.stringify(activity)}, "variables": {"w": 3600, "undeclared": ${junk.undeclared.text}}}}`);
    messages.push(await Promise.race([next(), closed]));
    socket.close();
    expect(messages).toEqual([{ type: 'connection_ack' }, { id: '1', type: 'next', payload: { data: { toolActivity: { runningCount: expect.any(Number) } } } }]);
  });

  it('connectionParams nested deeper than JSON.stringify can go: closed as the client\'s error (4400), never as the server\'s (4500)', async () => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
    socket.send(`{"type": "connection_init", "payload": {"authorization": ${deepArray(100_000).text}}}`);
    expect(await closed).toEqual({ code: 4400, reason: expect.stringMatching(/connectionParams .*nested/) });
  });

  it('connectionParams whose authorization is no bearer token: each subscription is UNAUTHENTICATED, the connection lives', async () => {
    for (const authorization of [1, true, {}, ['Bearer x'], null, '', 'Bearer', 'Bearer \u0000', `Bearer ${s.owner}\u0000`, `Bearer ${'x'.repeat(4000)}`, `Bearer ${s.owner.split('.').reverse().join('.')}`]) {
      const client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { authorization } });
      try {
        for (const query of ['subscription { toolActivity { runningCount } }', `subscription { runChanged(threadId: "${s.threadId}") { id } }`]) {
          const result = await firstOverWs(client, query, {});
          const what = `authorization ${JSON.stringify(authorization).slice(0, 40)}: ${query}`;
          expect(result.errors?.map((error) => error.extensions?.code), what).toEqual(['UNAUTHENTICATED']);
          expectClean(result.errors![0], what);
        }
      } finally {
        await client.dispose();
      }
    }
  });
});

describe(`requests that are no well-formed GraphQL-over-HTTP request (${backendName})`, () => {
  const create = 'mutation { createThread(input: { title: "fuzz raw" }) { id } }';
  const json = (body: string, contentType = 'application/json'): RequestInit => ({ method: 'POST', headers: { 'content-type': contentType }, body });
  const bytes = (...parts: (string | number[])[]): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: new Uint8Array(Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))))),
  });
  const cases: [string, RequestInit & { search?: string }, number][] = [
    ['a JSON array (a batch of requests)', json(`[${JSON.stringify({ query: create })}]`), 400],
    ['JSON null', json('null'), 400],
    ['a JSON string', json(JSON.stringify(create)), 400],
    ['a JSON number', json('1'), 400],
    ['a query that is a number', json('{"query": 1}'), 400],
    ['a query that is an object', json(`{"query": {"query": ${JSON.stringify(create)}}}`), 400],
    ['variables that are an array', json(JSON.stringify({ query: create, variables: [] })), 400],
    ['variables that are a number', json(JSON.stringify({ query: create, variables: 1 })), 400],
    ['an operationName that is a number', json(JSON.stringify({ query: create, operationName: 1 })), 400],
    ['extensions that are a string', json(JSON.stringify({ query: create, extensions: 'x' })), 400],
    ['an unknown parameter (a persisted document id)', json(JSON.stringify({ documentId: 'sha256:abc', variables: {} })), 400],
    ['an unknown parameter beside the query', json(JSON.stringify({ query: create, id: 'x' })), 400],
    ['an input field written twice in the document', json(JSON.stringify({ query: 'mutation { createThread(input: { title: "a", title: "b" }) { id } }' })), 400],
    ['a JSON key written twice in the document', json(JSON.stringify({ query: 'mutation { appendMessage(input: { threadId: "x", role: USER, content: { a: 1, a: 2 } }) { id } }' })), 400],
    // JSON.parse keeps the last of duplicated keys: the value the server checks is the one it would store.
    ['a variable written twice, the last one refused', json(`{"query": "mutation($title: String) { createThread(input: { title: $title }) { id } }", "variables": {"title": "ok", "title": "a\\u0000b"}}`), 200],
    ['an operationName the document does not hold', json(JSON.stringify({ query: `query A { __typename } ${create.replace('mutation', 'mutation B')}`, operationName: 'C' })), 400],
    ['a raw NUL byte inside a string', json(`{"query": "mutation { createThread(input: { title: \\"a\u0000b\\" }) { id } }"}`), 400],
    ['a raw line break inside a string', json(`{"query": "mutation { createThread(input: { title: \\"a\nb\\" }) { id } }"}`), 400],
    ['a body cut inside a multi-byte character', bytes('{"query": "mutation { createThread(input: { title: \\"a', [0xe2, 0x82]), 400],
    ['a mutation over GET', { method: 'GET', search: `?query=${encodeURIComponent(create)}` }, 405],
    ['a mutation over GET named by operationName', { method: 'GET', search: `?query=${encodeURIComponent(`query Q { __typename } ${create.replace('mutation', 'mutation M')}`)}&operationName=M` }, 405],
    // graphql-js and graphql-jit take a list for an input object whose fields are all optional; a list for one with a required field they refuse themselves.
    ['a list for an input object', json(JSON.stringify({ query: 'mutation($input: CreateThreadInput!) { createThread(input: $input) { id } }', variables: { input: [] } })), 400],
    ['a list for a batch\'s event', json(JSON.stringify({ query: 'mutation($events: [LifecycleEventInput!]!) { recordEvents(events: $events) { index } }', variables: { events: [{ finishRun: { lease: { runId: 'r', epoch: 1 }, status: 'COMPLETED' } }, []] } })), 400],
    ['a list for an event\'s kind', json(JSON.stringify({ query: 'mutation($events: [LifecycleEventInput!]!) { recordEvents(events: $events) { index } }', variables: { events: [{ finishRun: [] }] } })), 400],
    ['a mutation in a PUT', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: create }) }, 405],
  ];
  // Bytes that are no UTF-8: read leniently, each became U+FFFD, stored as text the client never sent.
  const notUtf8: typeof cases = [
    ['an overlong UTF-8 encoding (0xC0 0xAF for "/")', bytes('{"query": "mutation { createThread(input: { title: \\"a', [0xc0, 0xaf], 'b\\" }) { id } }"}'), 400],
    ['a UTF-8-encoded lone surrogate (0xED 0xA0 0x80)', bytes('{"query": "mutation { createThread(input: { title: \\"a', [0xed, 0xa0, 0x80], 'b\\" }) { id } }"}'), 400],
    ['Latin-1 text ("é" as 0xE9)', bytes('{"query": "mutation { createThread(input: { title: \\"caf', [0xe9], '\\" }) { id } }"}'), 400],
    // Every other way a request carries its text: a form, a bare document, a GET's query string.
    ['a form with Latin-1 text', { ...bytes('query=mutation { createThread(input: { title: "caf', [0xe9], '" }) { id } }'), headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 400],
    ['a form whose %-escapes are Latin-1 (%E9)', { ...json(`query=${encodeURIComponent('mutation { createThread(input: { title: "caf')}%E9${encodeURIComponent('" }) { id } }')}`, 'application/x-www-form-urlencoded') }, 400],
    ['an application/graphql document with Latin-1 text', { ...bytes('mutation { createThread(input: { title: "caf', [0xe9], '" }) { id } }'), headers: { 'content-type': 'application/graphql' } }, 400],
    [
      'a multipart form with Latin-1 text',
      {
        ...bytes('--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query": "mutation { createThread(input: { title: \\"caf', [0xe9], '\\" }) { id } }"}\r\n--b--\r\n'),
        headers: { 'content-type': 'multipart/form-data; boundary=b' },
      },
      400,
    ],
    ['a GET whose %-escapes are an overlong "/" (%C0%AF)', { method: 'GET', search: `?query=${encodeURIComponent('{ __typename } # a')}%C0%AF` }, 400],
    ['a GET whose %-escapes are Latin-1 (%E9)', { method: 'GET', search: `?query=${encodeURIComponent('{ __typename }')}&variables=${encodeURIComponent('{"a": "caf')}%E9${encodeURIComponent('"}')}` }, 400],
  ];
  const refusedRequest = async (_what: string, { search = '', ...init }: RequestInit & { search?: string }, status: number) => {
    const before = await snapshot();
    const response = await t.app.yoga.fetch(`http://test/graphql${search}`, {
      ...init,
      headers: { accept: 'application/graphql-response+json', authorization: `Bearer ${s.user}`, ...(init.headers as Record<string, string>) },
    });
    const text = await response.text();
    expect({ status: response.status, text: text.slice(0, 300) }).toEqual({ status, text: expect.any(String) });
    const body = JSON.parse(text);
    expect(body.data ?? null).toBeNull();
    for (const error of body.errors) {
      expect(['BAD_REQUEST', 'BAD_USER_INPUT', 'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'OPERATION_RESOLUTION_FAILURE']).toContain(error.extensions?.code);
      expectClean(error, error.message);
    }
    expect(await snapshot()).toEqual(before);
  };
  it.each(cases)('%s: refused with its status and a clean JSON error; nothing is created', refusedRequest);
  it.each(notUtf8)('%s: refused with its status and a clean JSON error; nothing is created', refusedRequest);

  // A multipart form (the GraphQL multipart request spec's, for file uploads) carries the operation
  // as JSON in its "operations" field; this server takes no files, so "map" may name none.
  const part = (name: string, value: string, disposition = '') => `--b\r\nContent-Disposition: form-data; name="${name}"${disposition}\r\n\r\n${value}\r\n`;
  const form = (...parts: string[]): RequestInit => json(`${parts.join('')}--b--\r\n`, 'multipart/form-data; boundary=b');
  const operations = JSON.stringify({ query: create });
  const withTitle = JSON.stringify({ query: 'mutation($t: String) { createThread(input: { title: $t }) { id } }', variables: { t: 'fuzz raw' } });
  const multipartCases: [string, RequestInit][] = [
    ['no multipart body at all', json('not a multipart body', 'multipart/form-data; boundary=b')],
    ['a multipart body without its closing boundary', json(part('operations', operations), 'multipart/form-data; boundary=b')],
    ['a multipart Content-Type without a boundary', json(`${part('operations', operations)}--b--\r\n`, 'multipart/form-data')],
    ['no "operations" field', form(part('map', '{}'))],
    ['an empty "operations" field', form(part('operations', ''))],
    ['a part without a name', json(`--b\r\nContent-Disposition: form-data\r\n\r\n${operations}\r\n--b--\r\n`, 'multipart/form-data; boundary=b')],
    ['"operations" that is not JSON', form(part('operations', '{"query": '))],
    ['"operations" sent as a file', form(part('operations', operations, '; filename="operations.json"'))],
    ['"operations" that are JSON null', form(part('operations', 'null'))],
    ['"operations" that are a JSON string', form(part('operations', JSON.stringify(create)))],
    ['"operations" that are a JSON number', form(part('operations', '1'))],
    ['"operations" that are a batch', form(part('operations', `[${operations}]`))],
    ['a "map" that is not JSON', form(part('operations', operations), part('map', '{"0": '))],
    ['a "map" sent as a file', form(part('operations', operations), part('map', '{}', '; filename="map.json"'))],
    ['a "map" that is a JSON array', form(part('operations', operations), part('map', '[["variables.t"]]'))],
    ['a "map" whose paths are not a list', form(part('operations', operations), part('map', '{"0": 5}'))],
    ['a "map" naming a file that was not sent', form(part('operations', operations), part('map', '{"0": ["variables.file"]}'))],
    ['a "map" into "operations" that are a string', form(part('operations', '"x"'), part('map', '{"0": ["a.b"]}'), part('0', 'x', '; filename="a.txt"'))],
    ['a file mapped into a variable', form(part('operations', withTitle), part('map', '{"0": ["variables.t"]}'), part('0', 'fuzz raw', '; filename="title.txt"'))],
    ['a file part no "map" names', form(part('operations', operations), part('0', 'x', '; filename="a.txt"'))],
  ];
  it.each(multipartCases)('multipart: %s: 400 BAD_REQUEST whatever the Accept, a clean message; nothing is created', async (_what, init) => {
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const before = await snapshot();
      const response = await t.app.yoga.fetch('http://test/graphql', { ...init, headers: { accept, authorization: `Bearer ${s.user}`, ...(init.headers as Record<string, string>) } });
      const body = JSON.parse(await response.text());
      expect({ accept, status: response.status, data: body.data ?? null, codes: body.errors?.map((error: any) => error.extensions?.code) }).toEqual({
        accept,
        status: 400,
        data: null,
        codes: ['BAD_REQUEST'],
      });
      expectClean(body.errors[0], body.errors[0].message);
      expect(await snapshot()).toEqual(before);
    }
  });
  it('multipart: a field over the form parser\'s 1 MiB: 413 BAD_USER_INPUT saying so; nothing is created', async () => {
    const before = await snapshot();
    const init = form(part('operations', JSON.stringify({ query: create, variables: { padding: 'x'.repeat(1024 * 1024) } })));
    const response = await t.app.yoga.fetch('http://test/graphql', { ...init, headers: { authorization: `Bearer ${s.user}`, ...(init.headers as Record<string, string>) } });
    const body = await response.json();
    expect({ status: response.status, codes: body.errors?.map((error: any) => error.extensions?.code) }).toEqual({ status: 413, codes: ['BAD_USER_INPUT'] });
    expect(body.errors[0].message).toMatch(/over 1 MiB.*application\/json/);
    expect(await snapshot()).toEqual(before);
  });
  it('multipart: a form whose "map" names no file runs its operation', async () => {
    for (const init of [form(part('operations', withTitle)), form(part('operations', withTitle), part('map', '{}'))]) {
      const response = await t.app.yoga.fetch('http://test/graphql', { ...init, headers: { authorization: `Bearer ${s.user}`, ...(init.headers as Record<string, string>) } });
      expect(await response.json()).toEqual({ data: { createThread: { id: expect.any(String) } } });
    }
  });
});
