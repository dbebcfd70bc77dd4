-- The write path's rules, each stated once (issue 45): one function per lifecycle event, and
-- audit_record_events, which applies a batch of them in order in one call. A function locks the
-- run, checks every rule, writes the event's rows and stamps them with the thread's change
-- cursors, and returns what it wrote or the identical row a replay finds; or it raises its named
-- refusal (SQLSTATE RF001, the contract's code in DETAIL, the message for the client in MESSAGE),
-- before it writes anything. Locks are taken in one order everywhere: the run row, then the audit
-- or ToolCall row, the thread row last.
--
-- Events come as one jsonb object each, as src/domain/lifecycle-events.ts builds them: `kind`,
-- `runId` and `epoch` (the lease), the event's fields by their GraphQL names; bigints as strings.
-- Results are jsonb: `audit` or `run` (the row, bigints as strings), `declared` (a model call's
-- ToolCalls), `changes` (the rows written, in cursor order; none for a replay).
-- Functions only: instant.

/** The one refusal: `code` is the contract's error code, `message` what the client reads. */
CREATE OR REPLACE FUNCTION audit_refuse(code text, message text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'RF001', MESSAGE = message, DETAIL = code;
END $$;

-- Rows as the results carry them: bigints as text (JSON numbers lose them past 2^53).
CREATE OR REPLACE FUNCTION audit_message_json(m message) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT to_jsonb(m) || jsonb_build_object('sequence', m.sequence::text, 'finished_sequence', m.finished_sequence::text,
    'start_clock_nanos', m.start_clock_nanos::text, 'end_clock_nanos', m.end_clock_nanos::text, 'change_cursor', m.change_cursor::text)
$$;

CREATE OR REPLACE FUNCTION audit_run_json(r run) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT to_jsonb(r) || jsonb_build_object('created_order', r.created_order::text, 'change_cursor', r.change_cursor::text)
$$;

/** A written row and its change; `lease_only` for a renewal (threadChanges shows it, runChanged does not). */
CREATE OR REPLACE FUNCTION audit_written(kind text, row_json jsonb, lease_only boolean DEFAULT false) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(kind, row_json, 'changes', jsonb_build_array(jsonb_build_object('kind', kind, 'row', row_json, 'leaseOnly', lease_only)))
$$;

/** A JSON field of an event: absent and JSON null are both SQL NULL (a JSON column stores no null). */
CREATE OR REPLACE FUNCTION audit_json_field(event jsonb, field text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT nullif(event -> field, 'null'::jsonb)
$$;

/**
 * The thread's next change cursor, under the thread row's lock (the statement's last lock, held
 * to commit: cursor order is the thread's commit order, src/domain/change-cursors.ts).
 */
CREATE OR REPLACE FUNCTION audit_next_change(thread uuid, OUT cursor bigint, OUT at timestamptz) LANGUAGE sql AS $$
  UPDATE thread SET change_cursor = change_cursor + 1 WHERE id = $1 RETURNING change_cursor, clock_timestamp()
$$;

/** The content of a raw tool output envelope: the ToolCall never sees the rest ("" when missing). */
CREATE OR REPLACE FUNCTION audit_output_content(output jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN $1 IS NULL THEN NULL
    ELSE coalesce(nullif(CASE WHEN jsonb_typeof($1) = 'object' THEN $1 -> 'content' END, 'null'::jsonb), '""'::jsonb) END
$$;

/**
 * The end of an observation on audit `m`: its time, sequence and clock reading. The one duration
 * formula: whole milliseconds between two readings of the same monotonic clock, never negative, at
 * most an int; none across clocks.
 */
CREATE OR REPLACE FUNCTION audit_end_fields(m message, event jsonb,
  OUT finished_at timestamptz, OUT finished_sequence bigint, OUT end_clock_id text, OUT end_clock_nanos bigint, OUT duration_ms int)
LANGUAGE sql STABLE AS $$
  SELECT (event ->> 'observedAt')::timestamptz, (event ->> 'sequence')::bigint, event -> 'clock' ->> 'clockId',
    (event -> 'clock' ->> 'nanos')::bigint,
    CASE WHEN m.start_clock_id = event -> 'clock' ->> 'clockId' AND m.start_clock_nanos IS NOT NULL
      THEN least(2147483647, greatest(0, ((event -> 'clock' ->> 'nanos')::bigint - m.start_clock_nanos) / 1000000))::int END
$$;

/** A replayed terminal may omit its sequence; one that names a different sequence differs. */
CREATE OR REPLACE FUNCTION audit_same_finished_sequence(m message, event jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT event ->> 'sequence' IS NULL OR (event ->> 'sequence')::bigint IS NOT DISTINCT FROM m.finished_sequence
$$;

/**
 * The one-way ToolCall projection: after a tool starts, only its audit writes the ToolCall's
 * execution fields (status and times; the payloads stay on the audit). An interrupted call is the
 * model's intent again (PENDING, execution fields empty): a resume may run it; an abandoned one
 * reads as FAILED. False when the audit has no ToolCall.
 */
CREATE OR REPLACE FUNCTION audit_mirror_onto_tool_call(a message) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  UPDATE tool_call tc SET
    status = (CASE a.status WHEN 'INTERRUPTED' THEN 'PENDING' WHEN 'ABANDONED' THEN 'FAILED' ELSE a.status::text END)::"ToolCallStatus",
    started_at = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.started_at END,
    finished_at = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.finished_at END,
    duration_ms = CASE WHEN a.status = 'INTERRUPTED' THEN NULL ELSE a.duration_ms END
  WHERE tc.id = a.tool_call_row_id;
  RETURN FOUND;
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
  IF leased.status <> 'RUNNING' THEN
    PERFORM audit_refuse('LEASE_LOST', format('Run %s is %s, not RUNNING', leased.id, leased.status));
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
 * back, its expiry extended as by the claim. Any other claim of a started run is refused.
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
      lease_expires_at = now() + make_interval(secs => (event ->> 'leaseSeconds')::int), started_at = coalesce(r.started_at, now()),
      change_cursor = change.cursor, changed_at = change.at
    WHERE r.id = target.id RETURNING * INTO target;
  RETURN audit_written('run', audit_run_json(target), NOT fresh);
END $$;

/** An unexpired lease extended; the epoch stays, so writes in flight remain valid. */
CREATE OR REPLACE FUNCTION audit_renew_lease(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  change record := audit_next_change(leased.thread_id);
BEGIN
  UPDATE run SET lease_expires_at = now() + make_interval(secs => (event ->> 'leaseSeconds')::int),
      change_cursor = change.cursor, changed_at = change.at
    WHERE id = leased.id RETURNING * INTO leased;
  RETURN audit_written('run', audit_run_json(leased), true);
END $$;

/** The RUNNING model audit; an identical replay (sequence, model, input) returns it, keeping the first observation. */
CREATE OR REPLACE FUNCTION audit_model_started(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  audit message;
  change record;
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'ASSISTANT' AND m.operation_id = event ->> 'operationId';
  IF FOUND THEN
    IF audit.sequence = (event ->> 'sequence')::bigint AND audit.name IS NOT DISTINCT FROM event ->> 'model'
        AND audit.input IS NOT DISTINCT FROM audit_json_field(event, 'input') THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'declared', '[]'::jsonb, 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Model call %s was already started with a different sequence, model or input', event ->> 'operationId'));
  END IF;
  change := audit_next_change(leased.thread_id);
  INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, input,
      sequence, started_at, start_clock_id, start_clock_nanos, change_cursor, changed_at)
    VALUES ((event ->> 'rowId')::uuid, leased.thread_id, leased.id, 'ASSISTANT', 'model_audit', event ->> 'operationId', event ->> 'model',
      'RUNNING', audit_json_field(event, 'input'), (event ->> 'sequence')::bigint, (event ->> 'observedAt')::timestamptz,
      event -> 'clock' ->> 'clockId', (event -> 'clock' ->> 'nanos')::bigint, change.cursor, change.at)
    RETURNING * INTO audit;
  -- A just-started model call has declared nothing yet.
  RETURN audit_written('audit', audit_message_json(audit)) || jsonb_build_object('declared', '[]'::jsonb);
END $$;

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
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'ASSISTANT' AND m.operation_id = event ->> 'operationId'
    FOR UPDATE;
  IF NOT FOUND THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('No model call %s was started in run %s', event ->> 'operationId', leased.id));
  END IF;
  IF audit.status <> 'RUNNING' THEN
    IF audit.status::text = event ->> 'status' AND audit_same_finished_sequence(audit, event)
        AND audit.output IS NOT DISTINCT FROM audit_json_field(event, 'output')
        AND audit.error IS NOT DISTINCT FROM audit_json_field(event, 'error')
        AND audit.usage IS NOT DISTINCT FROM audit_json_field(event, 'usage')
        AND (SELECT coalesce(jsonb_agg(jsonb_build_array(tc.tool_call_id, tc.name, tc.declared_input) ORDER BY tc.position), '[]')
             FROM tool_call tc WHERE tc.declared_by_id = audit.id)
          = (SELECT coalesce(jsonb_agg(jsonb_build_array(c.value ->> 'id', c.value ->> 'name', audit_json_field(c.value, 'args')) ORDER BY c.position), '[]')
             FROM jsonb_array_elements(calls) WITH ORDINALITY AS c(value, position)) THEN
      -- The ToolCalls as they are now, without payloads (those are read from their audits when asked for).
      SELECT coalesce(jsonb_agg(to_jsonb(tc) - 'effective_input' - 'output' - 'error' ORDER BY tc.position), '[]') INTO declared
        FROM tool_call tc WHERE tc.declared_by_id = audit.id;
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'declared', declared, 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Model call %s already ended differently', event ->> 'operationId'));
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

/**
 * The ToolCall a tool start binds to: the newest declaration of `tool_call_id` in the run itself
 * (by the declaring model call's sequence), else in its resume ancestors, nearest first. A broken
 * ancestry (a missing ancestor, one in another thread, a cycle) fails closed; it is never skipped.
 */
CREATE OR REPLACE FUNCTION audit_declaring_tool_call(leased run, tool_call_id text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  current_id uuid := leased.id;
  parent_id uuid := leased.resumed_from_id;
  visited uuid[] := ARRAY[leased.id];
  parent run;
  found_id uuid;
BEGIN
  LOOP
    SELECT tc.id INTO found_id FROM tool_call tc JOIN message d ON d.id = tc.declared_by_id
      WHERE tc.run_id = current_id AND tc.tool_call_id = audit_declaring_tool_call.tool_call_id
      ORDER BY d.sequence DESC, d.created_at DESC LIMIT 1;
    IF found_id IS NOT NULL THEN
      RETURN found_id;
    END IF;
    EXIT WHEN parent_id IS NULL;
    IF parent_id = ANY (visited) THEN
      PERFORM audit_refuse('INVALID_TRANSITION', format('The resume ancestry of run %s has a cycle at %s', leased.id, parent_id));
    END IF;
    visited := visited || parent_id;
    SELECT * INTO parent FROM run WHERE id = parent_id;
    IF NOT FOUND THEN
      PERFORM audit_refuse('INVALID_TRANSITION', format('Run %s resumes run %s, which does not exist', current_id, parent_id));
    END IF;
    IF parent.thread_id <> leased.thread_id THEN
      PERFORM audit_refuse('INVALID_TRANSITION', format('Run %s resumes run %s of another thread', current_id, parent_id));
    END IF;
    current_id := parent_id;
    parent_id := parent.resumed_from_id;
  END LOOP;
  PERFORM audit_refuse('MODEL_NOT_FOUND',
    format('No model call in run %s or its resume ancestry declared tool call %s', leased.id, audit_declaring_tool_call.tool_call_id));
  RETURN NULL;
END $$;

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
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'TOOL' AND m.operation_id = event ->> 'toolCallId';
  IF FOUND THEN
    IF audit.name = event ->> 'name' AND audit.sequence = (event ->> 'sequence')::bigint
        AND audit.input IS NOT DISTINCT FROM audit_json_field(event, 'effectiveInput') THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Tool call %s was already started with a different name, input or sequence', event ->> 'toolCallId'));
  END IF;
  declaration_id := audit_declaring_tool_call(leased, event ->> 'toolCallId');
  SELECT * INTO declaration FROM tool_call WHERE id = declaration_id FOR UPDATE;
  IF declaration.status = 'RUNNING' THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('Tool call %s is already running in another run', event ->> 'toolCallId'));
  ELSIF declaration.status <> 'PENDING' THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('Tool call %s has already ended (%s)', event ->> 'toolCallId', declaration.status));
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

/** The worker's tool audit of `toolCallId`, locked; INVALID_TRANSITION when it never started. */
CREATE OR REPLACE FUNCTION audit_started_tool(leased run, event jsonb) RETURNS message LANGUAGE plpgsql AS $$
DECLARE
  audit message;
BEGIN
  SELECT * INTO audit FROM message m WHERE m.run_id = leased.id AND m.role = 'TOOL' AND m.operation_id = event ->> 'toolCallId' FOR UPDATE;
  IF NOT FOUND THEN
    PERFORM audit_refuse('INVALID_TRANSITION', format('No tool call %s was started in run %s', event ->> 'toolCallId', leased.id));
  END IF;
  RETURN audit;
END $$;

/** Terminal replays compare the raw output with the late-filled `id` and `name` ignored. */
CREATE OR REPLACE FUNCTION audit_comparable_output(output jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof($1) = 'object' THEN $1 - 'id' - 'name' ELSE $1 END
$$;

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
BEGIN
  IF audit.status <> 'RUNNING' THEN
    IF audit.output IS NOT NULL AND audit_same_finished_sequence(audit, event)
        AND audit_comparable_output(audit.output) = audit_comparable_output(envelope) THEN
      RETURN jsonb_build_object('audit', audit_message_json(audit), 'changes', '[]'::jsonb);
    END IF;
    PERFORM audit_refuse('CONFLICT', format('Tool call %s already ended (%s) with a different result', event ->> 'toolCallId', audit.status));
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

/**
 * A bare error may be an interrupt: the observation is saved on the worker's RUNNING tool audit,
 * which stays RUNNING awaiting the run's verdict. The same error again is a replay.
 */
CREATE OR REPLACE FUNCTION audit_tool_error(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
  audit message := audit_started_tool(leased, event);
  change record;
BEGIN
  IF audit.status <> 'RUNNING' THEN
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

/**
 * Ends run `run_id` (its row lock held by the caller: each run converges exactly once) with
 * `ending`, and closes every audit still open in it and their ToolCalls, by the closing table
 * (SEMANTICS.md, "Run terminal convergence"). One instant, the database clock's, for the run and
 * everything it closes. Each closed audit is a change, in sequence order, then the run.
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
  FOR audit IN SELECT * FROM message m WHERE m.run_id = audit_end_run.run_id AND m.status = 'RUNNING'
      AND m.message_type IN ('model_audit', 'tool_audit') ORDER BY m.sequence FOR UPDATE LOOP
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
      lease_owner = NULL, lease_expires_at = NULL, change_cursor = change.cursor, changed_at = change.at
    WHERE r.id = run_id RETURNING * INTO ended;
  RETURN jsonb_build_object('run', audit_run_json(ended),
    'changes', changes || jsonb_build_array(jsonb_build_object('kind', 'run', 'row', audit_run_json(ended))));
END $$;

/** The worker's verdict on its leased run: the run ends and converges. */
CREATE OR REPLACE FUNCTION audit_finish_run(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  leased run := audit_leased_run(worker, event);
BEGIN
  RETURN audit_end_run(leased.id, event ->> 'status', audit_json_field(event, 'error'), coalesce(event -> 'stateMessages', '[]'));
END $$;

CREATE OR REPLACE FUNCTION audit_apply_event(worker text, event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  CASE event ->> 'kind'
    WHEN 'claimRun' THEN RETURN audit_claim_run(worker, event);
    WHEN 'renewLease' THEN RETURN audit_renew_lease(worker, event);
    WHEN 'modelStarted' THEN RETURN audit_model_started(worker, event);
    WHEN 'modelFinished' THEN RETURN audit_model_finished(worker, event);
    WHEN 'toolStarted' THEN RETURN audit_tool_started(worker, event);
    WHEN 'toolFinished' THEN RETURN audit_tool_finished(worker, event);
    WHEN 'toolError' THEN RETURN audit_tool_error(worker, event);
    WHEN 'finishRun' THEN RETURN audit_finish_run(worker, event);
  END CASE;
END $$;

/**
 * A batch: the events applied in order, one result each: `{"ok": …}`, or `{"refused": {code,
 * message}}` for an event a rule refused, which wrote nothing and stops nothing. Any other error
 * (a deadlock, an outage) fails the whole call. The runs of the batch are locked first, in id
 * order, then their threads, in id order: the write path's lock order, kept across the batch.
 */
CREATE OR REPLACE FUNCTION audit_record_events(worker text, events jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
  -- Arrays, so that the locks are taken by index whatever the planner guesses of a jsonb's length.
  run_ids uuid[] := ARRAY(SELECT DISTINCT (e.value ->> 'runId')::uuid FROM jsonb_array_elements(events) e);
  event jsonb;
  refusal_code text;
  refusal_message text;
BEGIN
  IF cardinality(run_ids) > 1 THEN -- one run's event locks its run, then its thread, by itself
    PERFORM 1 FROM run WHERE id = ANY (run_ids) ORDER BY id FOR UPDATE;
    PERFORM 1 FROM thread WHERE id = ANY (ARRAY(SELECT r.thread_id FROM run r WHERE r.id = ANY (run_ids))) ORDER BY id FOR NO KEY UPDATE;
  END IF;
  FOR event IN SELECT e.value FROM jsonb_array_elements(events) e LOOP
    BEGIN
      RETURN NEXT jsonb_build_object('ok', audit_apply_event(worker, event));
    EXCEPTION WHEN SQLSTATE 'RF001' THEN
      GET STACKED DIAGNOSTICS refusal_code = PG_EXCEPTION_DETAIL, refusal_message = MESSAGE_TEXT;
      RETURN NEXT jsonb_build_object('refused', jsonb_build_object('code', refusal_code, 'message', refusal_message));
    END;
  END LOOP;
END $$;
