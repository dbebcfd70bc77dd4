-- The tool-call ledger (issue 32, src/domain/tool-call-ledger.ts): newest first (ToolCall ids
-- are UUIDv7, time-ordered), within one thread, for one tool, or for one status (the running or
-- the never-run calls are few among many). Each index lets the read walk newest first and stop
-- after one page instead of sorting every matching call.
CREATE INDEX "tool_call_thread_id_id_idx" ON "tool_call"("thread_id", "id");

CREATE INDEX "tool_call_name_id_idx" ON "tool_call"("name", "id");

CREATE INDEX "tool_call_status_id_idx" ON "tool_call"("status", "id");
