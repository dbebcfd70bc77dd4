/*
 * The one-way ToolCall projection: after a tool starts, only its audit writes the ToolCall's
 * execution fields (status and times), by audit_mirror_onto_tool_call (migration
 * 20261203100000_lifecycle_functions); the payloads stay on the audit and are read from there.
 */

/**
 * A ToolCall's payloads from its latest execution `e` (a message row, all NULL when it never
 * ran), read when asked for: the ToolCall keeps no copy of them (issue 44). An interrupted
 * call's are empty, as its status is the model's intent again. Its output is the content of the
 * raw tool output envelope (audit_output_content): the ToolCall never sees the rest.
 */
export const EXECUTION_PAYLOADS = (e: string) => `CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${e}.input END AS effective_input,
    CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE audit_output_content(${e}.output) END AS output,
    CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${e}.error END AS error`;
