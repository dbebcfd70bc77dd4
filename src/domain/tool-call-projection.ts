/*
 * The one-way ToolCall projection, in one place: after a tool starts, only its audit writes the
 * ToolCall's execution fields, always derived from the audit row as a whole. Every statement that
 * changes a tool audit ends with MIRROR_ONTO_TOOL_CALL over the rows it changed.
 */

/** The content of a raw tool output envelope `output` (SQL, a jsonb): the ToolCall never sees the rest ("" when missing). */
export const outputContent = (output: string) => `CASE WHEN ${output} IS NULL THEN NULL
  ELSE coalesce(nullif(CASE WHEN jsonb_typeof(${output}) = 'object' THEN ${output} -> 'content' END, 'null'::jsonb), '""'::jsonb) END`;

/**
 * A ToolCall's payloads from its latest execution `e` (a message row, all NULL when it never
 * ran), read when asked for: the ToolCall keeps no copy of them (issue 44). An interrupted
 * call's are empty, as its status is the model's intent again.
 */
export const EXECUTION_PAYLOADS = (e: string) => `CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${e}.input END AS effective_input,
    CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${outputContent(`${e}.output`)} END AS output,
    CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${e}.error END AS error`;

/**
 * Mirrors the tool audits of `source` (a CTE or table of message rows) onto their ToolCalls: the
 * status and times; the payloads stay on the audit (EXECUTION_PAYLOADS). An interrupted call is
 * the model's intent again (PENDING, execution fields empty): a resume may run it; an abandoned
 * one reads as FAILED.
 */
export const MIRROR_ONTO_TOOL_CALL = (source: string) => `UPDATE tool_call tc SET
    status = (CASE a.status WHEN 'INTERRUPTED' THEN 'PENDING' WHEN 'ABANDONED' THEN 'FAILED' ELSE a.status::text END)::"ToolCallStatus",
    started_at = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.started_at END,
    finished_at = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.finished_at END,
    duration_ms = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.duration_ms END
  FROM ${source} a WHERE tc.id = a.tool_call_row_id`;
