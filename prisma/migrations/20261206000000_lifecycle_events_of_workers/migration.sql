-- Single lifecycle events of several workers applied in one call (issue 45): while half the
-- server's pool carries calls of single events, the events that arrive meanwhile go together in
-- the next call (src/domain/lifecycle-events.ts), each applied as its own worker. audit_record_events_of
-- is the batch's loop with a worker per event; audit_record_events, one worker's batch, is now
-- that loop with the worker repeated, so the loop stays written once. Functions only: instant.

/**
 * Events applied in order, event i as worker workers[i], one result each: `{"ok": …}`, or
 * `{"refused": {code, message}}` for an event a rule refused, which wrote nothing and stops
 * nothing. Any other error (a deadlock, an outage) fails the whole call. The runs of the events are
 * locked first, in id order, then their threads, in id order: the write path's lock order, kept
 * across the call.
 */
CREATE OR REPLACE FUNCTION audit_record_events_of(workers text[], events jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
  -- Arrays, so that the locks are taken by index whatever the planner guesses of a jsonb's length.
  run_ids uuid[] := ARRAY(SELECT DISTINCT (e.value ->> 'runId')::uuid FROM jsonb_array_elements(events) e);
  event jsonb;
  position bigint;
  refusal_code text;
  refusal_message text;
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
      GET STACKED DIAGNOSTICS refusal_code = PG_EXCEPTION_DETAIL, refusal_message = MESSAGE_TEXT;
      RETURN NEXT jsonb_build_object('refused', jsonb_build_object('code', refusal_code, 'message', refusal_message));
    END;
  END LOOP;
END $$;

/** One worker's batch: its events applied in order (audit_record_events_of). */
CREATE OR REPLACE FUNCTION audit_record_events(worker text, events jsonb) RETURNS SETOF jsonb LANGUAGE sql AS $$
  SELECT audit_record_events_of(array_fill(worker, ARRAY[jsonb_array_length(events)]), events)
$$;
