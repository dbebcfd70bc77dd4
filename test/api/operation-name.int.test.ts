// A document with several operations runs the one `operationName` names, every time (graphql-jit's
// envelop plugin caches one compiled operation per document, whichever was asked for first).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

it(`runs the operation operationName names (${backendName})`, async () => {
  const admin = await t.token('ada', 'superadmin');
  const document = `
    query Title($id: ID!) { thread(id: $id) { title } }
    query Count($id: ID!) { thread(id: $id) { messageCount } }
    mutation Create { createThread(input: { title: "two operations" }) { id } }`;
  const run = async (operationName: string, variables: Record<string, unknown> = {}) => {
    const response = await t.app.yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ query: document, operationName, variables }),
    });
    return response.json();
  };
  const id = (await run('Create')).data.createThread.id;
  for (let i = 0; i < 2; i++) {
    expect(await run('Title', { id })).toEqual({ data: { thread: { title: 'two operations' } } });
    expect(await run('Count', { id })).toEqual({ data: { thread: { messageCount: 0 } } });
  }
});
