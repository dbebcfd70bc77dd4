// GraphQL Code Generator (client preset): the types of the documents the client, the tests and the
// page send, from the printed schema. `npm run codegen` writes them; test/schema/codegen-sync.unit.test.ts
// fails when the committed files differ from what this config generates.
import type { CodegenConfig } from '@graphql-codegen/cli';

const scalars = (json: string) => ({
  BigInt: 'string',
  DateTime: 'string',
  JSON: json,
});

const preset = (json: string) =>
  ({
    preset: 'client',
    // Results as plain types (a fragment's fields are part of the result type).
    presetConfig: { fragmentMasking: false },
    config: {
      // Typed strings: nothing to parse or print at run time, so the client keeps no dependency.
      documentMode: 'string',
      enumsAsTypes: true,
      useTypeImports: true,
      strictScalars: true,
      scalars: scalars(json),
    },
  }) as const;

const config: CodegenConfig = {
  schema: 'schema.graphql',
  generates: {
    'packages/client/src/generated/graphql/': {
      documents: ['packages/client/src/operations.ts'],
      ...preset('import("../../json-value.js").JsonValue'),
      hooks: { afterOneFileWrite: ['tsx scripts/codegen-local-types.ts'] },
    },
    'test/generated/graphql/': {
      documents: ['test/support/lifecycle.ts'],
      ...preset('unknown'),
    },
    'web/src/generated/graphql/': {
      documents: ['web/src/queries.ts', 'web/src/activity-query.ts'],
      ...preset('unknown'),
    },
  },
  silent: true,
  // Relative imports with their .js extension, as NodeNext resolution wants them.
  emitLegacyCommonJSImports: false,
};

export default config;
