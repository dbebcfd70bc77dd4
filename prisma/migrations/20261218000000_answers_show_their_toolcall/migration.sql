-- A tool event's answer showed its ToolCall as read after the commit: a cancelRun that committed in
-- between showed the audit RUNNING and its ToolCall CANCELLED, one call in two states in one answer.
-- Each event's result now carries the ToolCall of its audit as the event left it (`toolCall`, as a
-- model call's finish carries its `declared` calls), its payloads too, read before any later event
-- of the call runs.
-- Functions only: instant.

CREATE OR REPLACE FUNCTION audit_apply_event(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  result jsonb;
BEGIN
  CASE event ->> 'kind'
    WHEN 'claimRun' THEN RETURN audit_claim_run(worker, event);
    WHEN 'renewLease' THEN RETURN audit_renew_lease(worker, event);
    WHEN 'modelStarted' THEN RETURN audit_model_started(worker, event);
    WHEN 'modelFinished' THEN RETURN audit_model_finished(worker, event);
    WHEN 'toolStarted' THEN result := audit_tool_started(worker, event);
    WHEN 'toolFinished' THEN result := audit_tool_finished(worker, event);
    WHEN 'toolError' THEN result := audit_tool_error(worker, event);
    WHEN 'finishRun' THEN RETURN audit_finish_run(worker, event);
  END CASE;
  -- Its payloads as a read derives them (tool-call-projection.ts): from its latest execution, none
  -- when that was interrupted; here in the event's own transaction.
  RETURN result || jsonb_build_object('toolCall', (
    SELECT to_jsonb(tc) || jsonb_build_object(
        'effective_input', CASE WHEN e.status = 'INTERRUPTED' THEN NULL ELSE e.input END,
        'output', CASE WHEN e.status = 'INTERRUPTED' THEN NULL ELSE audit_output_content(e.output) END,
        'error', CASE WHEN e.status = 'INTERRUPTED' THEN NULL ELSE e.error END)
      FROM tool_call tc CROSS JOIN LATERAL (SELECT x.status, x.input, x.output, x.error FROM message x
        WHERE x.tool_call_row_id = tc.id ORDER BY x.created_at DESC, x.id DESC LIMIT 1) e
      WHERE tc.id = (result -> 'audit' ->> 'tool_call_row_id')::uuid));
END $$;
