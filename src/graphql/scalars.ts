import { GraphQLError, Kind, type ValueNode } from 'graphql';
import { countedPayload } from './answer-payloads.js';
import { parseInstant } from '../domain/instants.js';
import { nonFiniteNumberPath } from '../domain/json.js';
import { builder } from './builder.js';

const badInput = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

function parseDateTime(value: unknown): Date {
  const instant = typeof value === 'string' ? parseInstant(value) : null;
  if (!instant) {
    throw badInput('DateTime must be an RFC 3339 time with a time zone, from year 1 to 9999, e.g. 2026-11-29T21:00:00.123Z');
  }
  return instant;
}

builder.scalarType('DateTime', {
  description: 'An RFC 3339 timestamp with a time zone, e.g. 2026-11-29T21:00:00.123Z.',
  serialize: (value) => (value instanceof Date ? value.toISOString() : String(value)),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});

/** The longest 64-bit integer written out: -9223372036854775808. */
const MAX_BIGINT_CHARACTERS = 20;

function parseBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  // First: BigInt() of a long text costs more than linear time (8 MiB of digits: seconds).
  if (typeof value === 'string' && value.length > MAX_BIGINT_CHARACTERS) {
    throw badInput(`BigInt is longer than its limit of ${MAX_BIGINT_CHARACTERS} characters (a 64-bit integer, carried as a decimal string)`);
  }
  if (typeof value === 'string' && /^-?\d+$/.test(value)) {
    const parsed = BigInt(value);
    if (parsed >= -(2n ** 63n) && parsed < 2n ** 63n) return parsed;
  }
  throw badInput('BigInt must be a 64-bit integer, carried as a decimal string');
}

builder.scalarType('BigInt', {
  description: 'A 64-bit signed integer, carried as a decimal string.',
  serialize: (value) => String(value),
  parseValue: parseBigInt,
  parseLiteral: (ast) =>
    parseBigInt(ast.kind === Kind.STRING || ast.kind === Kind.INT ? ast.value : undefined),
});

function jsonLiteral(ast: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map((item) => jsonLiteral(item, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((field) => [field.name.value, jsonLiteral(field.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[ast.name.value] ?? null;
    default:
      throw badInput('Not a JSON value');
  }
}

function finiteJson(value: unknown): unknown {
  const path = nonFiniteNumberPath(value);
  if (path) throw badInput(`JSON numbers must be finite (1e400 and the like are out of range): ${path}`);
  return value;
}

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: countedPayload,
  parseValue: finiteJson,
  parseLiteral: (ast, variables) => finiteJson(jsonLiteral(ast, variables)),
});
