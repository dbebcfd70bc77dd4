import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as enums from '../../src/generated/prisma/enums.js';
import { getDatamodel } from '../../src/generated/pothos-types.js';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';

/**
 * The migrations are hand-written SQL (the Prisma CLI's engines cannot run here), so this test
 * keeps them and prisma/schema.prisma from drifting: tables, columns, types, nullability,
 * primary and unique keys, indexes and enum values of the migrated database must be exactly
 * what the Prisma datamodel describes.
 */

const PRISMA_SCHEMA = readFileSync(new URL('../../prisma/schema.prisma', import.meta.url), 'utf8');

/** `@db.*` native types and `@@index` lists are not in the generated datamodel: read them from the schema file. */
function modelBlock(model: string): string {
  const match = new RegExp(`model ${model} \\{([\\s\\S]*?)\\n\\}`).exec(PRISMA_SCHEMA);
  if (!match) throw new Error(`model ${model} not found in schema.prisma`);
  return match[1]!;
}
const nativeTypeOf = (model: string, field: string) =>
  new RegExp(`^\\s*${field}\\s+\\S+.*@db\\.(\\w+)`, 'm').exec(modelBlock(model))?.[1];
const indexesOf = (model: string) =>
  [...modelBlock(model).matchAll(/@@index\(\[([^\]]+)\]\)/g)].map((m) => m[1]!.split(',').map((s) => s.trim()));

function expectedUdt(model: string, field: { name: string; type: string; kind: string }): string {
  if (field.kind === 'enum') return field.type;
  const native = nativeTypeOf(model, field.name);
  if (native === 'Uuid') return 'uuid';
  if (native === 'Timestamptz') return 'timestamptz';
  const scalar: Record<string, string> = {
    String: 'text',
    Int: 'int4',
    BigInt: 'int8',
    Boolean: 'bool',
    DateTime: 'timestamp',
    Json: 'jsonb',
    Float: 'float8',
  };
  return scalar[field.type] ?? `unknown:${field.type}`;
}

/** A model's table and a field's column, as `@@map` and `@map` name them in the schema file. */
const tableOf = (model: string) => /@@map\("(\w+)"\)/.exec(modelBlock(model))?.[1] ?? model;
const columnOf = (model: string, field: string) => new RegExp(`^\\s*${field}\\s+\\S+.*@map\\("(\\w+)"\\)`, 'm').exec(modelBlock(model))?.[1] ?? field;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const query = <Row>(sql: string) => t.app.db.driver.query<Row>(sql);

describe(`migrated database vs Prisma datamodel (${backendName})`, () => {
  const models = Object.entries(getDatamodel().datamodel.models);

  it('has exactly the modelled tables', async () => {
    const tables = await query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`,
    );
    expect(tables.map((row) => row.table_name).sort()).toEqual(models.map(([name]) => tableOf(name)).sort());
  });

  it.each(models.map(([name]) => name))('%s: columns, types and nullability', async (model) => {
    const columns = await query<{ column_name: string; udt_name: string; is_nullable: string }>(
      `SELECT column_name, udt_name, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name = '${tableOf(model)}'`,
    );
    const actual = Object.fromEntries(columns.map((c) => [c.column_name, `${c.udt_name} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`]));
    const fields = getDatamodel().datamodel.models[model]!.fields.filter((f) => f.kind === 'scalar' || f.kind === 'enum');
    const expected = Object.fromEntries(
      fields.map((f) => [columnOf(model, f.name), `${expectedUdt(model, f)} ${f.isRequired ? 'NOT NULL' : 'NULL'}`]),
    );
    expect(actual).toEqual(expected);
  });

  // Indexes over expressions (the trigram search index) are beyond what Prisma can describe.
  it.each(models.map(([name]) => name))('%s: primary key, unique keys and indexes', async (model) => {
    const indexes = await query<{ columns: string; is_unique: boolean; is_primary: boolean }>(
      `SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns, i.indisunique AS is_unique, i.indisprimary AS is_primary
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
       WHERE c.relname = '${tableOf(model)}' AND i.indexprs IS NULL
       GROUP BY i.indexrelid, i.indisunique, i.indisprimary`,
    );
    const describe = (kind: string, fields: readonly string[]) => `${kind}(${fields.map((f) => columnOf(model, f)).join(',')})`;
    const datamodel = getDatamodel().datamodel.models[model]!;
    // A single-field @@unique is reported both as isUnique and as a unique index: count it once.
    const expected = [...new Set([
      describe('primary', datamodel.primaryKey?.fields ?? datamodel.fields.filter((f) => f.isId).map((f) => f.name)),
      ...datamodel.fields.filter((f) => f.isUnique).map((f) => describe('unique', [f.name])),
      ...datamodel.uniqueIndexes.map((u) => describe('unique', u.fields as string[])),
      ...indexesOf(model).map((fields) => describe('index', fields)),
    ])].sort();
    const actual = indexes
      .map((row) => `${row.is_primary ? 'primary' : row.is_unique ? 'unique' : 'index'}(${row.columns})`)
      .sort();
    expect(actual).toEqual(expected);
  });

  it('has exactly the modelled enums and values', async () => {
    const rows = await query<{ name: string; label: string }>(
      `SELECT t.typname AS name, e.enumlabel AS label FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid ORDER BY t.typname, e.enumsortorder`,
    );
    const actual: Record<string, string[]> = {};
    for (const row of rows) (actual[row.name] ??= []).push(row.label);
    const expected = Object.fromEntries(Object.entries(enums).map(([name, values]) => [name, Object.values(values)]));
    expect(actual).toEqual(expected);
  });

  it('records each migration once in Prisma’s own history table', async () => {
    const rows = await query<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations"`);
    expect(new Set(rows.map((row) => row.migration_name)).size).toBe(rows.length);
  });
});
