import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

// Issue 42, item 6: a document nested thousands deep (a literal, a selection) is refused as a
// parse/limit error (400) before authentication, with one log line at most and no stack.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const deepDocuments = {
  'a list literal 3,000 deep': `{ threads(first: ${'['.repeat(3000)}1${']'.repeat(3000)}) { edges { node { id } } } }`,
  'an object literal 3,000 deep': `mutation { createThread(input: ${'{ title: '.repeat(1)}${'{a:'.repeat(3000)}1${'}'.repeat(3000)} }) { id } }`,
  'a selection 3,000 deep': `{ ${'threads { '.repeat(3000)}${'}'.repeat(3000)} }`,
  'a list type 3,000 deep': `query($v: ${'['.repeat(3000)}Int${']'.repeat(3000)}) { __typename }`,
};

describe(`documents nested thousands deep (${backendName})`, () => {
  it.each(Object.entries(deepDocuments))('%s: 400, no stack, at most one log line, before authentication', async (_name, query) => {
    const logged = [vi.spyOn(console, 'error'), vi.spyOn(console, 'warn'), vi.spyOn(console, 'log')];
    try {
      // A token that does not verify: the refusal comes before authentication is looked at.
      const response = await t.app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: 'Bearer not-a-token' },
        body: JSON.stringify({ query }),
      });
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body.errors).toHaveLength(1);
      expect(['GRAPHQL_PARSE_FAILED', 'BAD_USER_INPUT']).toContain(body.errors[0].extensions.code);
      expect(body.errors[0].message).toMatch(/nest|deep|token/i);
      expect(JSON.stringify(body)).not.toMatch(/RangeError|Maximum call stack|at .*\.(ts|js)/);
      const lines = logged.flatMap((spy) => spy.mock.calls).map((args) => args.map(String).join(' '));
      expect(lines.join('\n').split('\n').length <= 1 || lines.length === 0, lines.join('\n')).toBe(true);
    } finally {
      for (const spy of logged) spy.mockRestore();
    }
  });

  it('brackets inside strings, block strings and comments do not count', async () => {
    const admin = await t.token('deep-admin', 'superadmin');
    const deep = '{['.repeat(200); // 400 brackets, past the limit were they counted
    const query = `mutation { # ${deep}
      a: createThread(input: { title: "${deep}" }) { title }
      b: createThread(input: { title: """${deep} \\""" ${deep}""" }) { title } }`;
    const response = await t.gql(query, {}, admin);
    expect(response.errors).toBeUndefined();
    expect(response.data.a.title).toBe(deep);
    expect(response.data.b.title).toBe(`${deep} """ ${deep}`);
  });
});
