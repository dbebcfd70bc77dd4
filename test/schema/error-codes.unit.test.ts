// One list of error codes: the contract's table (docs/semantics.md, "Errors") is the source; the
// server's domain errors, the TypeScript client and the Python client each keep that list, plus
// INTERNAL_SERVER_ERROR (the masked answer the GraphQL layer gives to anything else) in the clients.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_ERROR_CODES } from '../../packages/client/src/errors.js';
import { ERROR_CODES } from '../../src/domain/errors.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The codes of the contract's "Errors" table: its rows' first cells. */
function contractCodes(): string[] {
  const section = /^## Errors\n([\s\S]*?)^## /m.exec(read('docs/semantics.md'))![1]!;
  return [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]!);
}

/** The Python client's AUDIT_ERROR_CODES tuple, as written in its module. */
function pythonCodes(): string[] {
  const tuple = /^AUDIT_ERROR_CODES = \(([\s\S]*?)\)$/m.exec(read('clients/python/agent_audit/errors.py'))![1]!;
  return [...tuple.matchAll(/"([A-Z_]+)"/g)].map((match) => match[1]!);
}

describe('the error codes are one list', () => {
  const contract = contractCodes();

  it('the contract table lists them', () => {
    expect(contract.length).toBeGreaterThanOrEqual(10);
  });

  it("the server's domain errors have exactly the contract's codes", () => {
    expect([...ERROR_CODES].sort()).toEqual([...contract].sort());
  });

  it('the TypeScript client has the contract codes and INTERNAL_SERVER_ERROR, in the same order as the Python client', () => {
    expect([...AUDIT_ERROR_CODES].sort()).toEqual([...contract, 'INTERNAL_SERVER_ERROR'].sort());
    expect([...AUDIT_ERROR_CODES]).toEqual(pythonCodes());
  });

  it('the Python client has the contract codes and INTERNAL_SERVER_ERROR', () => {
    expect(pythonCodes().sort()).toEqual([...contract, 'INTERNAL_SERVER_ERROR'].sort());
  });
});
