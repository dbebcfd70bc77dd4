// The client preset's typed strings `implements DocumentTypeDecoration`, imported from
// @graphql-typed-document-node/core: a types-only package that has graphql as its peer. The
// client declares that one interface itself (the same shape, so its documents still fit every
// tool that takes a typed document) and needs no package for it.
//
//   tsx scripts/codegen-local-types.ts <generated file>...   (codegen.ts runs it after writing)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const IMPORT = "import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';";
const LOCAL = `/** The typed-document interface of @graphql-typed-document-node/core, declared here so the client needs no package for it. */
interface DocumentTypeDecoration<TResult, TVariables> {
  __apiType?: (variables: TVariables) => TResult;
}`;

export function withLocalDocumentType(content: string): string {
  return content.replace(IMPORT, LOCAL);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of process.argv.slice(2)) writeFileSync(file, withLocalDocumentType(readFileSync(file, 'utf8')));
}
