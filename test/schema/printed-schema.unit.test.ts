import { readFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema/index.js';

describe('schema.graphql', () => {
  it('is the printed schema (run `npm run schema:print` after changing the GraphQL layer)', () => {
    const committed = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(printSchema(schema) + '\n');
  });
});
