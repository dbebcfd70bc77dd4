import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import { auditThreadOrNotFound, requireAuditReader } from './access.js';
import { auditSummaryColumns, MAX_AUDITS, type AuditRow, type Timeline } from './audit-reads.js';
import { badInput } from './errors.js';
import { isUuid, rowId } from './ids.js';
import { notARunOfThread } from './runs.js';

/**
 * One run's audits, paged like the thread's timeline (readTimeline): the newest `limit` of them,
 * oldest first, older ones with `before`; in the same order (sequence, role, id), so a run's page
 * drops into a thread's timeline as it is; without payloads, as the thread's. For a debug UI that opens a long thread on its newest
 * page and loads a run's entries when the run is expanded (docs/debug-ui.md).
 */
export async function readRunTimeline(
  sql: Sql,
  principal: Principal,
  threadId: string,
  runId: string,
  limit: number | null | undefined,
  before?: string | null,
): Promise<Timeline> {
  requireAuditReader(principal);
  if (limit == null || limit < 1 || limit > MAX_AUDITS) throw badInput(`limit must be between 1 and ${MAX_AUDITS}`);
  const id = rowId(threadId, 'Thread');
  if (!isUuid(runId)) throw notARunOfThread();
  if (before != null && !isUuid(before)) throw badInput('before must be the id of an audit of this run');
  const rows = await sql.query<AuditRow & { timelineOwnerId: string; timelineCursor: string | null; timelineRunFound: boolean; timelineBeforeFound: boolean }>(
    RUN_TIMELINE,
    [id, limit + 1, before?.toLowerCase() ?? null, runId.toLowerCase()],
  );
  const [first] = rows;
  auditThreadOrNotFound(principal, first && { id, ownerId: first.timelineOwnerId }, threadId);
  if (!first!.timelineRunFound) throw notARunOfThread();
  if (!first!.timelineBeforeFound) throw badInput('before must be the id of an audit of this run');
  const newestFirst = first!.id === null ? [] : rows;
  return {
    threadId: id,
    items: newestFirst.slice(0, limit).reverse(),
    truncated: newestFirst.length > limit,
    cursor: BigInt(first!.timelineCursor ?? 0),
  };
}

/** The thread's row (one, with empty audit columns, when the run has none) joined to the run's newest audits before the anchor. */
const RUN_TIMELINE = `WITH anchor AS (
    SELECT m.sequence, m.role, m.id FROM message m
      WHERE m.id = $3::uuid AND m.run_id = $4::uuid AND m.message_type IN ('model_audit', 'tool_audit')
    UNION ALL SELECT NULL, NULL, NULL WHERE $3::uuid IS NULL)
  SELECT t.owner_id AS timeline_owner_id, t.change_cursor AS timeline_cursor, r.id IS NOT NULL AS timeline_run_found,
    EXISTS (SELECT 1 FROM anchor) AS timeline_before_found, a.*
  FROM thread t
  LEFT JOIN run r ON r.id = $4::uuid AND r.thread_id = t.id
  LEFT JOIN LATERAL (
    SELECT ${auditSummaryColumns()} FROM message m WHERE m.run_id = r.id AND m.message_type IN ('model_audit', 'tool_audit')
      AND ($3::uuid IS NULL OR (m.sequence, m.role, m.id) < (SELECT sequence, role, id FROM anchor))
    ORDER BY m.sequence DESC, m.role DESC, m.id DESC LIMIT $2) a ON true
  WHERE t.id = $1 AND t.deleted_at IS NULL
  ORDER BY a.sequence DESC, a.role DESC, a.id DESC`;
