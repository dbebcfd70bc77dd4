import type { Sql } from '../db/sql.js';

/**
 * A recursive CTE `name(id, …columns, step)`: the rows of `table` (as `alias`) meeting `range`,
 * newest first by id, one index probe each (`ORDER BY id DESC LIMIT 1` below the last row found),
 * at most `budget` of them (a number, or a parameter such as `$3`). Read lazily: a reader that
 * stops after a page stops the walk. Each probe's plan is the index walk whatever the statistics
 * say: a single `ORDER BY id DESC LIMIT budget` over the matches, once analysed, was planned as
 * reading and sorting every match.
 *
 * With `bytes` (SQL on `alias`: what a row weighs, e.g. its payloads' stored sizes), the CTE also
 * has a column `bytes`, the weight of the rows walked so far, and the walk takes no row once it
 * reaches `bytes.budget`: it reads at most one row past that weight.
 */
export function walkNewestFirst(
  name: string,
  table: string,
  alias: string,
  range: string,
  columns: string[],
  budget: number | string,
  bytes?: { of: string; budget: number },
): string {
  const selected = [`${alias}.id`, ...columns.map((column) => `${alias}.${column}`)].join(', ');
  const next = ['next.id', ...columns.map((column) => `next.${column}`)].join(', ');
  const weight = bytes ? `, (${bytes.of})::bigint AS bytes` : '';
  return `${name}(${['id', ...columns, 'step', ...(bytes ? ['bytes'] : [])].join(', ')}) AS (
       (SELECT ${selected}, 1${weight} FROM ${table} ${alias} WHERE ${range} ORDER BY ${alias}.id DESC LIMIT 1)
       UNION ALL
       SELECT ${next}, w.step + 1${bytes ? ', w.bytes + next.bytes' : ''} FROM ${name} w CROSS JOIN LATERAL (
         SELECT ${selected}${weight} FROM ${table} ${alias} WHERE ${range} AND ${alias}.id < w.id ORDER BY ${alias}.id DESC LIMIT 1) next
       WHERE w.step < ${budget}${bytes ? ` AND w.bytes < ${bytes.budget}` : ''}
     )`;
}

/**
 * After a walk, as its readers name what it found (`walked(id, hit)`, every row walked, with
 * `bytes` when the walk has a byte budget, and `walk_hits(id)`, its hits, at most `limit`):
 * whether it stopped at its `budget` of rows (or its `bytes` budget) without filling the page, so
 * that the rest of the matches must be read below it, at once.
 */
export const walkFellShort = (limit: string, budget: number, bytes?: number) =>
  `(SELECT CASE WHEN (SELECT count(*) FROM walk_hits) < ${limit} THEN (SELECT count(*) = ${budget}${
    bytes === undefined ? '' : ` OR max(bytes) >= ${bytes}`
  } FROM walked) ELSE false END)`;

/** The oldest id a walk read (`walked`): the rest of the matches lie below it. */
export const BELOW_WALK = `(SELECT id FROM walked ORDER BY id LIMIT 1)`;

/**
 * Whether a page's `after` (the id of the previous page's last row) names a row of `table` that
 * the same read could have returned: the owner's, in `threadId` when the read is within one
 * thread, of `name` when it reads one name (a name never changes), meeting `kind` (SQL on the row
 * alone). The other filters are not checked: a row a page returned may no longer match them (its
 * status moved on), and the next page still follows it. An id that names nothing of the owner's
 * (no thread, run, message or tool call of a thread of theirs) is taken too: the row a page
 * returned is gone with its deleted thread, and its place in the order (ids are UUIDv7, newest
 * first) is still where the next page starts. Another owner's row is such an id, so that a refusal
 * never tells that an id exists (SEMANTICS.md, "Principals": not revealed); the page below it
 * holds the owner's rows only. One probe of each primary key.
 */
export async function isPageAnchor(
  sql: Sql,
  rows: { table: 'message' | 'tool_call'; kind?: string },
  after: string,
  scope: { ownerId: string; threadId: string | null; name: string | null },
): Promise<boolean> {
  const params: unknown[] = [after.toLowerCase(), scope.ownerId];
  const conditions = ['id = $1::uuid', 'owner_id = $2'];
  if (scope.threadId !== null) conditions.push(`thread_id = $${params.push(scope.threadId)}::uuid`);
  if (scope.name !== null) conditions.push(`name = $${params.push(scope.name)}`);
  if (rows.kind) conditions.push(rows.kind);
  const owned = [
    'EXISTS (SELECT 1 FROM thread WHERE id = $1::uuid AND owner_id = $2)',
    ...['run', 'message', 'tool_call'].map((table) => `EXISTS (SELECT 1 FROM ${table} r JOIN thread t ON t.id = r.thread_id WHERE r.id = $1::uuid AND t.owner_id = $2)`),
  ];
  const [probe] = await sql.query<{ anchor: boolean; gone: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${rows.table} WHERE ${conditions.join(' AND ')}) AS anchor, NOT (${owned.join(' OR ')}) AS gone`,
    params,
  );
  return probe!.anchor || probe!.gone;
}
