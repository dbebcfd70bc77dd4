-- A LEASE_LOST refusal of a run that ended names how it ended (`extensions.runStatus`,
-- `LifecycleEventError.runStatus`): a worker may not read a run it no longer leases, and a
-- worker whose finishRun answer was lost learns from the resend's refusal whether its own finish
-- ended the run. The status travels as the refusal's HINT. Functions only: instant.

/** A named refusal whose run has ended, carrying the run's status. */
CREATE OR REPLACE FUNCTION audit_refuse(code text, message text, run_status text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'RF001', MESSAGE = message, DETAIL = code, HINT = run_status;
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
    PERFORM audit_refuse('LEASE_LOST', format('Run %s is %s, not RUNNING', leased.id, leased.status), leased.status::text);
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
 * Events applied in order, event i as worker workers[i], one result each: `{"ok": …}`, or
 * `{"refused": {code, message[, runStatus]}}` for an event a rule refused, which wrote nothing and
 * stops nothing. Any other error (a deadlock, an outage) fails the whole call. The runs of the
 * events are locked first, in id order, then their threads, in id order: the write path's lock
 * order, kept across the call.
 */
CREATE OR REPLACE FUNCTION audit_record_events_of(workers text[], events jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
  -- Arrays, so that the locks are taken by index whatever the planner guesses of a jsonb's length.
  run_ids uuid[] := ARRAY(SELECT DISTINCT (e.value ->> 'runId')::uuid FROM jsonb_array_elements(events) e);
  event jsonb;
  position bigint;
  refusal_code text;
  refusal_message text;
  refusal_run_status text;
BEGIN
  IF cardinality(workers) <> jsonb_array_length(events) THEN
    RAISE EXCEPTION 'audit_record_events_of: % workers for % events', cardinality(workers), jsonb_array_length(events);
  END IF;
  IF cardinality(run_ids) > 1 THEN -- one run's event locks its run, then its thread, by itself
    PERFORM 1 FROM run WHERE id = ANY (run_ids) ORDER BY id FOR UPDATE;
    PERFORM 1 FROM thread WHERE id = ANY (ARRAY(SELECT r.thread_id FROM run r WHERE r.id = ANY (run_ids))) ORDER BY id FOR NO KEY UPDATE;
  END IF;
  FOR event, position IN SELECT e.value, e.ordinality FROM jsonb_array_elements(events) WITH ORDINALITY e LOOP
    BEGIN
      RETURN NEXT jsonb_build_object('ok', audit_apply_event(workers[position], event));
    EXCEPTION WHEN SQLSTATE 'RF001' THEN
      GET STACKED DIAGNOSTICS refusal_code = PG_EXCEPTION_DETAIL, refusal_message = MESSAGE_TEXT, refusal_run_status = PG_EXCEPTION_HINT;
      RETURN NEXT jsonb_build_object('refused', jsonb_strip_nulls(jsonb_build_object('code', refusal_code, 'message', refusal_message,
        'runStatus', NULLIF(refusal_run_status, ''))));
    END;
  END LOOP;
END $$;
