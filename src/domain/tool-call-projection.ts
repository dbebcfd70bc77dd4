/*
 * The one-way ToolCall projection: after a tool starts, only its audit writes the ToolCall's
 * execution fields (status and times), by audit_mirror_onto_tool_call (migration
 * 20261203100000_lifecycle_functions); the payloads stay on the audit and are read from there.
 */

/**
 * A ToolCall's payloads from its latest execution `e` (a message row, all NULL when it never
 * ran), read when asked for: the ToolCall keeps no copy of them (issue 44). An interrupted
 * call's are empty, as its status is the model's intent again. Its output is the content of the
 * raw tool output envelope (audit_output_content): the ToolCall never sees the rest. Each is read
 * from the execution's columns `columns` (`value`), and its size (the bytes of its JSON text)
 * from `sizeColumns` (`bytes`: the audit's stored sizes, the output content's measured). A tool
 * event's and a finish's result derive them by the same rule in their own transaction
 * (audit_tool_call_json, migration 20261219000000_answers_show_their_run).
 */
export const EXECUTION_PAYLOADS = {
  effectiveInput: { columns: ['input'], value: (e: string) => `${e}.input`, sizeColumns: ['input_bytes'], bytes: (e: string) => `${e}.input_bytes` },
  output: {
    columns: ['output'],
    value: (e: string) => `audit_output_content(${e}.output)`,
    sizeColumns: ['output'],
    bytes: (e: string) => `octet_length(audit_output_content(${e}.output)::text)`,
  },
  error: { columns: ['error'], value: (e: string) => `${e}.error`, sizeColumns: ['error_bytes'], bytes: (e: string) => `${e}.error_bytes` },
} as const;

/** `expression` of the execution `e`, or NULL when the call was interrupted (it is the model's intent again). */
export const unlessInterrupted = (e: string, expression: string) => `CASE WHEN ${e}.status = 'INTERRUPTED' THEN NULL ELSE ${expression} END`;
