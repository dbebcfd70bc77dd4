-- Replays and refusals that undid or told too much (functions, and one column added without a
-- default: instant).
-- - A claim resent with its claimId after a renewal cut the renewed lease back to the claim's
--   length: a replayed claim keeps the later of the lease's expiry and what it asks. (A renewal
--   still sets the expiry to now + leaseSeconds: the worker's own choice, shorter included.)
-- - A bare tool error resent after the tool's result closed the audit (a batch sent again as it
--   is) was a CONFLICT: the same error the audit kept, at a sequence not past its close, replays.
-- - A LEASE_LOST named how the run ended (runStatus) for a run that had not ended (QUEUED), and to a
--   worker that never held it: only the worker that held the lease when the run ended
--   (run.ended_lease_owner) learns how it ended.

ALTER TABLE run ADD COLUMN ended_lease_owner text;

/**
 * Ends run `run_id` (its row lock held by the caller: each run converges exactly once) with
 * `ending`, and closes every audit still open in it and their ToolCalls, by the closing table
 * (SEMANTICS.md, "Run terminal convergence"). One instant, the database clock's, for the run and
 * everything it closes. Each closed audit is a change, in sequence order, then the run. The
 * worker that held the lease is kept as `ended_lease_owner` (its LEASE_LOST names how the run ended).
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
    UPDATE message m SET status = (CASE WHEN last_state IS NULL THEN rule.audit_status ELSE 'FAILED' END)::"AuditStatus",
        output = coalesce(last_state, m.output), finished_at = coalesce(m.finished_at, ended_at), awaiting_run_terminal = false,
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

/**
 * The fence of every lifecycle write: the run, locked, RUNNING, leased by the worker at the
 * presented epoch and unexpired by the database clock. A run of a thread being deleted is no run.
 */
CREATE OR REPLACE FUNCTION audit_leased_run(worker text, event jsonb) RETURNS run LANGUAGE plpgsql AS $$
DECLARE
  leased run;
BEGIN
  SELECT * INTO leased FROM run WHERE id = (event ->> 'runId')::uuid FOR UPDATE;
  IF NOT FOUND OR EXISTS (SELECT 1 FROM thread t WHERE t.id = leased.thread_id AND t.deleted_at IS NOT NULL) THEN
    PERFORM audit_refuse('NOT_FOUND', format('Run %s not found', event ->> 'runId'));
  END IF;
  IF leased.status = 'QUEUED' THEN
    PERFORM audit_refuse('LEASE_LOST', format('Run %s is QUEUED, not RUNNING', leased.id));
  ELSIF leased.status <> 'RUNNING' AND leased.ended_lease_owner IS NOT DISTINCT FROM worker THEN
    PERFORM audit_refuse('LEASE_LOST', format('Run %s is %s, not RUNNING', leased.id, leased.status), leased.status::text);
  ELSIF leased.status <> 'RUNNING' THEN
    PERFORM audit_refuse('LEASE_LOST', format('Run %s is not RUNNING under your lease', leased.id));
  END IF;
  IF leased.lease_owner IS DISTINCT FROM worker THEN
    PERFORM audit_refuse('LEASE_LOST', format('The lease of run %s is held by another worker', leased.id));
  END IF;
  IF leased.lease_epoch <> (event ->> 'epoch')::int THEN
    PERFORM audit_refuse('LEASE_LOST', format('Lease epoch %s is stale; the current epoch is %s', event ->> 'epoch', leased.lease_epoch));
  END IF;
  IF leased.lease_expires_at <= now() THEN
    PERFORM audit_refuse('LEASE_EXPIRED', format('The lease of run %s has expired', leased.id));
  END IF;
  RETURN leased;
END $$;

/**
 * A claim: a QUEUED run becomes RUNNING under the worker's lease at the next epoch; the same
 * worker retrying the claim that took the current, unexpired lease (same claimId) gets that lease
 * back, its expiry extended as by the claim, never shortened. Any other claim of a started run is
 * refused.
 */
CREATE OR REPLACE FUNCTION audit_claim_run(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  target run;
  fresh boolean;
  change record;
BEGIN
  SELECT * INTO target FROM run WHERE id = (event ->> 'runId')::uuid FOR UPDATE;
  IF NOT FOUND OR EXISTS (SELECT 1 FROM thread t WHERE t.id = target.thread_id AND t.deleted_at IS NOT NULL) THEN
    PERFORM audit_refuse('NOT_FOUND', format('Run %s not found', event ->> 'runId'));
  END IF;
  fresh := target.status = 'QUEUED';
  IF NOT fresh AND NOT coalesce(target.status = 'RUNNING' AND target.claim_id = event ->> 'claimId' AND target.lease_owner = worker
      AND target.lease_expires_at > now(), false) THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('Run %s is %s; only a QUEUED run can be claimed', event ->> 'runId', target.status));
  END IF;
  change := audit_next_change(target.thread_id);
  UPDATE run r SET status = 'RUNNING', lease_owner = worker, claim_id = event ->> 'claimId',
      lease_epoch = CASE WHEN fresh THEN r.lease_epoch + 1 ELSE r.lease_epoch END,
      lease_expires_at = CASE WHEN fresh THEN now() + make_interval(secs => (event ->> 'leaseSeconds')::int)
        ELSE greatest(r.lease_expires_at, now() + make_interval(secs => (event ->> 'leaseSeconds')::int)) END,
      started_at = coalesce(r.started_at, now()), change_cursor = change.cursor, changed_at = change.at
    WHERE r.id = target.id RETURNING * INTO target;
  RETURN audit_written('run', audit_run_json(target), NOT fresh);
END $$;

/**
 * A bare error may be an interrupt: the observation is saved on the worker's RUNNING tool audit,
 * which stays RUNNING awaiting the run's verdict. The same error again is a replay, also once the
 * tool's result closed the audit (which keeps that error), at a sequence not past the close.
 */
CREATE OR REPLACE FUNCTION audit_tool_error(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  audit message := audit_started_tool(leased, event);
  change record;
BEGIN
  IF audit.status <> 'RUNNING' THEN
    IF audit.error = audit_json_field(event, 'error') AND coalesce((event ->> 'sequence')::bigint <= audit.finished_sequence, true) THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Tool call %s has already ended (%s)', event ->> 'toolCallId', audit.status));
  END IF;
  IF audit.awaiting_run_terminal THEN
    IF audit.error IS NOT DISTINCT FROM audit_json_field(event, 'error') AND audit_same_finished_sequence(audit, event) THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Tool call %s already recorded a different error', event ->> 'toolCallId'));
  END IF;
  change := audit_next_change(leased.thread_id);
  UPDATE message m SET error = coalesce(audit_json_field(event, 'error'), m.error), awaiting_run_terminal = true,
      (finished_at, finished_sequence, end_clock_id, end_clock_nanos, duration_ms) = (SELECT * FROM audit_end_fields(m, event)),
      change_cursor = change.cursor, changed_at = change.at
    WHERE m.id = audit.id RETURNING * INTO audit;
  PERFORM audit_mirror_onto_tool_call(audit);
  RETURN audit_written('audit', audit_message_json(audit));
END $$;
