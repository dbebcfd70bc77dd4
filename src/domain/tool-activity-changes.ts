import type { Sql } from '../db/sql.js';

/**
 * How late a tool audit's change may commit after its time stamp and still be noticed by the next
 * poll: a change's time (`created_at` of a start, `changed_at` of an end) is taken inside its
 * transaction, so it can commit after a poll that ran later than that time. Later commits (a
 * transaction stalled this long between its stamp and its commit) wait for the idle view.
 */
export const LATE_COMMIT_MS = 5000;

/** How many of an owner's tool audits started (still running) or ended after a bound. */
export interface ToolAuditChangeCount {
  running: number;
  ended: number;
}

/** One poll: per owner, the counts after the previous poll's bound and after this one's (`bound`). */
export interface ToolAuditChangePoll {
  bound: Date;
  byOwner: Map<string, { sincePrevious: ToolAuditChangeCount; sinceBound: ToolAuditChangeCount }>;
}

/**
 * The owners' tool audits that started or ended after `previousBound` and after this poll's bound
 * (the database's clock less LATE_COMMIT_MS), in one statement. An owner's counts after a bound
 * only grow while that bound is recent, as changes stamped after it commit: so the counts after
 * the previous bound, compared with what the previous poll counted after it, tell which owners
 * changed meanwhile, without a row every writer would update. Each count is a range read, keyed
 * by the owner, then the time, of the last seconds only, where the view reads the same audits: the
 * running audits' partial index (migration 20261202110000_tool_activity) and the ends' copies
 * (tool_audit_end, 20261207000000_tool_audit_ends). The cost follows the recent writes, never the
 * owner's history.
 */
const POLL = `WITH b AS (SELECT statement_timestamp() - make_interval(secs => $3::int / 1000.0) AS bound)
SELECT o.owner_id, b.bound, r.previous AS running_previous, r.next AS running_next, e.previous AS ended_previous, e.next AS ended_next
FROM unnest($1::text[]) AS o(owner_id) CROSS JOIN b
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE m.created_at > coalesce($2::timestamptz, b.bound))::int AS previous, count(*) FILTER (WHERE m.created_at > b.bound)::int AS next
  FROM message m WHERE m.owner_id = o.owner_id AND m.message_type = 'tool_audit' AND m.status = 'RUNNING'
    AND m.created_at > least(coalesce($2::timestamptz, b.bound), b.bound)) r
CROSS JOIN LATERAL (
  SELECT count(*) FILTER (WHERE m.changed_at > coalesce($2::timestamptz, b.bound))::int AS previous, count(*) FILTER (WHERE m.changed_at > b.bound)::int AS next
  FROM tool_audit_end m WHERE m.owner_id = o.owner_id AND m.changed_at > least(coalesce($2::timestamptz, b.bound), b.bound)) e`;

type PollRow = {
  ownerId: string;
  bound: Date;
  runningPrevious: number;
  runningNext: number;
  endedPrevious: number;
  endedNext: number;
};

export async function pollToolAuditChanges(sql: Sql, ownerIds: readonly string[], previousBound: Date | null): Promise<ToolAuditChangePoll> {
  const rows = await sql.query<PollRow>(POLL, [ownerIds, previousBound, LATE_COMMIT_MS]);
  const byOwner: ToolAuditChangePoll['byOwner'] = new Map();
  for (const row of rows) {
    byOwner.set(row.ownerId, {
      sincePrevious: { running: row.runningPrevious, ended: row.endedPrevious },
      sinceBound: { running: row.runningNext, ended: row.endedNext },
    });
  }
  return { bound: rows[0]?.bound ?? previousBound ?? new Date(0), byOwner };
}

/**
 * Which owners changed between two polls: those whose counts after the previous bound differ
 * from what the previous poll counted after it (an owner it did not poll counted nothing). A start
 * and an end after the bound never cancel out: an end moves a row from `running` to `ended`.
 */
export function changedOwners(poll: ToolAuditChangePoll, counted: ReadonlyMap<string, ToolAuditChangeCount>): string[] {
  const changed: string[] = [];
  for (const [ownerId, { sincePrevious }] of poll.byOwner) {
    const before = counted.get(ownerId) ?? { running: 0, ended: 0 };
    if (sincePrevious.running !== before.running || sincePrevious.ended !== before.ended) changed.push(ownerId);
  }
  return changed;
}
