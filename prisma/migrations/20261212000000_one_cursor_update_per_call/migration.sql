-- A call of audit_record_events_of writes each thread's change cursor once, at its end, instead of
-- once per change: while any old snapshot was open (a pg_dump, a long report), none of a call's
-- versions of the thread row could be pruned and every next change walked a longer chain (5
-- batches of 500 events into one thread: 2.8 s, then up to 15.4 s each; bench/cursor-chains.ts).
-- The first change of a thread in a call locks its row (the same lock, at the same point, as the
-- UPDATE before), later ones count on in `audit.call_cursors`, a transaction-local setting: a
-- refused event's sub-block rolls it back with everything else the event did, so its values are
-- given back as before. Cursors stay contiguous and in commit order. Functions only: instant.

/**
 * The thread's next change cursor, under the thread row's lock (held to commit: cursor order is
 * commit order). Inside a call of audit_record_events_of (`audit.call_cursors` holds the thread's
 * last value, by thread id) the row is only locked, at the thread's first change, and the call
 * writes the last value at its end; anywhere else it is bumped at once.
 */
CREATE OR REPLACE FUNCTION audit_next_change(thread uuid, OUT cursor bigint, OUT at timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  counted jsonb := nullif(current_setting('audit.call_cursors', true), '')::jsonb;
BEGIN
  IF counted IS NULL THEN
    UPDATE thread t SET change_cursor = t.change_cursor + 1 WHERE t.id = audit_next_change.thread
      RETURNING t.change_cursor, clock_timestamp() INTO cursor, at;
    RETURN;
  END IF;
  cursor := (counted ->> thread::text)::bigint;
  IF cursor IS NULL THEN
    SELECT t.change_cursor INTO cursor FROM thread t WHERE t.id = audit_next_change.thread FOR NO KEY UPDATE;
    IF NOT FOUND THEN RETURN; END IF;
  END IF;
  cursor := cursor + 1;
  at := clock_timestamp();
  PERFORM set_config('audit.call_cursors', jsonb_set(counted, ARRAY[thread::text], to_jsonb(cursor))::text, true);
END $$;

/**
 * Events applied in order, event i as worker workers[i], one result each: `{"ok": …}`, or
 * `{"refused": {code, message[, runStatus]}}` for an event a rule refused, which wrote nothing and
 * stops nothing. Any other error (a deadlock, an outage) fails the whole call. The runs of the
 * events are locked first, in id order, then their threads, in id order: the write path's lock
 * order, kept across the call. Each changed thread's cursor is written once, at the end.
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
  PERFORM set_config('audit.call_cursors', '{}', true);
  FOR event, position IN SELECT e.value, e.ordinality FROM jsonb_array_elements(events) WITH ORDINALITY e LOOP
    BEGIN
      RETURN NEXT jsonb_build_object('ok', audit_apply_event(workers[position], event));
    EXCEPTION WHEN SQLSTATE 'RF001' THEN
      GET STACKED DIAGNOSTICS refusal_code = PG_EXCEPTION_DETAIL, refusal_message = MESSAGE_TEXT, refusal_run_status = PG_EXCEPTION_HINT;
      RETURN NEXT jsonb_build_object('refused', jsonb_strip_nulls(jsonb_build_object('code', refusal_code, 'message', refusal_message,
        'runStatus', NULLIF(refusal_run_status, ''))));
    END;
  END LOOP;
  UPDATE thread t SET change_cursor = c.value::bigint
    FROM jsonb_each_text(current_setting('audit.call_cursors')::jsonb) c WHERE t.id = c.key::uuid;
  PERFORM set_config('audit.call_cursors', '', true);
END $$;
