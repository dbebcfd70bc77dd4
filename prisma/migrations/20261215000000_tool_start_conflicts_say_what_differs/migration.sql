-- A tool start refused as a CONFLICT with what it had recorded said only "a different name, input
-- or sequence" (function only): it now names what differs, the name and the sequence with both
-- values (a retry that took a new sequence number says so), and what a retry must resend.

/**
 * Opens the RUNNING tool audit bound to its declaration and moves the ToolCall to RUNNING. It
 * starts only while PENDING: an ended call never runs again, and a RUNNING one is being executed
 * by another run (a sibling resume of the same ancestor). An identical replay (name, sequence,
 * input) returns the existing audit unchanged, whatever its status.
 */
CREATE OR REPLACE FUNCTION audit_tool_started(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  audit message;
  declaration_id uuid;
  declaration tool_call;
  change record;
  redeclared_by text;
  running_in uuid;
  closed_by text;
  differs text[];
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'TOOL' AND m.operation_id = event ->> 'toolCallId';
  IF FOUND THEN
    IF audit.name = event ->> 'name' AND audit.sequence = (event ->> 'sequence')::bigint
        AND audit.input IS NOT DISTINCT FROM audit_json_field(event, 'effectiveInput') THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    -- A later model call of this run declared the id again: the start cannot be that declaration's.
    SELECT d.operation_id INTO redeclared_by FROM tool_call tc JOIN message d ON d.id = tc.declared_by_id
      WHERE tc.id = audit_declaring_tool_call(leased, event ->> 'toolCallId') AND tc.id <> audit.tool_call_row_id;
    IF FOUND THEN
      PERFORM audit_refuse('CONFLICT', format(
        'Tool call %s already ran in run %s (started at sequence %s, %s) for an earlier declaration: a tool call id runs once per run, so the declaration of model call %s cannot start in this run',
        event ->> 'toolCallId', leased.id, audit.sequence, audit.status, redeclared_by));
    END IF;
    -- What differs, with both values (the input only by name: it may be large), so that a retry that took a new sequence says so.
    differs := array_remove(ARRAY[
      CASE WHEN audit.name IS DISTINCT FROM event ->> 'name' THEN format('name (recorded "%s", sent "%s")', audit.name, event ->> 'name') END,
      CASE WHEN audit.sequence IS DISTINCT FROM (event ->> 'sequence')::bigint THEN format('sequence (recorded %s, sent %s)', audit.sequence, event ->> 'sequence') END,
      CASE WHEN audit.input IS DISTINCT FROM audit_json_field(event, 'effectiveInput') THEN 'effectiveInput' END], NULL);
    PERFORM audit_refuse('CONFLICT', format(
      'Tool call %s was already started with a different %s: a retry resends the start as it was first sent, with the same sequence and input',
      event ->> 'toolCallId', CASE WHEN cardinality(differs) > 1
        THEN array_to_string(differs[1:cardinality(differs) - 1], ', ') || ' and ' || differs[cardinality(differs)] ELSE differs[1] END));
  END IF;
  declaration_id := audit_declaring_tool_call(leased, event ->> 'toolCallId');
  SELECT * INTO declaration FROM tool_call WHERE id = declaration_id FOR UPDATE;
  IF declaration.status = 'RUNNING' THEN
    SELECT m.run_id INTO running_in FROM message m
      WHERE m.tool_call_row_id = declaration.id AND m.role = 'TOOL' AND m.status = 'RUNNING' LIMIT 1;
    PERFORM audit_refuse('INVALID_TRANSITION',
      format('Tool call %s is already running in run %s; a declared call runs in one run at a time', event ->> 'toolCallId', running_in));
  ELSIF declaration.status <> 'PENDING' THEN
    -- The closing reason (LEASE_EXPIRED, RUN_FAILED, ...) when the run's end closed it rather than the tool:
    -- it is on the audit that ended the call (the ToolCall keeps no payloads).
    SELECT m.error ->> 'code' INTO closed_by FROM message m
      WHERE m.tool_call_row_id = declaration.id AND m.role = 'TOOL' AND m.status <> 'INTERRUPTED' ORDER BY m.id DESC LIMIT 1;
    PERFORM audit_refuse('INVALID_TRANSITION', format('Tool call %s has already ended (%s%s)', event ->> 'toolCallId', declaration.status,
      coalesce(': ' || closed_by, '')));
  END IF;
  change := audit_next_change(leased.thread_id);
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input, tool_call_row_id,
      sequence, started_at, start_clock_id, start_clock_nanos, change_cursor, changed_at)
    VALUES ((event ->> 'rowId')::uuid, leased.thread_id, leased.id, 'TOOL', 'tool_audit', event ->> 'toolCallId', event ->> 'name',
      'RUNNING', audit_json_field(event, 'effectiveInput'), declaration.id, (event ->> 'sequence')::bigint,
      (event ->> 'observedAt')::timestamptz, event -> 'clock' ->> 'clockId', (event -> 'clock' ->> 'nanos')::bigint, change.cursor, change.at)
    RETURNING * INTO audit;
  PERFORM audit_mirror_onto_tool_call(audit);
  RETURN audit_written('audit', audit_message_json(audit));
END $$;
