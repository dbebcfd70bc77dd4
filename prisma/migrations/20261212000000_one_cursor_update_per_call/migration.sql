-- A call of audit_record_events_of updates each thread's row at most twice (its first change in
-- the call and the call's end) instead of once per change: while any old snapshot was open (a
-- pg_dump, a long report), none of a call's versions of the thread row could be pruned, and every
-- later change walked a longer chain (5 batches of 500 events into one thread: 2.8 s, then up to
-- 15.4 s each; bench/cursor-chains.ts). The first change takes the row's lock by its update as
-- before, at the same point; later ones count on in `audit.call_cursors`, a transaction-local
-- setting: a refused event's sub-block rolls it back with everything else the event did, so its
-- values are given back as before. (Only locking the row at the first change would leave one
-- version, but the call's own update of a row its sub-block locked makes a MultiXact each call.)
-- Cursors stay contiguous and in commit order; a call of a single event runs as before.
-- Functions only: instant.

/**
 * The thread's next change cursor, under the thread row's lock (held to commit: cursor order is
 * commit order). Inside a call of audit_record_events_of, whose `audit.call_cursors` holds each
 * thread's [written, last] value, only the thread's first change of the call updates the row;
 * later ones count on, and the call writes the last value at its end.
 */
CREATE OR REPLACE FUNCTION audit_next_change(thread uuid, OUT cursor bigint, OUT at timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  counted jsonb := nullif(current_setting('audit.call_cursors', true), '')::jsonb;
BEGIN
  IF counted ? thread::text THEN
    cursor := (counted -> thread::text ->> 1)::bigint + 1;
    at := clock_timestamp();
    PERFORM set_config('audit.call_cursors', jsonb_set(counted, ARRAY[thread::text, '1'], to_jsonb(cursor))::text, true);
    RETURN;
  END IF;
  UPDATE thread t SET change_cursor = t.change_cursor + 1 WHERE t.id = audit_next_change.thread
    RETURNING t.change_cursor, clock_timestamp() INTO cursor, at;
  IF counted IS NOT NULL AND cursor IS NOT NULL THEN
    PERFORM set_config('audit.call_cursors', (counted || jsonb_build_object(thread::text, jsonb_build_array(cursor, cursor)))::text, true);
  END IF;
END $$;

/**
 * Events applied in order, event i as worker workers[i], one result each: `{"ok": …}`, or
 * `{"refused": {code, message[, runStatus]}}` for an event a rule refused, which wrote nothing and
 * stops nothing. Any other error (a deadlock, an outage) fails the whole call. The runs of the
 * events are locked first, in id order, then their threads, in id order: the write path's lock
 * order, kept across the call. A thread's cursor is written at its first change and at the end.
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
  counting boolean := jsonb_array_length(events) > 1; -- a single event's call goes as before
BEGIN
  IF cardinality(workers) <> jsonb_array_length(events) THEN
    RAISE EXCEPTION 'audit_record_events_of: % workers for % events', cardinality(workers), jsonb_array_length(events);
  END IF;
  IF cardinality(run_ids) > 1 THEN -- one run's event locks its run, then its thread, by itself
    PERFORM 1 FROM run WHERE id = ANY (run_ids) ORDER BY id FOR UPDATE;
    PERFORM 1 FROM thread WHERE id = ANY (ARRAY(SELECT r.thread_id FROM run r WHERE r.id = ANY (run_ids))) ORDER BY id FOR NO KEY UPDATE;
  END IF;
  IF counting THEN
    PERFORM set_config('audit.call_cursors', '{}', true);
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
  IF counting THEN
    UPDATE thread t SET change_cursor = (c.value ->> 1)::bigint
      FROM jsonb_each(current_setting('audit.call_cursors')::jsonb) c WHERE t.id = c.key::uuid AND c.value ->> 1 <> c.value ->> 0;
    PERFORM set_config('audit.call_cursors', '', true);
  END IF;
END $$;
