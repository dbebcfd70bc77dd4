// The generated GraphQL types are committed (the client's build and its published files, the page's
// typecheck use them); this fails when they are not what codegen.ts makes of schema.graphql today.
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { generate } from '@graphql-codegen/cli';
import { describe, expect, it } from 'vitest';
import config from '../../codegen.js';
import { withLocalDocumentType } from '../../scripts/codegen-local-types.js';

describe('generated GraphQL types', () => {
  it('are in sync with schema.graphql and the documents (else: npm run codegen)', async () => {
    const outputs: { filename: string; content: string }[] = await generate({ ...config, silent: true }, false);
    const generated = outputs.map(({ filename, content }) => {
      const path = relative(process.cwd(), resolve(filename));
      return { path, content: path.startsWith('packages/client/') ? withLocalDocumentType(content) : content };
    });
    expect(generated.map(({ path }) => path).sort()).toEqual(
      ['packages/client/src', 'test', 'web/src'].flatMap((dir) => ['gql.ts', 'graphql.ts', 'index.ts'].map((file) => `${dir}/generated/graphql/${file}`)),
    );
    for (const { path, content } of generated) expect(readFileSync(path, 'utf8'), `${path} is out of date: run npm run codegen`).toBe(content);
  });
});
