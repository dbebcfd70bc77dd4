// A migration that landed is never edited: a database it migrated keeps its checksum, and a later
// version refuses to start on it ("edited after it was applied", src/db/migrate.ts). A change to
// the schema is a new migration. Each migration file is compared with the one its first commit added.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/db/migrate.js';

const REPO_ROOT = join(import.meta.dirname, '../..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

/**
 * Edited before this test held them: a database migrated by one of their earlier versions (on a
 * commit between two of them) refuses to start, and only a new database takes it.
 */
const EDITED_BEFORE_THIS_TEST = new Set([
  '20261129220000_init',
  '20261201210000_export_queue',
  '20261202100000_flat_read_indexes',
  '20261202130000_database_identity',
  '20261203040000_tool_call_counts',
  '20261203100000_lifecycle_functions',
  '20261205000100_tool_call_owner',
  '20261206000000_lifecycle_events_of_workers',
  '20261207000000_tool_audit_ends',
  '20261208000000_tool_audit_failures',
  '20261212000000_one_cursor_update_per_call',
  '20261213000000_tool_start_refusals_say_where',
]);

describe('migrations that landed', () => {
  it('are as their first commit added them (a change is a new migration)', () => {
    const edited = readMigrations().flatMap(({ name, sql }) => {
      const file = `prisma/migrations/${name}/migration.sql`;
      const added = git('log', '--diff-filter=A', '--format=%H', '--', file).trim().split('\n').at(-1);
      // Not committed yet: a new migration, free to change until it lands.
      if (!added) return [];
      return git('show', `${added}:${file}`) === sql ? [] : [name];
    });
    expect(edited.filter((name) => !EDITED_BEFORE_THIS_TEST.has(name))).toEqual([]);
  });
});
