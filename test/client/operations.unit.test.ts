import { existsSync, readFileSync } from 'node:fs';
import { buildSchema, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '@agent-audit/client';

// The printed schema once the server has one, else the contract it must keep.
const schemaFile = ['schema.graphql', '../shared/contract/schema.graphql'].find((file) => existsSync(file));

describe.skipIf(!schemaFile)('client operations', () => {
  const schema = buildSchema(readFileSync(schemaFile!, 'utf8'));

  it.each(Object.entries(OPERATIONS))('%s is valid against the schema', (_key, operation) => {
    const document = parse(operation.document);
    expect(validate(schema, document).map((error) => error.message)).toEqual([]);
  });

  it.each(Object.entries(OPERATIONS))('%s selects its named root field', (_key, operation) => {
    expect(operation.document).toMatch(new RegExp(`(query|mutation) ${operation.name}\\b[^{]*\\{\\s*${operation.field}\\(`));
  });
});
