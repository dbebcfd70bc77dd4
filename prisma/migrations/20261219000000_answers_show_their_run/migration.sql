-- A lifecycle answer showed its run as read after the commit: a finishRun's toolCalls showed a
-- call the finish left PENDING as RUNNING when a resumed run started it before the answer was read,
-- and an audit's run showed a batch's later finishRun (the audit RUNNING, its run COMPLETED). Each
-- event's result now carries, as the event left them, the run of its audit (`run`), and a finish
-- its run's ToolCalls (`toolCalls`), in declaration order, payloads too.
-- Functions only: instant.

-- A ToolCall as a result carries it: its payloads as a read derives them (tool-call-projection.ts),
-- from its latest execution, none when that was interrupted or when it never ran. PL/pgSQL, as the
-- lifecycle functions' other helpers, to keep its plan (migration 20261203170000_lifecycle_cached_plans).
CREATE OR REPLACE FUNCTION audit_tool_call_json(tc tool_call) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  e record;
BEGIN
  SELECT x.status, x.input, x.output, x.error INTO e FROM message x
    WHERE x.tool_call_row_id = tc.id ORDER BY x.created_at DESC, x.id DESC LIMIT 1;
  IF NOT FOUND OR e.status = 'INTERRUPTED' THEN
    RETURN to_jsonb(tc) || jsonb_build_object('effective_input', NULL, 'output', NULL, 'error', NULL);
  END IF;
  RETURN to_jsonb(tc) || jsonb_build_object('effective_input', e.input, 'output', audit_output_content(e.output), 'error', e.error);
END $$;

CREATE OR REPLACE FUNCTION audit_apply_event(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  result jsonb;
  ran run;
  executed tool_call;
BEGIN
  CASE event ->> 'kind'
    WHEN 'claimRun' THEN RETURN audit_claim_run(worker, event);
    WHEN 'renewLease' THEN RETURN audit_renew_lease(worker, event);
    WHEN 'finishRun' THEN
      result := audit_finish_run(worker, event);
      -- In the order a read of the run's toolCalls gives (audit-reads.ts toolCallsOfRuns).
      RETURN result || jsonb_build_object('toolCalls', coalesce((
        SELECT jsonb_agg(audit_tool_call_json(tc) ORDER BY m.sequence, m.id, tc.position)
          FROM tool_call tc JOIN message m ON m.id = tc.declared_by_id
          WHERE tc.run_id = (result -> 'run' ->> 'id')::uuid), '[]'));
    WHEN 'modelStarted' THEN result := audit_model_started(worker, event);
    WHEN 'modelFinished' THEN result := audit_model_finished(worker, event);
    WHEN 'toolStarted' THEN result := audit_tool_started(worker, event);
    WHEN 'toolFinished' THEN result := audit_tool_finished(worker, event);
    WHEN 'toolError' THEN result := audit_tool_error(worker, event);
  END CASE;
  -- The run under this transaction's lock; a tool audit's ToolCall before any later event moves it.
  SELECT * INTO STRICT ran FROM run WHERE id = (result -> 'audit' ->> 'run_id')::uuid;
  result := result || jsonb_build_object('run', audit_run_json(ran));
  IF result -> 'audit' ->> 'tool_call_row_id' IS NULL THEN
    RETURN result;
  END IF;
  SELECT * INTO STRICT executed FROM tool_call WHERE id = (result -> 'audit' ->> 'tool_call_row_id')::uuid;
  RETURN result || jsonb_build_object('toolCall', audit_tool_call_json(executed));
END $$;
