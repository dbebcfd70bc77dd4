// docs/operations.md "Migrations" tells an operator, for each migration, whether it runs online and
// what it holds up while it runs (issue 43 item 2: "a migration that cannot be online says so").
// Kept complete and honest here: every migration has its row, in order; "online" is what the
// server will do with the file; a row that says "instant" holds no statement whose time grows
// with the data.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isOnline, readMigrations } from '../../src/db/migrate.js';

const ROOT = join(import.meta.dirname, '../..');

function documentedMigrations(): { name: string; online: string; holds: string }[] {
  const page = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const section = page.slice(page.indexOf('### Migrations'));
  return [...section.matchAll(/^\| `(\d{14}_\w+)` \| (\w+) \| (.+) \|$/gm)].map(([, name, online, holds]) => ({ name: name!, online: online!, holds: holds! }));
}

/** Statements whose time grows with the rows of a table that existed before the migration. */
function workOnExistingRows(sql: string): string[] {
  const code = sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    // A function's body ($$ … $$, $body$ … $body$) runs when the function is called, not when the migration creates it.
    .replace(/\$(\w*)\$[\s\S]*?\$\1\$/g, '$$$$');
  const created = new Set([...code.matchAll(/CREATE TABLE\s+"?(\w+)"?/gi)].map((match) => match[1]!.toLowerCase()));
  const statements = code.split(/;\s*(?:\n|$)/).map((statement) => statement.trim().replace(/\s+/g, ' '));
  return statements.filter((statement) => {
    const index = /^CREATE (?:UNIQUE )?INDEX (?!CONCURRENTLY)[^;]*? ON "?(\w+)"?/i.exec(statement);
    if (index) return !created.has(index[1]!.toLowerCase());
    const foreignKey = /^ALTER TABLE "?(\w+)"? ADD CONSTRAINT .* FOREIGN KEY/i.exec(statement);
    if (foreignKey) return !created.has(foreignKey[1]!.toLowerCase());
    return /^UPDATE |^INSERT INTO .* SELECT |^DELETE FROM |GENERATED ALWAYS AS .* STORED|ALTER COLUMN .* TYPE |SET NOT NULL|VALIDATE CONSTRAINT/i.test(statement);
  });
}

describe('docs/operations.md "Migrations"', () => {
  const migrations = readMigrations();
  const rows = documentedMigrations();

  it('has one row per migration, in the order they apply', () => {
    expect(rows.map((row) => row.name)).toEqual(migrations.map((migration) => migration.name));
  });

  it('says "yes" exactly for the migrations the server runs online', () => {
    const byName = new Map(rows.map((row) => [row.name, row.online]));
    expect(migrations.map((migration) => [migration.name, byName.get(migration.name)])).toEqual(
      migrations.map((migration) => [migration.name, isOnline(migration) ? 'yes' : 'no']),
    );
  });

  it('calls a migration instant only when none of its statements works through existing rows, and names what the others block', () => {
    const sqlOf = new Map(migrations.map((migration) => [migration.name, migration.sql]));
    const claims = rows
      .filter((row) => row.online === 'no')
      .map((row) => ({ name: row.name, blocks: /\bblocks\b/.test(row.holds), heavy: workOnExistingRows(sqlOf.get(row.name) ?? '').length > 0 }));
    expect(claims.filter((claim) => claim.heavy !== claim.blocks)).toEqual([]);
    // The checker itself finds what the issue met: the trigram index build and the table rewrite.
    expect(claims.find((claim) => claim.name === '20261201200000_audit_search')?.heavy).toBe(true);
    expect(claims.find((claim) => claim.name === '20261201230000_audit_payload_sizes')?.heavy).toBe(true);
    expect(claims.find((claim) => claim.name === '20261202120000_stream_session_revocation')?.heavy).toBe(false);
    expect(workOnExistingRows('CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n  UPDATE thread SET title = NULL;\nEND $$;')).toEqual([]);
  });
});
