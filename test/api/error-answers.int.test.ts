// What a client reads when a request fails before it executes: which token problem it has, which
// HTTP status each media type answers (GraphQL over HTTP), and messages that name the client's own
// variables and limits. docs/runtime-authors.md's error table is written from these answers.
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { wsClient } from '../support/streams.js';

let t: TestApp;
let admin: string;
let worker: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('ada', 'superadmin');
  worker = await t.token('w', 'worker');
});
afterAll(() => t.close());

async function post(body: string, headers: Record<string, string> = {}) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type'), text, json: text ? JSON.parse(text) : null };
}

function multipart(fields: Record<string, string>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}

const threadsQuery = JSON.stringify({ query: '{ threads { edges { node { id } } } }' });
const key = new TextEncoder().encode(TEST_JWT_SECRET);

/** An HS256 JWT signed with the test secret, whatever its header says (jose signs no header it would refuse). */
function signedByHand(header: object, payload: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signed = `${part(header)}.${part(payload)}`;
  return `${signed}.${createHmac('sha256', TEST_JWT_SECRET).update(signed).digest('base64url')}`;
}

describe(`UNAUTHENTICATED names its cause (${backendName})`, () => {
  const cases: [string, () => Promise<string | null>, RegExp][] = [
    ['no Authorization header', async () => null, /no Authorization header/i],
    ['a token without "Bearer "', async () => admin, /must start with "Bearer "/i],
    ['"Bearer" twice', async () => `Bearer Bearer ${admin}`, /"Bearer" twice/i],
    ['a malformed token', async () => 'Bearer not-a-jwt', /not a well-formed JWT/i],
    ['an expired token', async () => `Bearer ${await mintToken(TEST_JWT_SECRET, { sub: 'a', role: 'user' }, Math.floor(Date.now() / 1000) - 60)}`, /expired at \d{4}-/i],
    ['a token without exp', async () => `Bearer ${await new SignJWT({ role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setSubject('a').sign(key)}`, /no "exp"/i],
    ['a token signed with another secret', async () => `Bearer ${await mintToken('another-secret-that-is-long-enough-for-hs256', { sub: 'a', role: 'user' })}`, /signature/i],
    ['a token not valid yet', async () => `Bearer ${await new SignJWT({ role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setSubject('a').setNotBefore('1h').setExpirationTime('2h').sign(key)}`, /not valid before \d{4}-.*clock/i],
    ['a token with a header extension the server does not know', async () => `Bearer ${signedByHand({ alg: 'HS256', crit: ['x-custom'], 'x-custom': 1 }, { sub: 'a', role: 'user', exp: Math.floor(Date.now() / 1000) + 3600 })}`, /"crit".*x-custom/i],
    ['a token with an unknown role', async () => `Bearer ${await new SignJWT({ role: 'root' }).setProtectedHeader({ alg: 'HS256' }).setSubject('a').setExpirationTime('1h').sign(key)}`, /"role"/i],
  ];
  it.each(cases)('%s', async (_name, header, message) => {
    const authorization = await header();
    const { status, json, text } = await post(threadsQuery, authorization === null ? {} : { authorization });
    expect(status).toBe(200);
    expect(json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(json.errors[0].message).toMatch(message);
    // The token itself never comes back.
    const token = authorization?.split(/\s+/).pop();
    if (token && token.length > 20) expect(text).not.toContain(token);
  });

  it('over graphql-ws too: the connection params name the cause on each subscription', async () => {
    // The context factory is shared by both transports; graphql-ws reaches it with connectionParams.
    const { contextFactory } = t.app.yoga.getEnveloped({ connectionParams: { authorization: `Bearer Bearer ${admin}` } } as never);
    const context = (await contextFactory()) as { principal: unknown; authFailure?: string };
    expect(context.principal).toBeNull();
    expect(context.authFailure).toMatch(/"Bearer" twice/);
  });
});

describe(`HTTP status codes follow GraphQL over HTTP (${backendName})`, () => {
  const failures: [string, string, string][] = [
    ['a document that does not parse', JSON.stringify({ query: '{ thread(' }), 'GRAPHQL_PARSE_FAILED'],
    ['a document that does not validate', JSON.stringify({ query: '{ threa(id: "x") { id } }' }), 'GRAPHQL_VALIDATION_FAILED'],
    [
      'variables that do not coerce',
      JSON.stringify({ query: 'mutation($i: ModelStartedInput!) { recordModelStarted(input: $i) { id } }', variables: { i: { lease: { runId: 'x', epoch: 1 }, operationId: 'm', sequence: 'one', model: 'x', observedAt: '2026-01-01T00:00:00Z' } } }),
      'BAD_USER_INPUT',
    ],
    // Refused during validation like the rest, so answered like them (no `data`: a 4xx).
    ['a document over the cost limit', JSON.stringify({ query: '{ threads(first: 100) { edges { node { runs(first: 500) { toolCalls { declaredBy { toolCalls { id } } } } } } } }' }), 'BAD_USER_INPUT'],
    ['a document over the depth limit', JSON.stringify({ query: '{ threads(first: 1) { edges { node { latestRun { thread { latestRun { thread { latestRun { thread { latestRun { id } } } } } } } } } } }' }), 'BAD_USER_INPUT'],
    ['a document over the token limit', JSON.stringify({ query: `{ threads(first: 1) { pageInfo { ${'hasNextPage '.repeat(5000)}} } }` }), 'BAD_USER_INPUT'],
  ];
  it.each(failures)('%s: 200 for application/json, 400 for application/graphql-response+json', async (_name, body, code) => {
    // application/graphql-response+json first: the first answer for a document is the one not
    // served from yoga's validation cache.
    for (const [accept, status, type] of [
      ['application/graphql-response+json', 400, 'application/graphql-response+json'],
      [undefined, 200, 'application/json'],
      ['application/json', 200, 'application/json'],
      ['*/*', 200, 'application/json'],
      ['application/graphql-response+json', 400, 'application/graphql-response+json'],
    ] as const) {
      const answer = await post(body, { authorization: `Bearer ${worker}`, ...(accept ? { accept } : {}) });
      expect({ accept, status: answer.status, code: answer.json.errors[0].extensions.code }).toEqual({ accept, status, code });
      expect(answer.type).toContain(type);
      expect(answer.json.data).toBeUndefined();
    }
  });

  it('a body that is not JSON is 400 BAD_REQUEST', async () => {
    const answer = await post('{', { authorization: `Bearer ${admin}` });
    expect(answer.status).toBe(400);
    expect(answer.json.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it("a body with NaN (Python's json.dumps of float('nan')) says where and why, in a short answer that neither echoes the body nor carries the parser's error", async () => {
    // A long value before the fault: the answer must not grow with the body.
    const body = `{"query":"{ __typename }","variables":{"note":"${'x'.repeat(200_000)}","score":NaN}}`;
    const answer = await post(body, { authorization: `Bearer ${worker}` });
    expect(answer.status).toBe(400);
    const [error] = answer.json.errors;
    expect(error.extensions).toEqual({ code: 'BAD_REQUEST' });
    expect(error.message).toMatch(/^The request body is not valid JSON: /);
    expect(error.message).toContain('NaN');
    expect(error.message).toContain('NaN and Infinity are not JSON');
    expect(answer.text.length).toBeLessThan(1000);
  });

  it('variables that are not JSON (a form) are answered in a short message, however long they are', async () => {
    const answer = await t.app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${admin}` },
      body: `query=%7B__typename%7D&variables=${encodeURIComponent(`{"note":"${'x'.repeat(200_000)}","score":NaN}`)}`,
    });
    const text = await answer.text();
    expect(answer.status).toBe(400);
    expect(JSON.parse(text).errors[0].message).toMatch(/^The "variables" parameter is not valid JSON: .*NaN and Infinity are not JSON/);
    expect(text.length).toBeLessThan(1000);
  });

  it('variables or extensions that are not JSON (GET, or a form) are 400 BAD_REQUEST naming the parameter', async () => {
    const answers = [
      await t.app.yoga.fetch('http://test/graphql?query=%7B__typename%7D&variables=notjson', { headers: { authorization: `Bearer ${admin}` } }),
      await t.app.yoga.fetch('http://test/graphql?query=%7B__typename%7D&extensions=%7B', { headers: { authorization: `Bearer ${admin}` } }),
      await t.app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${admin}` },
        body: 'query=%7B__typename%7D&variables=notjson',
      }),
    ];
    for (const [answer, parameter] of [[answers[0], 'variables'], [answers[1], 'extensions'], [answers[2], 'variables']] as const) {
      const json = await answer!.json();
      expect({ status: answer!.status, code: json.errors[0].extensions.code }).toEqual({ status: 400, code: 'BAD_REQUEST' });
      expect(json.errors[0].message).toMatch(new RegExp(`^The "${parameter}" parameter is not valid JSON`));
    }
  });

  it("a body without a query (curl -d's default form type) is 400 BAD_REQUEST saying how to send one", async () => {
    const answer = await post(threadsQuery, { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${admin}` });
    expect(answer.status).toBe(400);
    expect(answer.json.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(answer.json.errors[0].message).toMatch(/^No GraphQL query in the request: .*Content-Type: application\/json.*application\/x-www-form-urlencoded/);
    const empty = await post('{"variables": {}}', { authorization: `Bearer ${admin}` });
    expect([empty.status, empty.json.errors[0].extensions.code]).toEqual([400, 'BAD_REQUEST']);
    expect(empty.json.errors[0].message).toMatch(/^No GraphQL query in the request/);
    const get = await t.app.yoga.fetch('http://test/graphql?variables=%7B%7D', { headers: { accept: 'application/json', authorization: `Bearer ${admin}` } });
    expect(get.status).toBe(400);
    expect((await get.json()).errors[0]).toEqual({ message: expect.stringMatching(/^No GraphQL query in the request: a GET carries it in the URL, as \?query=/), extensions: { code: 'BAD_REQUEST' } });
  });

  it("an automatic persisted query's hash alone is PERSISTED_QUERY_NOT_SUPPORTED, so Apollo's and urql's links send the query", async () => {
    const hashOnly = { extensions: { persistedQuery: { version: 1, sha256Hash: 'ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38' } } };
    const get = await t.app.yoga.fetch(`http://test/graphql?extensions=${encodeURIComponent(JSON.stringify(hashOnly.extensions))}`, { headers: { authorization: `Bearer ${admin}` } });
    const answers = [await post(JSON.stringify(hashOnly), { authorization: `Bearer ${admin}` }), { status: get.status, json: await get.json() }];
    for (const answer of answers) {
      expect({ status: answer.status, errors: answer.json.errors }).toEqual({
        status: 400,
        errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }],
      });
    }
    // The link's next request, with the query and the hash, runs as any other.
    const full = await post(JSON.stringify({ query: '{ __typename }', ...hashOnly }), { authorization: `Bearer ${admin}` });
    expect(full.json).toEqual({ data: { __typename: 'Query' } });
  });

  it('an unsupported Content-Type is 415 with a JSON error naming it', async () => {
    const answer = await post('{ __typename }', { 'content-type': 'text/plain', authorization: `Bearer ${admin}` });
    expect(answer.status).toBe(415);
    expect(answer.type).toContain('json');
    expect(answer.json.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(answer.json.errors[0].message).toMatch(/text\/plain/);
    expect(answer.json.errors[0].message).toMatch(/application\/json/);
  });

  it('the 415 lists the media types a POST may have, and only those', async () => {
    const answer = await post('{"query": "{ __typename }"}', { 'content-type': 'application/graphql-response+json', authorization: `Bearer ${admin}` });
    expect(answer.status).toBe(415);
    const listed = /also accepted: (.*)$/.exec(answer.json.errors[0].message)![1]!.split(', ');
    expect(listed).not.toContain('application/graphql-response+json');
    expect(listed).toContain('multipart/form-data');
    for (const type of listed) {
      const bodies: Record<string, string | FormData> = {
        'application/x-www-form-urlencoded': 'query=%7B__typename%7D',
        'application/graphql': '{ __typename }',
        'multipart/form-data': multipart({ operations: '{"query": "{ __typename }"}', map: '{}' }),
      };
      const body = bodies[type] ?? '{"query": "{ __typename }"}';
      // fetch writes a multipart body's Content-Type itself, with its boundary.
      const headers: Record<string, string> = body instanceof FormData ? {} : { 'content-type': type };
      const response = await t.app.yoga.fetch('http://test/graphql', { method: 'POST', headers: { ...headers, authorization: `Bearer ${admin}` }, body });
      expect(await response.json(), type).toEqual({ data: { __typename: 'Query' } });
    }
  });

  it('a media type is matched whatever its case (RFC 9110)', async () => {
    const answer = await post('{"query": "{ __typename }"}', { 'content-type': 'APPLICATION/JSON; charset=UTF-8', authorization: `Bearer ${admin}` });
    expect([answer.status, answer.json]).toEqual([200, { data: { __typename: 'Query' } }]);
  });
});

describe(`messages name what the client sent (${backendName})`, () => {
  it('a very long value is quoted cut to 100 characters, with "…"', async () => {
    const thread = (await t.gql('mutation { createThread(input: { title: "long cursor" }) { id } }', {}, admin)).data.createThread.id;
    const longId = 'a'.repeat(5000);
    const stream = await t.app.yoga.fetch(
      `http://test/graphql?${new URLSearchParams({ query: 'subscription($t: ID!) { threadChanges(threadId: $t) { cursor } }', variables: JSON.stringify({ t: thread }) })}`,
      { headers: { accept: 'text/event-stream', authorization: `Bearer ${admin}`, 'last-event-id': longId } },
    );
    const event = /data: (.*)\n/.exec(await stream.text())![1]!;
    const [error] = JSON.parse(event).errors;
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.message).toBe(`Cursor "${'a'.repeat(100)}…" is malformed`);

    const unsupported = await post('{ __typename }', { 'content-type': `text/${'x'.repeat(5000)}`, authorization: `Bearer ${admin}` });
    expect(unsupported.status).toBe(415);
    expect(unsupported.json.errors[0].message).toContain(`"text/${'x'.repeat(95)}…"`);
    expect(unsupported.json.errors[0].message.length).toBeLessThan(400);
  });

  it('a variable error names the query\'s own variable', async () => {
    const { json } = await post(
      JSON.stringify({
        query: 'mutation($i: ModelStartedInput!) { recordModelStarted(input: $i) { id } }',
        variables: { i: { lease: { runId: 'x', epoch: 1 }, operationId: 'm', sequence: 'one', model: 'x', observedAt: '2026-01-01T00:00:00Z', clock: { clockId: 'c', nanos: '1' } } },
      }),
      { authorization: `Bearer ${worker}` },
    );
    expect(json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(json.errors[0].message).toMatch(/^Variable "\$i" got invalid value "one" at "i\.sequence"/);
    expect(json.errors[0].message).not.toMatch(/\$sequence/);
  });

  it('a null where the input requires a value names the variable and the field', async () => {
    const { json } = await post(
      JSON.stringify({ query: 'mutation($i: FinishRunInput!) { finishRun(input: $i) { status } }', variables: { i: { lease: { runId: 'x', epoch: null }, status: 'COMPLETED' } } }),
      { authorization: `Bearer ${worker}` },
    );
    expect(json.errors[0].message).toMatch(/^Variable "\$i" got invalid value null at "i\.lease\.epoch"/);
  });

  it('the depth limit reads as a depth limit, not a syntax error', async () => {
    const deep = 'query($id: ID!) { thread(id: $id) { runs { thread { runs { thread { runs { thread { runs { thread { runs { id } } } } } } } } } } }';
    const { json } = await post(JSON.stringify({ query: deep, variables: { id: 'x' } }), { authorization: `Bearer ${admin}` });
    expect(json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(json.errors[0].message).not.toMatch(/syntax/i);
    expect(json.errors[0].message).toMatch(/nested 11 levels deep; at most 10 are allowed/);
  });

  it('the alias limit too', async () => {
    const aliases = Array.from({ length: 16 }, (_, i) => `a${i}: thread(id: "x") { id }`).join(' ');
    const { json } = await post(JSON.stringify({ query: `{ ${aliases} }` }), { authorization: `Bearer ${admin}` });
    expect(json.errors[0].message).not.toMatch(/syntax/i);
    expect(json.errors[0].message).toMatch(/16 aliases; at most 15 are allowed/);
  });
});

describe(`subscriptions answer the same codes (${backendName})`, () => {
  const cases: [string, string, string][] = [
    ['a document that does not parse', 'subscription { threadChanges(', 'GRAPHQL_PARSE_FAILED'],
    ['a document that does not validate', 'subscription { threadChanges(threadId: "x") { cursr } }', 'GRAPHQL_VALIDATION_FAILED'],
    ['a document over the cost limit', 'subscription { toolActivity { running(first: 100) { run { thread { runs(first: 500) { toolCalls { id } } } } } } }', 'BAD_USER_INPUT'],
  ];
  let url: string;
  beforeAll(async () => {
    url = await t.app.start(0);
  });
  it.each(cases)('%s: an `error` frame over graphql-ws, one result then complete over SSE', async (_name, query, code) => {
    const client = wsClient(url, admin);
    const thrown = await (async () => {
      for await (const _result of client.iterate({ query })) return 'a result';
      return 'completed';
    })().catch((error: unknown) => error);
    await client.dispose();
    expect(thrown).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code }) })]);
    expect(JSON.stringify(thrown)).not.toMatch(/"http"/);

    const sse = await t.app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ query }),
    });
    expect(sse.status).toBe(200);
    const text = await sse.text();
    const result = JSON.parse(/event: next\ndata: (.*)\n/.exec(text)![1]!);
    expect(result.errors[0].extensions).toEqual(expect.objectContaining({ code }));
    expect(text).not.toMatch(/"http"/);
    expect(text).toMatch(/event: complete/);
  });

  it('an operationName the document does not hold: OPERATION_RESOLUTION_FAILURE over graphql-ws as over HTTP', async () => {
    const query = 'subscription A { toolActivity { at } } subscription B { toolActivity { at } }';
    const client = wsClient(url, admin);
    const thrown = await Promise.all(
      [undefined, 'C'].map((operationName) =>
        (async () => {
          for await (const _result of client.iterate({ query, operationName })) return 'a result';
          return 'completed';
        })().catch((error: unknown) => error),
      ),
    );
    await client.dispose();
    for (const errors of thrown) expect(errors).toEqual([expect.objectContaining({ extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } })]);
    const http = await post(JSON.stringify({ query, operationName: 'C' }), { authorization: `Bearer ${admin}` });
    expect(http.json.errors[0].extensions.code).toBe('OPERATION_RESOLUTION_FAILURE');
  });
});
