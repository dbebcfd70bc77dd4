import { describe, expect, it } from 'vitest';
import { schema } from '../../src/graphql/schema/index.js';

describe('authorization rules', () => {
  it('every root field declares an explicit authScopes rule', () => {
    const missing: string[] = [];
    for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
      for (const field of Object.values(root?.getFields() ?? {})) {
        const options = (field.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions;
        if (options?.authScopes === undefined) missing.push(`${root!.name}.${field.name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
