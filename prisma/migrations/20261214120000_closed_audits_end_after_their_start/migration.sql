-- An audit a run's end closed ended before it started when the worker's clock ran ahead of the
-- database's (function only): its start is the worker's reading (observedAt), its end the
-- database's instant of the run's end. A closed audit now ends at the later of the two.

/**
 * Ends run `run_id` (its row lock held by the caller: each run converges exactly once) with
 * `ending`, and closes every audit still open in it and their ToolCalls, by the closing table
 * (SEMANTICS.md, "Run terminal convergence"). One instant, the database clock's, for the run and
 * everything it closes, never before a closed audit's start (the worker's clock). Each closed
 * audit is a change, in sequence order, then the run. The worker that held the lease is kept as
 * `ended_lease_owner` (its LEASE_LOST names how the run ended).
 */
CREATE OR REPLACE FUNCTION audit_end_run(run_id uuid, ending text, error jsonb, state_messages jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  ended_at timestamptz := now();
  rule record;
  audit message;
  ended run;
  last_state jsonb;
  change record;
  changes jsonb := '[]';
BEGIN
  SELECT * INTO STRICT rule FROM (VALUES
      -- ending,         run status,   audits close as, complete bare errors from the final state, reason code
      ('COMPLETED',     'COMPLETED',   'ABANDONED',   true,  'RUN_COMPLETED'),
      ('FAILED',        'FAILED',      'FAILED',      true,  'RUN_FAILED'),
      ('LEASE_EXPIRED', 'FAILED',      'ABANDONED',   false, 'LEASE_EXPIRED'),
      ('CANCELLED',     'CANCELLED',   'CANCELLED',   false, 'RUN_CANCELLED'),
      ('INTERRUPTED',   'INTERRUPTED', 'INTERRUPTED', false, 'RUN_INTERRUPTED'))
    AS closing(ending, run_status, audit_status, reconciles_from_state, code)
  WHERE closing.ending = audit_end_run.ending;
  FOR audit IN SELECT * FROM message m WHERE m.run_id = audit_end_run.run_id AND m.status::text = 'RUNNING'
      AND m.message_type::text IN ('model_audit', 'tool_audit') ORDER BY m.sequence FOR UPDATE LOOP
    last_state := NULL;
    IF audit.awaiting_run_terminal AND rule.reconciles_from_state THEN
      -- The last state message for the call supersedes every earlier one; only an error supplies the FAILED output.
      SELECT s.value INTO last_state FROM jsonb_array_elements(state_messages) WITH ORDINALITY AS s(value, position)
        WHERE jsonb_typeof(s.value) = 'object' AND s.value -> 'tool_call_id' = to_jsonb(audit.operation_id)
        ORDER BY s.position DESC LIMIT 1;
      IF last_state ->> 'status' IS DISTINCT FROM 'error' THEN
        last_state := NULL;
      END IF;
    END IF;
    change := audit_next_change(audit.thread_id);
    -- Its start is the worker's reading: a worker clock ahead of the database's never makes it end before it started.
    UPDATE message m SET status = (CASE WHEN last_state IS NULL THEN rule.audit_status ELSE 'FAILED' END)::"AuditStatus",
        output = coalesce(last_state, m.output), finished_at = coalesce(m.finished_at, greatest(ended_at, m.started_at)), awaiting_run_terminal = false,
        -- A bare error already recorded is the better explanation; keep it.
        error = coalesce(m.error, jsonb_build_object('code', rule.code, 'message', format('Closed when the run ended (%s)', ending))),
        change_cursor = change.cursor, changed_at = change.at
      WHERE m.id = audit.id RETURNING * INTO audit;
    -- Every tool audit has its ToolCall; a run with one that lost it is never ended half-mirrored.
    IF audit.message_type = 'tool_audit' AND NOT audit_mirror_onto_tool_call(audit) THEN
      RAISE EXCEPTION 'Run %: the closed tool audit % has no ToolCall to mirror', run_id, audit.id;
    END IF;
    changes := changes || jsonb_build_array(jsonb_build_object('kind', 'audit', 'row', audit_message_json(audit)));
  END LOOP;
  SELECT * INTO STRICT ended FROM run WHERE id = run_id;
  change := audit_next_change(ended.thread_id);
  UPDATE run r SET status = rule.run_status::"RunStatus", finished_at = ended_at, error = coalesce(audit_end_run.error, r.error),
      ended_lease_owner = r.lease_owner, lease_owner = NULL, lease_expires_at = NULL, change_cursor = change.cursor, changed_at = change.at
    WHERE r.id = run_id RETURNING * INTO ended;
  RETURN jsonb_build_object('run', audit_run_json(ended),
    'changes', changes || jsonb_build_array(jsonb_build_object('kind', 'run', 'row', audit_run_json(ended))));
END $$;
