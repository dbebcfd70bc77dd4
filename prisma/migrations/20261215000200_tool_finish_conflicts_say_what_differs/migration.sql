-- A tool's finish refused as a CONFLICT with the end it recorded said "with a different result"
-- even when only its sequence differed (a retry that took a new sequence number, the same output)
-- (function only): it now names what differs, the sequence with both values, and what a retry
-- must resend.

/**
 * Closes the worker's RUNNING tool audit with the envelope `output`: a `status: "error"` envelope
 * (a controlled failure) is FAILED at once, its content the error, unless a bare error recorded
 * earlier is kept (it came first and explains better).
 */
CREATE OR REPLACE FUNCTION audit_tool_finished(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  audit message := audit_started_tool(leased, event);
  envelope jsonb := audit_json_field(event, 'output');
  failed boolean := envelope ->> 'status' = 'error';
  change record;
  differs text[];
BEGIN
  IF audit.status <> 'RUNNING' THEN
    -- What differs from the end it recorded, the sequence with both values (the output only by name: it may be large).
    differs := array_remove(ARRAY[
      CASE WHEN NOT audit_same_finished_sequence(audit, event) THEN format('sequence (recorded %s, sent %s)', coalesce(audit.finished_sequence::text, 'none'), event ->> 'sequence') END,
      CASE WHEN audit.output IS NULL OR audit_comparable_output(audit.output) IS DISTINCT FROM audit_comparable_output(envelope) THEN 'output' END], NULL);
    IF cardinality(differs) = 0 THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Tool call %s already ended (%s), and this finish differs in %s: a retry resends the finish as it was first sent',
      event ->> 'toolCallId', audit.status, array_to_string(differs, ' and ')));
  END IF;
  change := audit_next_change(leased.thread_id);
  UPDATE message m SET status = CASE WHEN failed THEN 'FAILED' ELSE 'COMPLETED' END::"AuditStatus", output = envelope,
      error = CASE WHEN failed AND m.error IS NULL THEN jsonb_build_object('message', audit_output_content(envelope)) ELSE m.error END,
      awaiting_run_terminal = false,
      (finished_at, finished_sequence, end_clock_id, end_clock_nanos, duration_ms) = (SELECT * FROM audit_end_fields(m, event)),
      change_cursor = change.cursor, changed_at = change.at
    WHERE m.id = audit.id RETURNING * INTO audit;
  PERFORM audit_mirror_onto_tool_call(audit);
  RETURN audit_written('audit', audit_message_json(audit));
END $$;
