-- A model call's finish refused as a CONFLICT with the finish it recorded said only "already
-- ended differently" (function only): it now names what differs, the status and the sequence
-- with both values (a retry that took a new sequence number says so), and what a retry must resend.

/**
 * Closes the worker's RUNNING model audit and declares its tool calls (`toolCalls`: rowId, id,
 * name, args, in order) as PENDING ToolCalls. A replay compares the status, sequence, payloads
 * and the declarations, and writes nothing: a started call is never reset to PENDING.
 */
CREATE OR REPLACE FUNCTION audit_model_finished(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  calls jsonb := coalesce(event -> 'toolCalls', '[]'::jsonb);
  audit message;
  change record;
  declared jsonb;
  differs text[];
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'ASSISTANT' AND m.operation_id = event ->> 'operationId'
    FOR UPDATE;
  IF NOT FOUND THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('No model call %s was started in run %s', event ->> 'operationId', leased.id));
  END IF;
  IF audit.status <> 'RUNNING' THEN
    -- What differs from the finish it recorded, the status and the sequence with both values (the payloads only by name).
    differs := array_remove(ARRAY[
      CASE WHEN audit.status::text IS DISTINCT FROM event ->> 'status' THEN format('status (recorded %s, sent %s)', audit.status, event ->> 'status') END,
      CASE WHEN NOT audit_same_finished_sequence(audit, event) THEN format('sequence (recorded %s, sent %s)', coalesce(audit.finished_sequence::text, 'none'), event ->> 'sequence') END,
      CASE WHEN audit.output IS DISTINCT FROM audit_json_field(event, 'output') THEN 'output' END,
      CASE WHEN audit.error IS DISTINCT FROM audit_json_field(event, 'error') THEN 'error' END,
      CASE WHEN audit.usage IS DISTINCT FROM audit_json_field(event, 'usage') THEN 'usage' END,
      CASE WHEN (SELECT coalesce(jsonb_agg(jsonb_build_array(tc.tool_call_id, tc.name, tc.declared_input) ORDER BY tc.position), '[]')
             FROM tool_call tc WHERE tc.declared_by_id = audit.id)
          IS DISTINCT FROM (SELECT coalesce(jsonb_agg(jsonb_build_array(c.value ->> 'id', c.value ->> 'name', audit_json_field(c.value, 'args')) ORDER BY c.position), '[]')
             FROM jsonb_array_elements(calls) WITH ORDINALITY AS c(value, position)) THEN 'toolCalls' END], NULL);
    IF cardinality(differs) = 0 THEN
      -- The ToolCalls as they are now, without payloads (those are read from their audits when asked for).
      SELECT coalesce(jsonb_agg(to_jsonb(tc) - 'effective_input' - 'output' - 'error' ORDER BY tc.position), '[]') INTO declared
        FROM tool_call tc WHERE tc.declared_by_id = audit.id;
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'declared', declared, 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Model call %s already ended (%s), and this finish differs in %s: a retry resends the finish as it was first sent',
      event ->> 'operationId', audit.status, CASE WHEN cardinality(differs) > 1
        THEN array_to_string(differs[1:cardinality(differs) - 1], ', ') || ' and ' || differs[cardinality(differs)] ELSE differs[1] END));
  END IF;
  change := audit_next_change(leased.thread_id);
  UPDATE message m SET status = (event ->> 'status')::"AuditStatus", output = coalesce(audit_json_field(event, 'output'), m.output),
      error = coalesce(audit_json_field(event, 'error'), m.error), usage = coalesce(audit_json_field(event, 'usage'), m.usage),
      (finished_at, finished_sequence, end_clock_id, end_clock_nanos, duration_ms) = (SELECT * FROM audit_end_fields(m, event)),
      change_cursor = change.cursor, changed_at = change.at
    WHERE m.id = audit.id RETURNING * INTO audit;
  WITH inserted AS (
    INSERT INTO tool_call (id, thread_id, run_id, declared_by_id, position, tool_call_id, name, declared_input)
      SELECT (c.value ->> 'rowId')::uuid, audit.thread_id, audit.run_id, audit.id, (c.position - 1)::int, c.value ->> 'id',
        c.value ->> 'name', audit_json_field(c.value, 'args')
      FROM jsonb_array_elements(calls) WITH ORDINALITY AS c(value, position)
      RETURNING *)
  SELECT coalesce(jsonb_agg(to_jsonb(inserted) ORDER BY inserted.position), '[]') INTO declared FROM inserted;
  RETURN audit_written('audit', audit_message_json(audit)) || jsonb_build_object('declared', declared);
END $$;
