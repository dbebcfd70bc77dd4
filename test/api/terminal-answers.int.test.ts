// What an on-call engineer with curl and jq reads when a request is not quite what they meant: an
// answer that says what to change, never a plausible answer to another question, nor an empty one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { wsClient } from '../support/streams.js';

let t: TestApp;
let admin: string;
let threadId: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('oncall', 'superadmin');
  threadId = (await t.gql<{ createThread: { id: string } }>('mutation { createThread(input: { title: "incident" }) { id } }', {}, admin)).data!.createThread.id;
});
afterAll(() => t.close());

/** The app's address, listening from the first test that needs a WebSocket on. */
let address: string | undefined;
const listening = async () => (address ??= await t.app.start(0));

async function post(body: object, headers: Record<string, string> = {}) {
  const response = await t.app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type'), text };
}

describe(`an Accept header the answer cannot meet (${backendName})`, () => {
  it('a subscription asked for as JSON is 406 with a JSON body saying to ask for text/event-stream', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const answer = await post({ query: `subscription { toolStatusChanged(threadId: "${threadId}") { id } }` }, { accept });
      expect(answer.status).toBe(406);
      expect(answer.type).toMatch(/^application\/json/);
      const { errors } = JSON.parse(answer.text);
      expect(errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(errors[0].message).toContain(`Accept: ${accept}`);
      expect(errors[0].message).toMatch(/a subscription.*Accept: text\/event-stream.*curl -N/);
    }
  });

  it('a subscription POSTed with */* or no Accept (plain curl -d) is the SSE stream, as docs/subscriptions.md says', async () => {
    for (const accept of ['*/*', undefined]) {
      const response = await t.app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...(accept && { accept }) },
        body: JSON.stringify({ query: `subscription { toolStatusChanged(threadId: "${threadId}") { id } }` }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await response.body?.cancel();
    }
  });

  it('a query asked for as HTML is 406 naming the media types it answers in', async () => {
    const answer = await post({ query: '{ threads(first: 1) { edges { node { id } } } }' }, { accept: 'text/html' });
    expect(answer.status).toBe(406);
    const { errors } = JSON.parse(answer.text);
    expect(errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(errors[0].message).toMatch(/Accept: text\/html.*application\/json/);
  });
});

describe(`an operationName the document does not hold (${backendName})`, () => {
  it('names the operations the document holds', async () => {
    const answer = await post({ query: 'query Failures { threads(first: 1) { edges { node { id } } } } query Search { toolActivity { at } }', operationName: 'Failure' });
    const { errors } = JSON.parse(answer.text);
    expect(errors).toEqual([{ message: expect.stringMatching(/no operation named "Failure".*"Failures", "Search"/), extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } }]);
  });

  it('over graphql-ws too', async () => {
    const ws = wsClient(await listening(), admin);
    try {
      const thrown = await (async () => {
        for await (const _result of ws.iterate({ query: 'subscription Live { toolActivity { at } }', operationName: 'Liv' })) return 'a result';
        return 'completed';
      })().catch((error: unknown) => error);
      expect(thrown).toEqual([expect.objectContaining({ message: expect.stringMatching(/no operation named "Liv" \(it holds "Live"\)/) })]);
    } finally {
      await ws.dispose();
    }
  });

  it('several operations and no operationName: says to send one', async () => {
    const answer = await post({ query: 'query A { toolActivity { at } } query B { toolActivity { at } }' });
    expect(JSON.parse(answer.text).errors[0].message).toMatch(/2 operations \("A", "B"\).*operationName/);
  });

  it('an anonymous operation with an operationName', async () => {
    const answer = await post({ query: '{ toolActivity { at } }', operationName: 'Activity' }, { accept: 'text/event-stream' });
    expect(answer.text).toMatch(/no operation named \\"Activity\\" \(it holds an anonymous query\)/);
  });
});

describe(`a value written in the document that does not coerce (${backendName})`, () => {
  const screenshot = 'x'.repeat(1024 * 1024);

  it('quotes the literal cut, as a variable value is, and keeps the reason', async () => {
    for (const query of [
      `mutation { appendMessage(input: "${screenshot}") { id } }`,
      `mutation { appendMessage(input: { threadId: "${threadId}", role: "${screenshot}", content: 1 }) { id } }`,
      `{ threads(first: "${screenshot}") { edges { node { id } } } }`,
    ]) {
      const answer = await post({ query });
      expect(answer.text.length).toBeLessThan(1000);
      const { errors } = JSON.parse(answer.text);
      expect(errors).toEqual([
        { message: expect.stringMatching(/(found|value:) "x{99}…/), locations: [expect.any(Object)], extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
      ]);
    }
  });

  it('over graphql-ws too', async () => {
    const ws = wsClient(await listening(), admin);
    try {
      const thrown = await (async () => {
        for await (const _result of ws.iterate({ query: `subscription { toolStatusChanged(threadId: { id: "${'x'.repeat(300)}" }) { id } }` })) return 'a result';
        return 'completed';
      })().catch((error: unknown) => error);
      expect(thrown).toEqual([expect.objectContaining({ message: expect.stringMatching(/value: \{id: "x{90,99}…$/) })]);
    } finally {
      await ws.dispose();
    }
  });

  it('a short literal still comes back whole', async () => {
    const { errors } = JSON.parse((await post({ query: '{ threads(first: "ten") { edges { node { id } } } }' })).text);
    expect(errors[0].message).toBe('Int cannot represent non-integer value: "ten"');
  });
});

describe(`a field the type does not have (${backendName})`, () => {
  it('suggests the field meant: the schema is public anyway (introspection, GraphiQL, schema.graphql)', async () => {
    const { errors } = JSON.parse((await post({ query: `{ threadAudits(threadId: "${threadId}") { item { __typename } } }` })).text);
    expect(errors).toEqual([expect.objectContaining({ message: 'Cannot query field "item" on type "ThreadAudits". Did you mean "items"?', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })]);
  });

  it('introspection answers without a token: hiding suggestions would hide nothing', async () => {
    const answer = await t.app.yoga.fetch('http://test/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __type(name: "ThreadAudits") { fields { name } } }' }) });
    expect(JSON.stringify(await answer.json())).toContain('"items"');
  });
});
