import { getIntrospectionQuery, type IntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

/**
 * What a client's tooling shows (GraphiQL's documentation explorer, an IDE's hover, the JSDoc
 * graphql-codegen writes) is the served schema's descriptions: every name a client can use has one.
 */
describe('the served schema describes itself', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('every type, field, input field, argument and enum value has a description', async () => {
    const response = await t.gql<IntrospectionQuery>(getIntrospectionQuery({ inputValueDeprecation: true }));
    expect(response.errors).toBeUndefined();
    const missing: string[] = [];
    const check = (description: string | null | undefined, name: string) => {
      if (!description?.trim()) missing.push(name);
    };
    for (const type of response.data!.__schema.types) {
      // GraphQL's own types and scalars are described by the specification.
      if (type.name.startsWith('__') || ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(type.name)) continue;
      check(type.description, type.name);
      if (type.kind === 'OBJECT' || type.kind === 'INTERFACE') {
        for (const field of type.fields) {
          check(field.description, `${type.name}.${field.name}`);
          for (const arg of field.args) check(arg.description, `${type.name}.${field.name}(${arg.name})`);
        }
      }
      if (type.kind === 'INPUT_OBJECT') for (const field of type.inputFields) check(field.description, `${type.name}.${field.name}`);
      if (type.kind === 'ENUM') for (const value of type.enumValues) check(value.description, `${type.name}.${value.name}`);
    }
    expect(missing).toEqual([]);
  });
});
